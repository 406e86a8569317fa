import type { DialectMigration } from "./helpers.ts";

/**
 * The export counts the issues on each entity of a page (`issue_count`): a lookup of the findings of a
 * batch of entities as of a run. Without this index it read every finding of the collection per page.
 */
export const findingsByEntity: DialectMigration = {
  async up(db) {
    await db.schema
      .createIndex("findings_by_entity")
      .on("findings")
      .columns(["collection_id", "entity_name", "entity_kind", "version_run_id", "last_run_id"])
      .execute();
  },
};
