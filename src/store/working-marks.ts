/**
 * A run's working tables (its tasks and staging) are unlogged on PostgreSQL (migration 020): a server
 * crash empties them. `run_working_marks` holds a row per started run and is emptied with them, so a
 * started run without its row has lost what its tasks did and staged: it is failed with this reason,
 * never finished on what is left.
 */
import type { Kysely, Selectable } from "kysely";
import type { Database, RunsTable } from "./schema.ts";

/** A run's working tables: its tasks, its staging, and its mark; each row keyed by `run_id`. */
export const WORKING_TABLES = [
  "run_tasks",
  "staged_entities",
  "staged_findings",
  "run_working_marks",
] as const;

export const WORKING_TABLES_LOST =
  "The database restarted without a clean shutdown during the run and lost the run's working tables (PostgreSQL empties its unlogged tables after a crash); the run was stopped and earlier results are kept. Run it again.";

/** Started runs without their mark (`runId`: that one only): their working tables were emptied under them. */
export function lostWorkingTables(db: Kysely<Database>, runId?: number): Promise<Selectable<RunsTable>[]> {
  return db
    .selectFrom("runs")
    .selectAll()
    .where("status", "=", "started")
    .$if(runId !== undefined, (query) => query.where("id", "=", runId!))
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom("run_working_marks")
            .select("run_id")
            .whereRef("run_working_marks.run_id", "=", "runs.id"),
        ),
      ),
    )
    .execute();
}

/** Whether the run is started and its working tables were emptied under it. */
export async function workingTablesLost(db: Kysely<Database>, runId: number): Promise<boolean> {
  return (await lostWorkingTables(db, runId)).length > 0;
}

/** The run has ended (in the transaction that ends it): it has no working tables left to lose. */
export async function unmark(db: Kysely<Database>, runId: number): Promise<void> {
  await db.deleteFrom("run_working_marks").where("run_id", "=", runId).execute();
}
