import type { DialectMigration } from "./helpers.ts";

/**
 * The final merge reads a run's staged rows in (kind, name, id) order, a page at a time, so that each
 * entity's sightings are adjacent and memory is bounded by a page. SQLite's (run_id, kind, name) index
 * already ends in the rowid; PostgreSQL's does not, and would sort the run's rows for every page.
 */
export const stagedMergeOrder: DialectMigration = {
  async up(db, dialect) {
    if (dialect !== "postgres") return;
    await db.schema
      .createIndex("staged_entities_run_kind_name_id")
      .on("staged_entities")
      .columns(["run_id", "kind", "name", "id"])
      .execute();
  },
};
