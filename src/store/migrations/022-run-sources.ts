import type { DialectMigration } from "./helpers.ts";

/**
 * How each passive source fared in a run, per entity it was asked about (a seed domain, an address):
 * the status as JSON text, written once per ask (a retried task writes its row again). The rows go with
 * their collection.
 */
export const runSources: DialectMigration = {
  async up(db) {
    await db.schema
      .createTable("run_sources")
      .ifNotExists()
      .addColumn("run_id", "integer", (c) => c.notNull())
      .addColumn("collection_id", "integer", (c) =>
        c.notNull().references("collections.id").onDelete("cascade"),
      )
      .addColumn("source", "text", (c) => c.notNull())
      .addColumn("target", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint("run_sources_key", ["run_id", "source", "target"])
      .execute();
    await db.schema
      .createIndex("run_sources_source")
      .ifNotExists()
      .on("run_sources")
      .columns(["source", "run_id"])
      .execute();
  },
};
