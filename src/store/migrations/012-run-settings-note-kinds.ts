import type { DialectMigration } from "./helpers.ts";

/**
 * The discovery settings a run uses (resolvers, scope lists, ports, wordlist, depth, limits, timeouts,
 * politeness), as JSON text fixed when the run is created, so every worker applies the same. Runs from
 * before this migration have none and use the settings of the process that works on them.
 *
 * And the kind of each run note (the discovery module that wrote it, or `plan` for the run's seeds), so
 * a run's notes are counted and shown by kind; notes from before have the kind `other`.
 */
export const runSettingsAndNoteKinds: DialectMigration = {
  async up(db) {
    await db.schema.alterTable("runs").addColumn("settings", "text").execute();
    await db.schema
      .alterTable("run_notes")
      .addColumn("kind", "text", (c) => c.notNull().defaultTo("other"))
      .execute();
    await db.schema
      .createIndex("run_notes_run_kind")
      .on("run_notes")
      .columns(["run_id", "kind", "id"])
      .execute();
  },
};
