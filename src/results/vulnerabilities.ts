/**
 * The vulnerabilities result: each CVE inferred from a product version, with NVD's scores and CWE,
 * the CISA KEV entry as its known exploitation, and the applications and services it affects.
 */
import { type Static, Type } from "typebox";
import { carriesProducts, fingerprintsOf, type ResultEntity } from "../core/facts.ts";
import { OrNull } from "../core/or-null.ts";
import type { MatchedCve } from "../store/vulns.ts";

export const Exploit = Type.Object({
  source: Type.Literal("CISA KEV"),
  date_added: OrNull(Type.String()),
  due_date: OrNull(Type.String()),
  vulnerability_name: OrNull(Type.String()),
  required_action: OrNull(Type.String()),
  known_ransomware_campaign_use: OrNull(Type.String()),
});

export const VulnerabilityItem = Type.Object({
  name: Type.String({
    description: "CISA's name for the vulnerability when listed, else the CVE and product.",
  }),
  cve: Type.String(),
  shortname: Type.String({ description: 'Lower-case identifier, e.g. "cve_2021_41773".' }),
  description: Type.String(),
  exploits: Type.Array(Exploit, { description: "Known exploitation: the CISA KEV entry, when listed." }),
  cwe: Type.String({ description: "CWE identifiers, comma-separated, NVD's primary first." }),
  score: Type.Number({ description: "CVSS v3 base score, or v2 when NVD has no v3." }),
  cvss_v2_score: Type.Number({ description: "CVSS v2 base score; 0 when NVD gives none (recent CVEs)." }),
  cvss_v3_score: OrNull(Type.Number()),
  count: Type.Integer({ description: "How many applications and services are affected." }),
  affected: Type.Array(Type.String(), {
    description: "Addresses of the affected applications and services.",
  }),
});

export async function buildVulnerabilities(
  entities: Iterable<ResultEntity>,
  cves: { cvesById(ids: string[]): Promise<Map<string, MatchedCve>> },
) {
  const affected = new Map<string, { products: Set<string>; names: Set<string> }>();
  for (const entity of entities) {
    if (!carriesProducts(entity)) continue;
    for (const fingerprint of fingerprintsOf(entity)) {
      for (const vuln of fingerprint.vulns ?? []) {
        const entry = affected.get(vuln.cve) ?? { products: new Set(), names: new Set() };
        entry.products.add(fingerprint.product);
        entry.names.add(entity.name);
        affected.set(vuln.cve, entry);
      }
    }
  }
  const known = await cves.cvesById([...affected.keys()]);
  return [...affected]
    .flatMap(([id, entry]) => {
      const cve = known.get(id);
      // no longer in the database (e.g. rejected since the run)
      return cve ? [vulnerabilityItem(id, cve, [...entry.products], [...entry.names].sort())] : [];
    })
    .sort((a, b) => b.score - a.score || b.count - a.count || a.cve.localeCompare(b.cve));
}

/** One Vulnerability item: the CVE as the database knows it, the products carrying it, what it affects. */
export function vulnerabilityItem(
  id: string,
  cve: MatchedCve,
  products: string[],
  affected: string[],
): Static<typeof VulnerabilityItem> {
  return {
    name: cve.kev?.vulnerability_name ?? `${id} in ${products.join(", ")}`,
    cve: id,
    shortname: id.toLowerCase().replace(/-/g, "_"),
    description: cve.description,
    exploits: cve.kev ? [{ source: "CISA KEV" as const, ...cve.kev }] : [],
    cwe: cve.cwe,
    score: cve.cvss_v3_score ?? cve.cvss_v2_score ?? 0,
    cvss_v2_score: cve.cvss_v2_score ?? 0,
    cvss_v3_score: cve.cvss_v3_score,
    count: affected.length,
    affected,
  };
}
