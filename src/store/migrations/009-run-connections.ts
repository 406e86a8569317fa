import { cascade, type DialectMigration } from "./helpers.ts";

/**
 * The third parties a run's surface depended on, decided when the run finished with that run's own
 * scope (its seeds then), one JSON list per run: `/connections?run_id=N` answers what run N saw, whatever
 * the seeds are today.
 */
export const runConnections: DialectMigration = {
  async up(db) {
    await db.schema
      .createTable("run_connections")
      .addColumn("run_id", "integer", (c) => c.primaryKey())
      .addColumn("collection_id", "integer", cascade("collections.id"))
      .addColumn("connections", "text", (c) => c.notNull())
      .addColumn("decided_at", "text", (c) => c.notNull())
      .execute();
  },
};
