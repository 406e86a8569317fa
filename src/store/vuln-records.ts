/**
 * From feed records to rows: an NVD CVE 2.0 item (`{"cve": {...}}`) to a CVE row and its vulnerable
 * CPE match criteria; a CISA KEV item to a KEV row. Each row carries the hash of its content, so an
 * import can tell an unchanged record from a changed one without comparing field by field.
 */
import { createHash } from "node:crypto";
import { parseCpe } from "../core/cpe.ts";
import type { VulnCpeMatchesTable, VulnCvesTable, VulnKevTable } from "./schema.ts";

export type CpeMatchRow = Omit<VulnCpeMatchesTable, "id" | "cve_id">;
export interface CveRecord {
  cve: VulnCvesTable;
  matches: CpeMatchRow[];
}

const CVE_ID = /^CVE-\d{4}-\d{4,}$/;

// biome-ignore lint/suspicious/noExplicitAny: feed records are untyped JSON, read defensively
type Json = any;

const hashOf = (value: unknown) => createHash("sha256").update(JSON.stringify(value)).digest("hex");
const text = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);
const list = (value: unknown): Json[] => (Array.isArray(value) ? value : []);

/** NVD's own (Primary) metric first, otherwise the first one given. */
function primaryMetric(metrics: Json[]): Json | undefined {
  return metrics.find((metric) => metric?.type === "Primary") ?? metrics[0];
}

function cweList(weaknesses: Json[]): string {
  const ordered = [...weaknesses].sort(
    (a, b) => Number(b?.type === "Primary") - Number(a?.type === "Primary"),
  );
  const cwes = new Set<string>();
  for (const weakness of ordered) {
    for (const entry of list(weakness?.description)) {
      if (typeof entry?.value === "string" && /^CWE-\d+$/.test(entry.value)) cwes.add(entry.value);
    }
  }
  return [...cwes].join(",");
}

function cpeMatches(configurations: Json[]): CpeMatchRow[] {
  const rows = new Map<string, CpeMatchRow>();
  const visit = (node: Json) => {
    for (const match of list(node?.cpeMatch)) {
      if (match?.vulnerable !== true || typeof match.criteria !== "string") continue;
      const cpe = parseCpe(match.criteria);
      if (!cpe) continue;
      const row: CpeMatchRow = {
        criteria: match.criteria,
        part: cpe.part,
        vendor: cpe.vendor,
        product: cpe.product,
        version: cpe.version,
        version_update: cpe.update,
        version_start_including: text(match.versionStartIncluding),
        version_start_excluding: text(match.versionStartExcluding),
        version_end_including: text(match.versionEndIncluding),
        version_end_excluding: text(match.versionEndExcluding),
      };
      rows.set(JSON.stringify(row), row);
    }
    for (const child of list(node?.children)) visit(child);
  };
  for (const configuration of configurations) for (const node of list(configuration?.nodes)) visit(node);
  return [...rows.values()];
}

export type NvdItem =
  | { kind: "cve"; record: CveRecord }
  | { kind: "rejected"; cveId: string }
  | { kind: "invalid"; reason: string };

export function nvdItem(item: Json): NvdItem {
  const cve = item?.cve;
  if (!cve || typeof cve.id !== "string" || !CVE_ID.test(cve.id))
    return { kind: "invalid", reason: "an item without a CVE id" };
  if (cve.vulnStatus === "Rejected") return { kind: "rejected", cveId: cve.id };
  const description = list(cve.descriptions).find((entry) => entry?.lang === "en")?.value;
  const v3 = primaryMetric(list(cve.metrics?.cvssMetricV31).concat(list(cve.metrics?.cvssMetricV30)));
  const v2 = primaryMetric(list(cve.metrics?.cvssMetricV2));
  const urls = [
    ...new Set(
      list(cve.references)
        .map((reference) => reference?.url)
        .filter(text),
    ),
  ];
  const row: Omit<VulnCvesTable, "record_hash"> = {
    cve_id: cve.id,
    description: typeof description === "string" ? description : "",
    cwe: cweList(list(cve.weaknesses)),
    cvss_v3_score: typeof v3?.cvssData?.baseScore === "number" ? v3.cvssData.baseScore : null,
    cvss_v3_vector: text(v3?.cvssData?.vectorString),
    cvss_v2_score: typeof v2?.cvssData?.baseScore === "number" ? v2.cvssData.baseScore : null,
    cvss_v2_vector: text(v2?.cvssData?.vectorString),
    published: text(cve.published),
    last_modified: text(cve.lastModified),
    cisa_exploit_add: text(cve.cisaExploitAdd),
    cisa_action_due: text(cve.cisaActionDue),
    cisa_required_action: text(cve.cisaRequiredAction),
    cisa_vulnerability_name: text(cve.cisaVulnerabilityName),
    reference_urls: JSON.stringify(urls),
  };
  const matches = cpeMatches(list(cve.configurations));
  return { kind: "cve", record: { cve: { ...row, record_hash: hashOf({ row, matches }) }, matches } };
}

export function kevItem(item: Json): VulnKevTable | undefined {
  if (typeof item?.cveID !== "string" || !CVE_ID.test(item.cveID)) return undefined;
  const row: Omit<VulnKevTable, "record_hash"> = {
    cve_id: item.cveID,
    vendor_project: text(item.vendorProject),
    product: text(item.product),
    vulnerability_name: text(item.vulnerabilityName),
    date_added: text(item.dateAdded),
    short_description: text(item.shortDescription),
    required_action: text(item.requiredAction),
    due_date: text(item.dueDate),
    known_ransomware_campaign_use: text(item.knownRansomwareCampaignUse),
    notes: text(item.notes),
    cwes: JSON.stringify(list(item.cwes).filter(text)),
  };
  return { ...row, record_hash: hashOf(row) };
}
