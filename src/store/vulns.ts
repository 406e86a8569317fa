/**
 * The vulnerability database in the store: writing imported batches (only what changed), and reading
 * CVEs back by CPE. Works on a Kysely database or on a transaction already open (a migration).
 */
import type { Kysely } from "kysely";
import { setBounded } from "../core/bounded-map.ts";
import { type Cpe, isConcrete, parseCpe, vendorProductAliases } from "../core/cpe.ts";
import { nowIso } from "../core/formats.ts";
import { compareVersions } from "../core/versions.ts";
import type { Database, VulnCvesTable, VulnKevTable } from "./schema.ts";
import type { CpeMatchRow, CveRecord } from "./vuln-records.ts";

export interface ImportCounts {
  added: number;
  updated: number;
  unchanged: number;
  skipped: number;
}

export const emptyCounts = (): ImportCounts => ({ added: 0, updated: 0, unchanged: 0, skipped: 0 });

/** A CVE that a product's CPE falls under, with what the results and issues need to show. */
export interface MatchedCve {
  cve: string;
  description: string;
  cwe: string;
  cvss_v3_score: number | null;
  cvss_v2_score: number | null;
  published: string | null;
  references: string[];
  /** The criterion that matched, for the proof. */
  criteria: string;
  kev: KevSummary | null;
}

export interface KevSummary {
  date_added: string | null;
  due_date: string | null;
  vulnerability_name: string | null;
  required_action: string | null;
  known_ransomware_campaign_use: string | null;
}

// Both dialects accept a few thousand bound parameters per statement; rows are written in chunks.
const CHUNK = 200;

function chunks<T>(rows: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

async function inTransaction<T>(db: Kysely<Database>, work: (trx: Kysely<Database>) => Promise<T>) {
  return db.isTransaction ? work(db) : db.transaction().execute(work);
}

/** The stored content hash of each of the ids that the table already has. */
async function knownHashes(db: Kysely<Database>, table: "vuln_cves" | "vuln_kev", ids: string[]) {
  const known = new Map<string, string>();
  for (const part of chunks(ids, 500)) {
    const rows = await db
      .selectFrom(table)
      .select(["cve_id", "record_hash"])
      .where("cve_id", "in", part)
      .execute();
    for (const row of rows) known.set(row.cve_id, row.record_hash);
  }
  return known;
}

/** Is the version of `product` within what `criterion` describes? Both are unescaped, lower-case. */
export function criterionMatches(criterion: CpeMatchRow, product: Cpe): boolean {
  if (!sameSoftware(criterion, product)) return false;
  if (criterion.part !== "*" && product.part !== "*" && criterion.part !== product.part) return false;
  if (!isConcrete(product.version)) return false;
  // OpenSSH-style versions come either split (8.5 + update p1) or whole (8.5p1); compare them whole.
  const whole = isConcrete(product.update) ? `${product.version}${product.update}` : product.version;
  const same = (version: string) =>
    compareVersions(version, whole) === 0 || compareVersions(version, product.version) === 0;
  if (isConcrete(criterion.version)) {
    if (criterion.version_update === "-")
      return !isConcrete(product.update) && compareVersions(criterion.version, whole) === 0;
    if (isConcrete(criterion.version_update))
      return compareVersions(`${criterion.version}${criterion.version_update}`, whole) === 0;
    return same(criterion.version);
  }
  if (criterion.version === "-") return false;
  const { version_start_including: si, version_start_excluding: se } = criterion;
  const { version_end_including: ei, version_end_excluding: ee } = criterion;
  if (si && compareVersions(whole, si) < 0) return false;
  if (se && compareVersions(whole, se) <= 0) return false;
  if (ei && compareVersions(whole, ei) > 0) return false;
  if (ee && compareVersions(whole, ee) >= 0) return false;
  return true;
}

function sameSoftware(criterion: CpeMatchRow, product: Cpe): boolean {
  return vendorProductAliases(product.vendor, product.product).some(
    ([vendor, name]) => vendor === criterion.vendor && name === criterion.product,
  );
}

/** CPEs whose matches are remembered, and for how long (an import by another process shows after it). */
const MATCHES_KEPT = 2000;
const MATCHES_FRESH_MS = 5000;

type KeptMatches = Map<string, { at: number; matched: Promise<MatchedCve[]> }>;

/**
 * Recent answers of matchCpe per database, shared by its repositories (an import through any of them
 * forgets them): a scan meets the same few products on thousands of services (a /22 of the scale
 * benchmark sent 736 look-ups for nginx and OpenSSH), each two or three statements.
 */
const keptMatches = new WeakMap<Kysely<Database>, KeptMatches>();

export class VulnerabilityRepository {
  readonly db: Kysely<Database>;
  readonly #matches: KeptMatches;

  constructor(db: Kysely<Database>) {
    this.db = db;
    this.#matches = keptMatches.get(db) ?? new Map();
    keptMatches.set(db, this.#matches);
  }

  async isEmpty(): Promise<boolean> {
    const row = await this.db.selectFrom("vuln_cves").select("cve_id").limit(1).executeTakeFirst();
    return !row;
  }

  /** Writes a batch of CVEs: new ones inserted, changed ones replaced, unchanged ones left alone. */
  async applyCves(records: CveRecord[], rejected: string[] = []): Promise<ImportCounts> {
    this.#matches.clear();
    const counts = emptyCounts();
    const byId = new Map(records.map((record) => [record.cve.cve_id, record]));
    return inTransaction(this.db, async (trx) => {
      if (rejected.length > 0) {
        await trx.deleteFrom("vuln_cves").where("cve_id", "in", rejected).execute();
        counts.skipped += rejected.length;
      }
      if (byId.size === 0) return counts;
      const known = await knownHashes(trx, "vuln_cves", [...byId.keys()]);
      const fresh: CveRecord[] = [];
      const changed: CveRecord[] = [];
      for (const record of byId.values()) {
        const hash = known.get(record.cve.cve_id);
        if (hash === undefined) fresh.push(record);
        else if (hash !== record.cve.record_hash) changed.push(record);
        else counts.unchanged++;
      }
      for (const part of chunks(fresh)) {
        await trx
          .insertInto("vuln_cves")
          .values(part.map((record) => record.cve))
          .execute();
      }
      for (const record of changed) {
        const { cve_id, ...rest } = record.cve;
        await trx.updateTable("vuln_cves").set(rest).where("cve_id", "=", cve_id).execute();
      }
      if (changed.length > 0) {
        for (const ids of chunks(
          changed.map((record) => record.cve.cve_id),
          500,
        ))
          await trx.deleteFrom("vuln_cpe_matches").where("cve_id", "in", ids).execute();
      }
      const matches = [...fresh, ...changed].flatMap((record) =>
        record.matches.map((match) => ({ ...match, cve_id: record.cve.cve_id })),
      );
      for (const part of chunks(matches)) await trx.insertInto("vuln_cpe_matches").values(part).execute();
      counts.added += fresh.length;
      counts.updated += changed.length;
      return counts;
    });
  }

  /** Writes a batch of KEV entries, the same way. */
  async applyKev(entries: VulnKevTable[]): Promise<ImportCounts> {
    this.#matches.clear();
    const counts = emptyCounts();
    const byId = new Map(entries.map((entry) => [entry.cve_id, entry]));
    if (byId.size === 0) return counts;
    return inTransaction(this.db, async (trx) => {
      const known = await knownHashes(trx, "vuln_kev", [...byId.keys()]);
      const fresh: VulnKevTable[] = [];
      for (const entry of byId.values()) {
        const hash = known.get(entry.cve_id);
        if (hash === undefined) fresh.push(entry);
        else if (hash !== entry.record_hash) {
          const { cve_id, ...rest } = entry;
          await trx.updateTable("vuln_kev").set(rest).where("cve_id", "=", cve_id).execute();
          counts.updated++;
        } else counts.unchanged++;
      }
      for (const part of chunks(fresh)) await trx.insertInto("vuln_kev").values(part).execute();
      counts.added += fresh.length;
      return counts;
    });
  }

  async recordImport(source: string, counts: ImportCounts): Promise<void> {
    await this.db
      .insertInto("vuln_imports")
      .values({
        source,
        added: counts.added,
        updated: counts.updated,
        unchanged: counts.unchanged,
        skipped: counts.skipped,
        imported_at: nowIso(),
      })
      .execute();
  }

  /**
   * The CVEs whose vulnerable criteria cover this product CPE (which must carry a version); an answer
   * is reused for MATCHES_FRESH_MS, or until a repository of the same database imports.
   */
  matchCpe(cpeText: string): Promise<MatchedCve[]> {
    const now = Date.now();
    const kept = this.#matches.get(cpeText);
    if (kept && now - kept.at < MATCHES_FRESH_MS) return kept.matched;
    const matched = this.#matchCpe(cpeText);
    setBounded(this.#matches, cpeText, { at: now, matched }, MATCHES_KEPT);
    matched.catch(() => this.#matches.delete(cpeText));
    return matched;
  }

  async #matchCpe(cpeText: string): Promise<MatchedCve[]> {
    const product = parseCpe(cpeText);
    if (!product || !isConcrete(product.version)) return [];
    const names = vendorProductAliases(product.vendor, product.product);
    const criteria = await this.db
      .selectFrom("vuln_cpe_matches")
      .selectAll()
      .where((eb) => eb.or(names.map(([vendor, name]) => eb.and({ vendor, product: name }))))
      .execute();
    const hits = new Map<string, string>();
    for (const criterion of criteria) {
      if (!hits.has(criterion.cve_id) && criterionMatches(criterion, product))
        hits.set(criterion.cve_id, criterion.criteria);
    }
    return this.describe(hits);
  }

  /** CVE details (and KEV entries) for the given ids, e.g. for the vulnerabilities result. */
  async cvesById(ids: string[]): Promise<Map<string, MatchedCve>> {
    const found = await this.describe(new Map(ids.map((id) => [id, ""])));
    return new Map(found.map((cve) => [cve.cve, cve]));
  }

  /** CVE details (and KEV entries) for the given ids, keyed to the criterion that matched. */
  private async describe(hits: Map<string, string>): Promise<MatchedCve[]> {
    if (hits.size === 0) return [];
    const ids = [...hits.keys()];
    const cves: VulnCvesTable[] = [];
    const kev = new Map<string, VulnKevTable>();
    for (const part of chunks(ids, 500)) {
      cves.push(...(await this.db.selectFrom("vuln_cves").selectAll().where("cve_id", "in", part).execute()));
      for (const row of await this.db
        .selectFrom("vuln_kev")
        .selectAll()
        .where("cve_id", "in", part)
        .execute())
        kev.set(row.cve_id, row);
    }
    return cves
      .map((row) => ({
        cve: row.cve_id,
        description: row.description,
        cwe: row.cwe,
        cvss_v3_score: row.cvss_v3_score === null ? null : Number(row.cvss_v3_score),
        cvss_v2_score: row.cvss_v2_score === null ? null : Number(row.cvss_v2_score),
        published: row.published,
        references: JSON.parse(row.reference_urls) as string[],
        criteria: hits.get(row.cve_id) ?? "",
        kev: kevSummary(row, kev.get(row.cve_id)),
      }))
      .sort((a, b) => (b.cvss_v3_score ?? b.cvss_v2_score ?? 0) - (a.cvss_v3_score ?? a.cvss_v2_score ?? 0));
  }

  async counts(): Promise<{ cves: number; criteria: number; kev: number }> {
    const count = async (table: "vuln_cves" | "vuln_cpe_matches" | "vuln_kev") => {
      const row = await this.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number | string>().as("n"))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    };
    return {
      cves: await count("vuln_cves"),
      criteria: await count("vuln_cpe_matches"),
      kev: await count("vuln_kev"),
    };
  }

  async recentImports(limit = 10) {
    return this.db.selectFrom("vuln_imports").selectAll().orderBy("id", "desc").limit(limit).execute();
  }
}

/** The KEV entry when the catalog was imported; otherwise what NVD's record says about KEV. */
function kevSummary(cve: VulnCvesTable, entry: VulnKevTable | undefined): KevSummary | null {
  if (entry) {
    return {
      date_added: entry.date_added,
      due_date: entry.due_date,
      vulnerability_name: entry.vulnerability_name,
      required_action: entry.required_action,
      known_ransomware_campaign_use: entry.known_ransomware_campaign_use,
    };
  }
  if (!cve.cisa_exploit_add) return null;
  return {
    date_added: cve.cisa_exploit_add,
    due_date: cve.cisa_action_due,
    vulnerability_name: cve.cisa_vulnerability_name,
    required_action: cve.cisa_required_action,
    known_ransomware_campaign_use: null,
  };
}
