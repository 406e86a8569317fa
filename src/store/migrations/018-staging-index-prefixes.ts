import type { DialectMigration } from "./helpers.ts";

/**
 * Drops the staging indexes that are a prefix of another on the same table: every staged row paid for
 * their upkeep and no query needs them (a run's rows by `run_id` alone are a prefix range of the wider
 * index just as well). staged_findings keeps (run_id, name, entity_kind, entity_name[, id]) from 016;
 * staged_entities keeps (run_id, kind, name) on SQLite, where it ends in the rowid, and (run_id, kind,
 * name, id) on PostgreSQL (011).
 */
export const stagingIndexPrefixes: DialectMigration = {
  async up(db, dialect) {
    await db.schema.dropIndex("staged_entities_run").ifExists().execute();
    await db.schema.dropIndex("staged_findings_run").ifExists().execute();
    if (dialect === "postgres")
      await db.schema.dropIndex("staged_entities_run_kind_name").ifExists().execute();
  },
};
