/**
 * Repository of runs, their tasks and the scheduler's bookkeeping. Every state change is a conditional
 * update (compare-and-set on the current status), so several processes can act on the same run and
 * exactly one of them wins each transition.
 */
import type { Kysely, Selectable } from "kysely";
import { nowIso } from "../core/formats.ts";
import {
  type AccountStatus,
  type Database,
  RUN_STATUSES,
  type RunStatus,
  type RunsTable,
  type RunTrigger,
} from "../store/schema.ts";
import type { RunInfo, TaskRecord, TaskSpec } from "./work.ts";

export type RunRow = Selectable<RunsTable>;

/** The states a run leaves only by ending; the partial unique index allows one of them per collection. */
export const ACTIVE_STATUSES: readonly RunStatus[] = ["queued", "started"];

export interface ScheduleCandidate {
  collectionId: number;
  /** When the scheduler last fired it (the compare-and-set value of fireSchedule). */
  lastFiredAt: string | null;
  /** When its newest run that did not fail or get cancelled was made, forced or scheduled. */
  lastRunAt: string | null;
  accountStatus: AccountStatus;
  scanRate: string;
}

/** Rows per insert: keeps a large plan under both dialects' bound-parameter limits. */
const CHUNK = 500;

async function insertTasks(
  db: Kysely<Database>,
  runId: number,
  tasks: TaskSpec[],
  now: string,
): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < tasks.length; i += CHUNK) {
    const rows = await db
      .insertInto("run_tasks")
      .values(
        tasks.slice(i, i + CHUNK).map((task) => ({
          run_id: runId,
          key: task.key,
          kind: task.kind,
          payload: JSON.stringify(task.payload ?? null),
          depth: task.depth,
          status: "pending" as const,
          attempts: 0,
          created_at: now,
        })),
      )
      .onConflict((oc) => oc.columns(["run_id", "key"]).doNothing())
      .returning("id")
      .execute();
    ids.push(...rows.map((row) => row.id));
  }
  return ids;
}

const changed = (result: { numUpdatedRows: bigint }) => Number(result.numUpdatedRows) > 0;

export class RunsRepository {
  readonly db: Kysely<Database>;
  constructor(db: Kysely<Database>) {
    this.db = db;
  }

  // --- runs -------------------------------------------------------------------------------------------

  /** A new queued run, or undefined when the collection already has a queued or started one. */
  async create(
    collectionId: number,
    trigger: RunTrigger,
    priority: number,
    db: Kysely<Database> = this.db,
  ): Promise<RunRow | undefined> {
    const now = nowIso();
    return db
      .insertInto("runs")
      .values({
        collection_id: collectionId,
        trigger,
        status: "queued",
        priority,
        created_at: now,
        updated_at: now,
        tasks_total: 0,
        tasks_done: 0,
      })
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .executeTakeFirst();
  }

  active(collectionId: number): Promise<RunRow | undefined> {
    return this.db
      .selectFrom("runs")
      .selectAll()
      .where("collection_id", "=", collectionId)
      .where("status", "in", ACTIVE_STATUSES)
      .executeTakeFirst();
  }

  get(runId: number): Promise<RunRow | undefined> {
    return this.db.selectFrom("runs").selectAll().where("id", "=", runId).executeTakeFirst();
  }

  /** What the work is told about a run. */
  async info(runId: number): Promise<RunInfo | undefined> {
    const row = await this.db
      .selectFrom("runs")
      .innerJoin("collections", "collections.id", "runs.collection_id")
      .select(["runs.id", "collections.id as collection_id", "collections.name", "collections.account_id"])
      .where("runs.id", "=", runId)
      .executeTakeFirst();
    return (
      row && {
        id: row.id,
        collectionId: row.collection_id,
        collectionName: row.name,
        accountId: row.account_id,
      }
    );
  }

  /** The runs of a collection, newest first. */
  listForCollection(collectionId: number): Promise<RunRow[]> {
    return this.db
      .selectFrom("runs")
      .selectAll()
      .where("collection_id", "=", collectionId)
      .orderBy("id", "desc")
      .execute();
  }

  findInCollection(collectionId: number, runId: number): Promise<RunRow | undefined> {
    return this.db
      .selectFrom("runs")
      .selectAll()
      .where("collection_id", "=", collectionId)
      .where("id", "=", runId)
      .executeTakeFirst();
  }

  /** The latest finished run of a collection: the one whose results are current. */
  latestFinished(collectionId: number): Promise<RunRow | undefined> {
    return this.db
      .selectFrom("runs")
      .selectAll()
      .where("collection_id", "=", collectionId)
      .where("status", "=", "finished")
      .orderBy("id", "desc")
      .executeTakeFirst();
  }

  /** Queued → started with the planned tasks, in one transaction; false when the run was not queued. */
  async start(runId: number, tasks: TaskSpec[], deadlineAt: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const now = nowIso();
      const result = await trx
        .updateTable("runs")
        .set({ status: "started", started_at: now, deadline_at: deadlineAt, updated_at: now })
        .where("id", "=", runId)
        .where("status", "=", "queued")
        .executeTakeFirst();
      if (!changed(result)) return false;
      const ids = await insertTasks(trx, runId, tasks, now);
      await trx.updateTable("runs").set({ tasks_total: ids.length }).where("id", "=", runId).execute();
      return true;
    });
  }

  /** Started (all tasks done, nobody finishing yet) → finishing; true for the one caller that wins. */
  async claimFinish(runId: number): Promise<boolean> {
    const result = await this.db
      .updateTable("runs")
      .set({ finishing_at: nowIso() })
      .where("id", "=", runId)
      .where("status", "=", "started")
      .where("finishing_at", "is", null)
      .whereRef("tasks_done", "=", "tasks_total")
      .executeTakeFirst();
    return changed(result);
  }

  /** Drops a claim to finish whose process died (embedded restart), so the run can be finished again. */
  async unclaimFinish(runId: number): Promise<void> {
    await this.db
      .updateTable("runs")
      .set({ finishing_at: null })
      .where("id", "=", runId)
      .where("status", "=", "started")
      .execute();
  }

  async markFinished(runId: number): Promise<boolean> {
    const now = nowIso();
    const result = await this.db
      .updateTable("runs")
      .set({ status: "finished", finished_at: now, updated_at: now })
      .where("id", "=", runId)
      .where("status", "=", "started")
      .where("finishing_at", "is not", null)
      .executeTakeFirst();
    return changed(result);
  }

  /**
   * Ends an active run as failed or cancelled; false when it had already ended or is past the point of
   * no return (saving its results). `finishing: true` ends a run that died while saving its results.
   */
  async end(
    runId: number,
    status: "failed" | "cancelled",
    reason: string | null,
    options: { finishing?: boolean } = {},
  ): Promise<boolean> {
    const now = nowIso();
    const result = await this.db
      .updateTable("runs")
      .set({ status, error: reason, finished_at: now, updated_at: now })
      .where("id", "=", runId)
      .where("status", "in", ACTIVE_STATUSES)
      .where("finishing_at", options.finishing ? "is not" : "is", null)
      .executeTakeFirst();
    return changed(result);
  }

  /** How many runs are in each state, across every collection (for /metrics). */
  async countByStatus(): Promise<Record<RunStatus, number>> {
    const rows = await this.db
      .selectFrom("runs")
      .select(["status", (eb) => eb.fn.countAll<number | string | bigint>().as("count")])
      .groupBy("status")
      .execute();
    const counts = Object.fromEntries(RUN_STATUSES.map((status) => [status, 0])) as Record<RunStatus, number>;
    for (const row of rows) counts[row.status] = Number(row.count);
    return counts;
  }

  /** Current status of each of the given runs (absent = deleted). */
  async statuses(runIds: number[]): Promise<Map<number, RunRow>> {
    if (runIds.length === 0) return new Map();
    const rows = await this.db.selectFrom("runs").selectAll().where("id", "in", runIds).execute();
    return new Map(rows.map((row) => [row.id, row]));
  }

  /** Runs left queued or started, oldest first (resumed when an embedded server starts). */
  unfinished(): Promise<RunRow[]> {
    return this.db
      .selectFrom("runs")
      .selectAll()
      .where("status", "in", ACTIVE_STATUSES)
      .orderBy("id")
      .execute();
  }

  /** Started runs past their deadline (`finishing` = those that have been saving results since before `before`). */
  overdue(now: string, finishingBefore: string): Promise<RunRow[]> {
    return this.db
      .selectFrom("runs")
      .selectAll()
      .where("status", "=", "started")
      .where((eb) =>
        eb.or([
          eb.and([eb("finishing_at", "is", null), eb("deadline_at", "<", now)]),
          eb("finishing_at", "<", finishingBefore),
        ]),
      )
      .execute();
  }

  /** Active runs with no progress since `before`: candidates for re-dispatching their work. */
  idle(before: string): Promise<RunRow[]> {
    return this.db
      .selectFrom("runs")
      .selectAll()
      .where("status", "in", ACTIVE_STATUSES)
      .where("finishing_at", "is", null)
      .where("updated_at", "<", before)
      .execute();
  }

  // --- tasks ------------------------------------------------------------------------------------------

  /** Marks a task running on this worker and counts the attempt; undefined when it is already done. */
  async beginTask(taskId: number, worker: string): Promise<TaskRecord | undefined> {
    const result = await this.db
      .updateTable("run_tasks")
      .set((eb) => ({ status: "running", worker, attempts: eb("attempts", "+", 1) }))
      .where("id", "=", taskId)
      .where("status", "!=", "done")
      .executeTakeFirst();
    if (!changed(result)) return undefined;
    const row = await this.db
      .selectFrom("run_tasks")
      .selectAll()
      .where("id", "=", taskId)
      .executeTakeFirstOrThrow();
    return {
      id: row.id,
      runId: row.run_id,
      key: row.key,
      kind: row.kind,
      payload: JSON.parse(row.payload),
      depth: row.depth,
      attempts: row.attempts,
    };
  }

  /**
   * Records a done task and its follow-ups in one transaction, so nobody can see the task done without
   * its follow-ups (which would look like "no task left"). Answers the ids of the follow-ups that are
   * new to the run, or undefined when another worker had already completed the task.
   */
  async completeTask(
    runId: number,
    taskId: number,
    followUps: TaskSpec[],
    worker: string,
  ): Promise<number[] | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const now = nowIso();
      // Locks the task row first: a duplicate completion waits here, then finds it done.
      const done = await trx
        .updateTable("run_tasks")
        .set({ status: "done", worker, error: null, finished_at: now })
        .where("id", "=", taskId)
        .where("status", "!=", "done")
        .executeTakeFirst();
      if (!changed(done)) return undefined;
      const ids = await insertTasks(trx, runId, followUps, now);
      await trx
        .updateTable("runs")
        .set((eb) => ({
          tasks_done: eb("tasks_done", "+", 1),
          tasks_total: eb("tasks_total", "+", ids.length),
          updated_at: now,
        }))
        .where("id", "=", runId)
        .execute();
      return ids;
    });
  }

  /** Puts a running task back to pending; a hand-back (not the task's fault) also refunds the attempt. */
  async releaseTask(taskId: number, options: { error?: string; refund?: boolean } = {}): Promise<void> {
    await this.db
      .updateTable("run_tasks")
      .set((eb) => ({
        status: "pending",
        ...(options.error !== undefined ? { error: options.error } : {}),
        ...(options.refund ? { attempts: eb("attempts", "-", 1) } : {}),
      }))
      .where("id", "=", taskId)
      .where("status", "=", "running")
      .execute();
  }

  /** Tasks of a run not done yet; `running` ones too when resuming after a crash. */
  async unfinishedTaskIds(runId: number, options: { includeRunning?: boolean } = {}): Promise<number[]> {
    const rows = await this.db
      .selectFrom("run_tasks")
      .select("id")
      .where("run_id", "=", runId)
      .where("status", "in", options.includeRunning ? ["pending", "running"] : ["pending"])
      .orderBy("id")
      .execute();
    return rows.map((row) => row.id);
  }

  /** Which worker did how many tasks of a run (for progress and for checking that work was shared). */
  async workersOf(runId: number): Promise<Array<{ worker: string; tasks: number }>> {
    const rows = await this.db
      .selectFrom("run_tasks")
      .select(["worker", (eb) => eb.fn.countAll<number>().as("tasks")])
      .where("run_id", "=", runId)
      .where("status", "=", "done")
      .groupBy("worker")
      .execute();
    return rows.map((row) => ({ worker: row.worker ?? "", tasks: Number(row.tasks) }));
  }

  // --- schedules --------------------------------------------------------------------------------------

  /** Every collection with seeds, with when it last ran by itself and what decides its rate. */
  async scheduleCandidates(): Promise<ScheduleCandidate[]> {
    const rows = await this.db
      .selectFrom("collections")
      .innerJoin("accounts", "accounts.id", "collections.account_id")
      .leftJoin("run_schedules", "run_schedules.collection_id", "collections.id")
      .select(["collections.id", "collections.scan_rate", "accounts.status", "run_schedules.last_fired_at"])
      .select((eb) =>
        eb
          .selectFrom("runs")
          .select((inner) => inner.fn.max("runs.created_at").as("created_at"))
          .whereRef("runs.collection_id", "=", "collections.id")
          .where("runs.status", "not in", ["failed", "cancelled"])
          .as("last_run_at"),
      )
      .where((eb) =>
        eb.exists(
          eb.selectFrom("seeds").select("seeds.id").whereRef("seeds.collection_id", "=", "collections.id"),
        ),
      )
      .execute();
    return rows.map((row) => ({
      collectionId: row.id,
      // null: the scheduler never fired it (due at once, unless the collection ran by hand lately).
      lastFiredAt: row.last_fired_at ?? null,
      lastRunAt: row.last_run_at ?? null,
      accountStatus: row.status,
      scanRate: row.scan_rate,
    }));
  }

  /**
   * Fires one due schedule: moves `last_fired_at` from the value the caller saw to now (compare-and-set)
   * and creates the scheduled run, in one transaction. Of several processes seeing the same due
   * schedule, exactly one moves it; the others change nothing. Answers the new run, or undefined when
   * another process fired it or the collection already has an active run (which then stands in for it).
   */
  async fireSchedule(
    collectionId: number,
    seen: string | null,
    priority: number,
  ): Promise<RunRow | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const now = nowIso();
      let won: boolean;
      if (seen === null) {
        const inserted = await trx
          .insertInto("run_schedules")
          .values({ collection_id: collectionId, last_fired_at: now })
          .onConflict((oc) => oc.column("collection_id").doNothing())
          .returning("collection_id")
          .executeTakeFirst();
        won = inserted !== undefined;
      } else {
        won = changed(
          await trx
            .updateTable("run_schedules")
            .set({ last_fired_at: now })
            .where("collection_id", "=", collectionId)
            .where("last_fired_at", "=", seen)
            .executeTakeFirst(),
        );
      }
      return won ? this.create(collectionId, "scheduled", priority, trx) : undefined;
    });
  }
}
