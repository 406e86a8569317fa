import type { DialectMigration } from "./helpers.ts";

/**
 * The final merge reads a run's staged findings in (name, entity_kind, entity_name, id) order, a page at a
 * time, so that each finding's sightings are adjacent and memory is bounded by a page (it held every
 * finding of the run: 1.3 GB of a /16's merge). SQLite's index ends in the rowid by itself.
 */
export const stagedFindingsOrder: DialectMigration = {
  async up(db, dialect) {
    await db.schema
      .createIndex("staged_findings_run_key")
      .on("staged_findings")
      .columns(
        dialect === "postgres"
          ? ["run_id", "name", "entity_kind", "entity_name", "id"]
          : ["run_id", "name", "entity_kind", "entity_name"],
      )
      .execute();
  },
};
