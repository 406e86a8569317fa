import type { DialectMigration } from "./helpers.ts";

/**
 * What a run's task bookkeeping leaves once the run has ended: per worker, how many of the run's tasks it
 * completed and how many attempts those took (a task started again after its worker stopped counts each
 * start). The `run_tasks` rows themselves (a /16 has about 330,000, with their payloads) are deleted
 * when the run ends, a batch at a time, each batch adding what it deleted to these rows.
 */
export const runWorkers: DialectMigration = {
  async up(db) {
    await db.schema
      .createTable("run_workers")
      .addColumn("run_id", "integer", (c) => c.notNull().references("runs.id").onDelete("cascade"))
      .addColumn("worker", "text", (c) => c.notNull())
      .addColumn("tasks", "integer", (c) => c.notNull())
      .addColumn("attempts", "integer", (c) => c.notNull())
      .addPrimaryKeyConstraint("run_workers_key", ["run_id", "worker"])
      .execute();
  },
};
