import type { DialectMigration } from "./helpers.ts";

/**
 * Tasks look up what their run has staged about particular entities (the names resolving to an address,
 * the services of an address, to pair them for virtual-host probing); without this index each lookup
 * reads every staged row of the run.
 */
export const stagedLookup: DialectMigration = {
  async up(db) {
    await db.schema
      .createIndex("staged_entities_run_kind_name")
      .on("staged_entities")
      .columns(["run_id", "kind", "name"])
      .execute();
  },
};
