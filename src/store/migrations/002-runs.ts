import { sql } from "kysely";
import { cascade, type DialectMigration, withId } from "./helpers.ts";

/**
 * Runs, their tasks and the scheduler's bookkeeping. Two constraints carry the guarantees of the run
 * machinery: at most one queued-or-started run per collection (a partial unique index), and a task key
 * at most once per run (so the same work is never done twice in a run).
 */
export const runs: DialectMigration = {
  async up(db, dialect) {
    await withId(db.schema.createTable("runs"), dialect)
      .addColumn("collection_id", "integer", cascade("collections.id"))
      .addColumn("trigger", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("priority", "integer", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("started_at", "text")
      .addColumn("finished_at", "text")
      .addColumn("deadline_at", "text")
      .addColumn("finishing_at", "text")
      .addColumn("updated_at", "text", (c) => c.notNull())
      .addColumn("error", "text")
      .addColumn("tasks_total", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("tasks_done", "integer", (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.createIndex("runs_collection").on("runs").columns(["collection_id", "id"]).execute();
    await db.schema.createIndex("runs_status").on("runs").column("status").execute();
    await db.schema
      .createIndex("runs_one_active")
      .on("runs")
      .column("collection_id")
      .unique()
      .where(sql<boolean>`status in ('queued', 'started')`)
      .execute();

    await withId(db.schema.createTable("run_tasks"), dialect)
      .addColumn("run_id", "integer", cascade("runs.id"))
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("kind", "text", (c) => c.notNull())
      .addColumn("payload", "text", (c) => c.notNull())
      .addColumn("depth", "integer", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("worker", "text")
      .addColumn("error", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("finished_at", "text")
      .addUniqueConstraint("run_tasks_run_key", ["run_id", "key"])
      .execute();
    await db.schema
      .createIndex("run_tasks_run_status")
      .on("run_tasks")
      .columns(["run_id", "status"])
      .execute();

    await db.schema
      .createTable("run_schedules")
      .addColumn("collection_id", "integer", (c) =>
        c.primaryKey().references("collections.id").onDelete("cascade"),
      )
      .addColumn("last_fired_at", "text")
      .execute();
  },
};
