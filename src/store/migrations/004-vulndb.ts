import type { Dialect } from "../database.ts";
import type { DialectMigration, MigrationDb } from "./helpers.ts";
import { withId } from "./helpers.ts";

/** Scores are doubles: PostgreSQL's `real` would turn 9.8 into 9.800000190734863. */
const score = (dialect: Dialect) => (dialect === "postgres" ? "double precision" : "real");

/**
 * The vulnerability database: CVEs, their CPE match criteria and CISA KEV entries, plus a log of
 * imports. A CVE row keeps the hash of what was imported so that re-importing a feed rewrites only
 * what changed. The tables start with the seed shipped in vulndb/seed.json, loaded by migrateToLatest
 * right after this migration (a migration never runs live code).
 */
export const vulnerabilityDatabase: DialectMigration = {
  async up(db: MigrationDb, dialect) {
    await db.schema
      .createTable("vuln_cves")
      .addColumn("cve_id", "text", (c) => c.primaryKey())
      .addColumn("description", "text", (c) => c.notNull())
      .addColumn("cwe", "text", (c) => c.notNull())
      .addColumn("cvss_v3_score", score(dialect))
      .addColumn("cvss_v3_vector", "text")
      .addColumn("cvss_v2_score", score(dialect))
      .addColumn("cvss_v2_vector", "text")
      .addColumn("published", "text")
      .addColumn("last_modified", "text")
      .addColumn("cisa_exploit_add", "text")
      .addColumn("cisa_action_due", "text")
      .addColumn("cisa_required_action", "text")
      .addColumn("cisa_vulnerability_name", "text")
      .addColumn("reference_urls", "text", (c) => c.notNull())
      .addColumn("record_hash", "text", (c) => c.notNull())
      .execute();
    await withId(db.schema.createTable("vuln_cpe_matches"), dialect)
      .addColumn("cve_id", "text", (c) => c.notNull().references("vuln_cves.cve_id").onDelete("cascade"))
      .addColumn("criteria", "text", (c) => c.notNull())
      .addColumn("part", "text", (c) => c.notNull())
      .addColumn("vendor", "text", (c) => c.notNull())
      .addColumn("product", "text", (c) => c.notNull())
      .addColumn("version", "text", (c) => c.notNull())
      .addColumn("version_update", "text", (c) => c.notNull())
      .addColumn("version_start_including", "text")
      .addColumn("version_start_excluding", "text")
      .addColumn("version_end_including", "text")
      .addColumn("version_end_excluding", "text")
      .execute();
    await db.schema
      .createIndex("vuln_cpe_matches_product")
      .on("vuln_cpe_matches")
      .columns(["vendor", "product"])
      .execute();
    await db.schema.createIndex("vuln_cpe_matches_cve").on("vuln_cpe_matches").column("cve_id").execute();
    await db.schema
      .createTable("vuln_kev")
      .addColumn("cve_id", "text", (c) => c.primaryKey())
      .addColumn("vendor_project", "text")
      .addColumn("product", "text")
      .addColumn("vulnerability_name", "text")
      .addColumn("date_added", "text")
      .addColumn("short_description", "text")
      .addColumn("required_action", "text")
      .addColumn("due_date", "text")
      .addColumn("known_ransomware_campaign_use", "text")
      .addColumn("notes", "text")
      .addColumn("cwes", "text", (c) => c.notNull())
      .addColumn("record_hash", "text", (c) => c.notNull())
      .execute();
    await withId(db.schema.createTable("vuln_imports"), dialect)
      .addColumn("source", "text", (c) => c.notNull())
      .addColumn("added", "integer", (c) => c.notNull())
      .addColumn("updated", "integer", (c) => c.notNull())
      .addColumn("unchanged", "integer", (c) => c.notNull())
      .addColumn("skipped", "integer", (c) => c.notNull())
      .addColumn("imported_at", "text", (c) => c.notNull())
      .execute();
  },
};
