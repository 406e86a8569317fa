/**
 * Repository of runs, their tasks and the scheduler's bookkeeping. Every state change is a conditional
 * update (compare-and-set on the current status), so several processes can act on the same run and
 * exactly one of them wins each transition.
 */
import { type Kysely, PostgresAdapter, type Selectable, sql } from "kysely";
import { nowIso } from "../core/formats.ts";
import { pace, yieldToLoop } from "../core/pace.ts";
import { applyProfile, type RunSettings } from "../core/run-settings.ts";
import type { RunInfo, TaskRecord, TaskSpec } from "../core/run-work.ts";
import { ACTIVE_RUN_STATUSES, RUN_STATUSES, type RunStatus } from "../core/runs.ts";
import { scanProfileOf } from "./collections.ts";
import {
  insertStaging,
  joinStaging,
  STAGING_PIECE,
  type StagingRows,
  stageRows,
  stagingCtes,
  stagingSize,
} from "./entities.ts";
import { reclaimFreeSpace } from "./free-space.ts";
import { plainInsert, plainQuery } from "./plain-statements.ts";
import type { AccountStatus, Database, RunsTable, RunTasksTable, RunTrigger } from "./schema.ts";
import { wroteRunRows, wroteStaging } from "./staging-statistics.ts";
import { lostWorkingTables, unmark, workingTablesLost } from "./working-marks.ts";

export type RunRow = Selectable<RunsTable>;
type RunTaskRow = Selectable<RunTasksTable>;

/** A task done, with what it found and its follow-ups, whose completion rides with another statement. */
export interface DoneTask {
  runId: number;
  taskId: number;
  found?: StagingRows;
  followUps?: TaskSpec[];
}

const taskRecord = (row: RunTaskRow): TaskRecord => ({
  id: row.id,
  runId: row.run_id,
  key: row.key,
  kind: row.kind,
  payload: JSON.parse(row.payload),
  depth: row.depth,
  attempts: row.attempts,
});

/** The states a run leaves only by ending; the partial unique index allows one of them per collection. */

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

/** How long PostgreSQL's task counts wait in this process before they are written to their run's row. */
const COUNT_WRITE_MS = 250;

/** Task rows deleted per statement once a run has ended: a few milliseconds of SQLite's writer each. */
const PRUNE_BATCH = 250;

/** A new task's row. */
const pendingRow = (runId: number, task: TaskSpec, now: string) => ({
  run_id: runId,
  key: task.key,
  kind: task.kind,
  payload: JSON.stringify(task.payload ?? null),
  depth: task.depth,
  status: "pending" as const,
  attempts: 0,
  created_at: now,
});

/**
 * Tasks in key order: the one order every writer inserts in, so two multi-row inserts naming the same
 * keys never wait on each other in a cycle.
 */
const keyOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const byKey = (tasks: TaskSpec[]) => [...tasks].sort((a, b) => keyOrder(a.key, b.key));

async function insertTasks(
  db: Kysely<Database>,
  runId: number,
  tasks: TaskSpec[],
  now: string,
): Promise<number[]> {
  return inGivenOrder(tasks, await insertTaskRows(db, runId, tasks, now));
}

async function insertTaskRows(
  db: Kysely<Database>,
  runId: number,
  tasks: TaskSpec[],
  now: string,
): Promise<Array<{ id: number; key: string }>> {
  const ids: Array<{ id: number; key: string }> = [];
  for (let i = 0; i < tasks.length; i += CHUNK) {
    const rows = tasks.slice(i, i + CHUNK).map((task) => pendingRow(runId, task, now));
    const plain = plainInsert(
      db,
      "run_tasks",
      rows,
      `on conflict ("run_id", "key") do nothing returning "id", "key"`,
    );
    ids.push(
      ...(plain
        ? (await db.executeQuery<{ id: number; key: string }>(plain)).rows
        : await db
            .insertInto("run_tasks")
            .values(rows)
            .onConflict((oc) => oc.columns(["run_id", "key"]).doNothing())
            .returning(["id", "key"])
            .execute()),
    );
  }
  return ids;
}

/**
 * The ids of the tasks inserted, in the order the tasks were given (inserts are sorted by key): the queue
 * runs tasks in the order they are queued, and the work decides that order (a block's next slice last).
 */
function inGivenOrder(tasks: TaskSpec[], rows: Array<{ id: number; key: string }>): number[] {
  return takeInGivenOrder(tasks, new Map(rows.map((row) => [row.key, row.id])));
}

/** The ids of `tasks` in `idOf` (by key), in the order of `tasks`, taken out of it: each is answered once. */
function takeInGivenOrder(tasks: TaskSpec[], idOf: Map<string, number> = new Map()): number[] {
  const ids: number[] = [];
  for (const task of tasks) {
    const id = idOf.get(task.key);
    if (id === undefined) continue;
    ids.push(id);
    idOf.delete(task.key);
  }
  return ids;
}

/** Adds `by` to one of a run's task counts (SQLite keeps them exact in the tasks' own transactions). */
const addToCount = (
  db: Kysely<Database>,
  runId: number,
  column: "tasks_total" | "tasks_done",
  by: number,
  now: string,
) =>
  db.executeQuery(
    plainQuery(
      db,
      column,
      [by, now, runId],
      (p) =>
        `update "runs" set "${column}" = "${column}" + ${p()}, "updated_at" = ${p()} where "id" = ${p()}`,
    ),
  );

const changed = (result: { numUpdatedRows: bigint }) => Number(result.numUpdatedRows) > 0;

export class RunsRepository {
  readonly db: Kysely<Database>;
  /** The discovery settings every run created here is given (this process's configuration). */
  readonly settings: RunSettings | undefined;
  /**
   * PostgreSQL: tasks added and done that this process has counted and not yet written to their run's
   * row (`#writing`: being written). Every completion updating the run's one row had made it a hot spot:
   * each waited on the row lock of the completion before it (a /18 saw 3,000 completions wait over 4 ms)
   * and left a dead version of the row behind. Counts are written at most every COUNT_WRITE_MS instead,
   * and this process's reads of a run add what it has not written. A run's finish is decided from its
   * task rows, not from these counts (claimFinish). SQLite has one writer: its completions keep the
   * counts exact in their own transaction.
   */
  readonly #unwritten = new Map<number, { total: number; done: number }>();
  readonly #writing = new Map<number, { total: number; done: number }>();
  #writeTimer: NodeJS.Timeout | undefined;

  /** Where a task's start and completion go (Store.taskDb): `db` unless given. */
  readonly #taskDb: Kysely<Database>;

  constructor(db: Kysely<Database>, settings?: RunSettings, taskDb: Kysely<Database> = db) {
    this.db = db;
    this.settings = settings;
    this.#taskDb = taskDb;
  }

  #count(runId: number, total: number, done: number): void {
    if (total === 0 && done === 0) return;
    const counts = this.#unwritten.get(runId);
    if (counts) {
      counts.total += total;
      counts.done += done;
    } else this.#unwritten.set(runId, { total, done });
    this.#writeTimer ??= setTimeout(() => {
      this.writeCounts().catch(() => {}); // kept for the next write
    }, COUNT_WRITE_MS).unref();
  }

  /**
   * Writes the task counts this process holds to their runs' rows (a run already finishing or ended
   * has been recounted from its tasks, and is left alone). Counts a write failed to take are kept.
   */
  async writeCounts(): Promise<void> {
    clearTimeout(this.#writeTimer);
    this.#writeTimer = undefined;
    for (const [runId, counts] of [...this.#unwritten]) {
      this.#unwritten.delete(runId);
      this.#writing.set(runId, counts);
      try {
        await this.db
          .updateTable("runs")
          .set((eb) => ({
            tasks_total: eb("tasks_total", "+", counts.total),
            tasks_done: eb("tasks_done", "+", counts.done),
            updated_at: nowIso(),
          }))
          .where("id", "=", runId)
          .where("status", "in", ACTIVE_RUN_STATUSES)
          .where("finishing_at", "is", null)
          .execute();
      } catch (error) {
        this.#count(runId, counts.total, counts.done);
        throw error;
      } finally {
        this.#writing.delete(runId);
      }
    }
  }

  /** A run's row with what this process has counted and not yet written. */
  #withUnwritten = (row: RunRow): RunRow => {
    const unwritten = this.#unwritten.get(row.id);
    const writing = this.#writing.get(row.id);
    if (!unwritten && !writing) return row;
    return {
      ...row,
      tasks_total: row.tasks_total + (unwritten?.total ?? 0) + (writing?.total ?? 0),
      tasks_done: row.tasks_done + (unwritten?.done ?? 0) + (writing?.done ?? 0),
    };
  };

  /** Whether the database answers now (within 2 s): tells an outage from a failure of the work. */
  async reachable(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        sql`select 1`.execute(this.db),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error("no answer")), 2000);
        }),
      ]);
      return true;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
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
    // selectAll: a store migrated only part way (its upgrade tests) has no scan_profile column yet.
    const collection = await db
      .selectFrom("collections")
      .selectAll()
      .where("id", "=", collectionId)
      .executeTakeFirst();
    // The collection's profile over this process's settings, fixed now: the run records what it scans.
    const settings = this.settings && applyProfile(this.settings, collection && scanProfileOf(collection));
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
        settings: settings ? JSON.stringify(settings) : null,
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
      .where("status", "in", ACTIVE_RUN_STATUSES)
      .executeTakeFirst();
  }

  async get(runId: number): Promise<RunRow | undefined> {
    const row = await this.db.selectFrom("runs").selectAll().where("id", "=", runId).executeTakeFirst();
    return row && this.#withUnwritten(row);
  }

  /** What the work is told about a run. */
  async info(runId: number): Promise<RunInfo | undefined> {
    const row = await this.db
      .selectFrom("runs")
      .innerJoin("collections", "collections.id", "runs.collection_id")
      .select([
        "runs.id",
        "runs.settings",
        "runs.tasks_total",
        "collections.id as collection_id",
        "collections.name",
        "collections.account_id",
      ])
      .where("runs.id", "=", runId)
      .executeTakeFirst();
    return (
      row && {
        id: row.id,
        collectionId: row.collection_id,
        collectionName: row.name,
        accountId: row.account_id,
        settings: row.settings ? (JSON.parse(row.settings) as RunSettings) : undefined,
        tasks: row.tasks_total,
      }
    );
  }

  /** The runs of a collection, newest first. */
  async listForCollection(collectionId: number): Promise<RunRow[]> {
    const rows = await this.db
      .selectFrom("runs")
      .selectAll()
      .where("collection_id", "=", collectionId)
      .orderBy("id", "desc")
      .execute();
    return rows.map(this.#withUnwritten);
  }

  async findInCollection(collectionId: number, runId: number): Promise<RunRow | undefined> {
    const row = await this.db
      .selectFrom("runs")
      .selectAll()
      .where("collection_id", "=", collectionId)
      .where("id", "=", runId)
      .executeTakeFirst();
    return row && this.#withUnwritten(row);
  }

  /** The newest `limit` finished runs of a collection, newest first (for a trend over runs). */
  newestFinished(
    collectionId: number,
    limit: number,
  ): Promise<Array<{ id: number; finished_at: string | null }>> {
    return this.db
      .selectFrom("runs")
      .select(["id", "finished_at"])
      .where("collection_id", "=", collectionId)
      .where("status", "=", "finished")
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
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
      await trx.insertInto("run_working_marks").values({ run_id: runId }).execute();
      const ids = await insertTasks(trx, runId, tasks, now);
      await trx.updateTable("runs").set({ tasks_total: ids.length }).where("id", "=", runId).execute();
      return true;
    });
  }

  /**
   * Started (no task pending or running, nobody finishing yet) → finishing; true for the one caller that
   * wins. The run's task counts are recounted from its tasks as it is claimed: counts written late
   * (PostgreSQL) are exact from here on.
   */
  async claimFinish(runId: number): Promise<boolean> {
    const result = await this.db
      .updateTable("runs")
      .set((eb) => {
        const tasks = eb
          .selectFrom("run_tasks")
          .select(eb.fn.countAll<number>().as("n"))
          .where("run_id", "=", runId);
        return { finishing_at: nowIso(), tasks_total: tasks, tasks_done: tasks };
      })
      .where("id", "=", runId)
      .where("status", "=", "started")
      .where("finishing_at", "is", null)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("run_tasks")
              .select("id")
              .where("run_id", "=", runId)
              .where("status", "in", ["pending", "running"]),
          ),
        ),
      )
      .executeTakeFirst();
    if (!changed(result)) return false;
    this.#unwritten.delete(runId);
    return true;
  }

  /**
   * Started runs whose working tables are gone: a PostgreSQL crash empties its unlogged tables (migration
   * 020), the runs' marks with them. What such a run had done and staged is lost; it must not finish.
   */
  lostWorkingTables(): Promise<RunRow[]> {
    return lostWorkingTables(this.db);
  }

  /** Whether the run is started and its working tables were emptied under it (see lostWorkingTables). */
  workingTablesLost(runId: number): Promise<boolean> {
    return workingTablesLost(this.db, runId);
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
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable("runs")
        .set({ status: "finished", finished_at: now, updated_at: now })
        .where("id", "=", runId)
        .where("status", "=", "started")
        .where("finishing_at", "is not", null)
        .executeTakeFirst();
      if (changed(result)) await unmark(trx, runId);
      return changed(result);
    });
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
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable("runs")
        .set({ status, error: reason, finished_at: now, updated_at: now })
        .where("id", "=", runId)
        .where("status", "in", ACTIVE_RUN_STATUSES)
        .where("finishing_at", options.finishing ? "is not" : "is", null)
        .executeTakeFirst();
      // A run that ends without finishing never replaces results: what it staged is of no use.
      if (changed(result)) {
        await discardStaging(trx, [runId]);
        await unmark(trx, runId);
      }
      return changed(result);
    });
  }

  /**
   * Drops what tasks staged for runs that had already failed or been cancelled when they wrote it (a task
   * in flight as its run ends may still write once); answers how many runs had such rows.
   */
  async discardEndedStaging(): Promise<number> {
    const ended = await this.db
      .selectFrom("staged_entities")
      .innerJoin("runs", "runs.id", "staged_entities.run_id")
      .select("runs.id")
      .distinct()
      .where("runs.status", "in", ["failed", "cancelled"])
      .union((eb) =>
        eb
          .selectFrom("staged_findings")
          .innerJoin("runs", "runs.id", "staged_findings.run_id")
          .select("runs.id")
          .where("runs.status", "in", ["failed", "cancelled"]),
      )
      .execute();
    if (ended.length > 0)
      await discardStaging(
        this.db,
        ended.map((row) => row.id),
      );
    return ended.length;
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
      .where("status", "in", ACTIVE_RUN_STATUSES)
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
      .where("status", "in", ACTIVE_RUN_STATUSES)
      .where("finishing_at", "is", null)
      .where("updated_at", "<", before)
      .execute();
  }

  // --- tasks ------------------------------------------------------------------------------------------

  /**
   * Marks a task running on this worker and counts the attempt (unless `uncounted`: the last one was cut
   * short by an outage); undefined when it is already done.
   */
  async beginTask(
    taskId: number,
    worker: string,
    options: { uncounted?: boolean } = {},
  ): Promise<TaskRecord | undefined> {
    return this.#begin(this.#taskDb, taskId, worker, options.uncounted ?? false);
  }

  /** One statement: the update answers the row (both dialects have RETURNING). */
  async #begin(
    db: Kysely<Database>,
    taskId: number,
    worker: string,
    uncounted: boolean,
  ): Promise<TaskRecord | undefined> {
    const {
      rows: [row],
    } = await db.executeQuery<RunTaskRow>(
      plainQuery(
        db,
        "begin",
        [worker, uncounted ? 0 : 1, taskId],
        (p) =>
          `update "run_tasks" set "status" = 'running', "worker" = ${p()}, "attempts" = "attempts" + ${p()} where "id" = ${p()} and "status" != 'done' returning *`,
      ),
    );
    return row && taskRecord(row);
  }

  /**
   * Records a done task, what it found (`found`: its staging rows, when the work left them to be written
   * here) and its follow-ups, atomically: one statement on PostgreSQL, one transaction on SQLite. Nobody
   * sees the task done without its follow-ups (which would look like "no task left") or without what it
   * found; a completion that fails writes none of it, and its repetition finds any follow-ups another
   * completion added. The follow-ups are inserted sorted by key, skipping keys the run has: concurrent
   * completions naming the same follow-ups take their locks in the same order and never wait on each
   * other in a cycle. The run's counts follow: at once on SQLite, within COUNT_WRITE_MS on PostgreSQL.
   * Answers the ids of the follow-ups new to the run, and whether this call marked the task done (false:
   * another worker had already completed it). A completion of more than STAGING_PIECE rows is written in
   * pieces instead (below): still never done without them, but a failure may leave some of them written.
   */
  async completeTask(
    runId: number,
    taskId: number,
    followUps: TaskSpec[],
    worker: string,
    found?: StagingRows,
  ): Promise<{ added: number[]; completed: boolean }> {
    const now = nowIso();
    // A completion of many rows (a zone transfer's sightings and their follow-ups) writes them ahead in
    // pieces, each its own commit, then marks the task done as a small completion does: one commit of them
    // all would hold the server's event loop for as long as SQLite takes to write them. The task is not done
    // until the last, so nobody takes the run for finished meanwhile; should the writing stop between
    // pieces, the task is done again: its follow-ups are in the run already (added once), its sightings
    // are staged again (merged as one).
    if (followUps.length + (found ? stagingSize(found) : 0) > STAGING_PIECE) {
      const added = await this.addTasks(runId, followUps, now);
      if (found) await stageRows(this.db, found);
      return { added, completed: (await this.completeTask(runId, taskId, [], worker)).completed };
    }
    const written = await this.#complete([{ runId, taskId, found, followUps }], worker);
    return { added: written.added.get(taskId) ?? [], completed: written.completed.has(taskId) };
  }

  /**
   * Records tasks done (with what they found and their follow-ups, as `completeTask` does for one) and
   * begins task `next` as `beginTask` does, in one statement on PostgreSQL or one transaction (one commit)
   * on SQLite: the completions ride with the next task's start (runs/riding-completions.ts). Without
   * `next`, only the completions. Answers the task begun (undefined when it is done already, or none was
   * asked), which of `done` this call marked done, and the ids of each done task's follow-ups new to the
   * run (in the order given; a key two of them name is added once, to the first).
   */
  async completeAndBegin(
    done: DoneTask[],
    worker: string,
    next?: { taskId: number; uncounted?: boolean },
  ): Promise<{ task: TaskRecord | undefined; completed: Set<number>; added: Map<number, number[]> }> {
    return this.#complete(done, worker, next);
  }

  /**
   * The body of `completeAndBegin`, shared with `completeTask` (a completion on its own is one that begins
   * nothing); private so that the two public ways of recording a completion stay apart for whoever
   * watches them (test/runs/riding-completions.test.ts counts each).
   */
  async #complete(
    done: DoneTask[],
    worker: string,
    next?: { taskId: number; uncounted?: boolean },
  ): Promise<{ task: TaskRecord | undefined; completed: Set<number>; added: Map<number, number[]> }> {
    const now = nowIso();
    const staging = done.flatMap((task) => (task.found && stagingSize(task.found) > 0 ? [task.found] : []));
    const added = new Map<number, number[]>();
    if (this.db.getExecutor().adapter instanceof PostgresAdapter) {
      const written = await this.#writeOutcomes({
        followUps: done.flatMap(({ runId, followUps = [] }) => followUps.map((task) => ({ runId, task }))),
        staging,
        done: done.map((task) => task.taskId),
        worker,
        now,
        next,
      });
      const idsOf = new Map<number, Map<string, number>>();
      for (const row of written.added) {
        const ofRun = idsOf.get(row.run_id) ?? new Map<string, number>();
        idsOf.set(row.run_id, ofRun.set(row.key, row.id));
      }
      for (const task of done)
        if (task.followUps?.length)
          added.set(task.taskId, takeInGivenOrder(task.followUps, idsOf.get(task.runId)));
      return { task: written.begun && taskRecord(written.begun), completed: written.completed, added };
    }
    // SQLite has one writer at a time, so nothing waits on another's keys: one transaction does it all.
    return this.db.transaction().execute(async (trx) => {
      for (const rows of staging) await insertStaging(trx, rows);
      // Each in its turn: a key an earlier one added is the run's already, and skipped.
      for (const task of done)
        if (task.followUps?.length)
          added.set(task.taskId, await this.#addTasks(trx, task.runId, task.followUps, now));
      const completed = await this.#markDone(trx, done, worker, now);
      const task = next && (await this.#begin(trx, next.taskId, worker, next.uncounted ?? false));
      return { task, completed, added };
    });
  }

  /**
   * PostgreSQL: what tasks found, their follow-ups, the tasks marked done and the start of the next task,
   * in one statement of one text (its rows passed as arrays), prepared once per connection. The
   * follow-ups go in (run, key) order, the one order every writer takes their locks in (see `byKey`).
   * Counts what it added and marked done for the runs' rows.
   */
  async #writeOutcomes(input: {
    followUps: Array<{ runId: number; task: TaskSpec }>;
    staging: StagingRows[];
    done: number[];
    worker: string;
    now: string;
    next?: { taskId: number; uncounted?: boolean };
  }): Promise<{
    added: Array<{ id: number; run_id: number; key: string }>;
    completed: Set<number>;
    begun?: RunTaskRow;
  }> {
    const { worker, now, next } = input;
    const rows = input.followUps
      .map(({ runId, task }) => pendingRow(runId, task, now))
      .sort((a, b) => a.run_id - b.run_id || keyOrder(a.key, b.key));
    const column = <T>(type: "integer" | "text", pick: (row: (typeof rows)[number]) => T) =>
      sql`${rows.map(pick)}::${sql.raw(type)}[]`;
    // Only the parts with rows: each combination is one text, whatever the counts (see stagingCtes).
    const ctes = stagingCtes(joinStaging(input.staging));
    const answers = [];
    if (rows.length > 0) {
      ctes.push(sql`added as (
        insert into run_tasks (run_id, key, kind, payload, depth, status, attempts, created_at)
        select * from unnest(${column("integer", (r) => r.run_id)}, ${column("text", (r) => r.key)},
          ${column("text", (r) => r.kind)}, ${column("text", (r) => r.payload)}, ${column("integer", (r) => r.depth)},
          ${column("text", (r) => r.status)}, ${column("integer", (r) => r.attempts)}, ${column("text", (r) => r.created_at)})
        on conflict (run_id, key) do nothing
        returning id, run_id, key)`);
      answers.push(
        sql`(select coalesce(json_agg(json_build_object('id', id, 'run_id', run_id, 'key', key)), '[]'::json) from added) as added`,
      );
    }
    if (input.done.length > 0) {
      ctes.push(sql`done as (
        update run_tasks set status = 'done', worker = ${worker}, error = null, finished_at = ${now}
        where id = any(${input.done}::integer[]) and status <> 'done'
        returning id, run_id)`);
      answers.push(
        sql`(select coalesce(json_agg(json_build_object('id', id, 'run_id', run_id)), '[]'::json) from done) as done`,
      );
    }
    if (next) {
      ctes.push(sql`begun as (
        update run_tasks set status = 'running', worker = ${worker}, attempts = attempts + ${next.uncounted ? 0 : 1}::integer
        where id = ${next.taskId}::integer and status <> 'done'
        returning *)`);
      answers.push(sql`(select row_to_json(begun) from begun) as begun`);
    }
    const result = await sql<{
      added?: Array<{ id: number; run_id: number; key: string }>;
      done?: Array<{ id: number; run_id: number }>;
      begun?: RunTaskRow | null;
    }>`with ${sql.join(ctes)} select ${sql.join(answers)}`.execute(this.#taskDb);
    const { added = [], done = [], begun } = result.rows[0];
    wroteStaging(this.db, input.staging);
    const addedPerRun = new Map<number, number>();
    for (const task of added) addedPerRun.set(task.run_id, (addedPerRun.get(task.run_id) ?? 0) + 1);
    for (const [runId, count] of addedPerRun) {
      wroteRunRows(this.db, runId, count);
      this.#count(runId, count, 0);
    }
    for (const task of done) this.#count(task.run_id, 0, 1);
    return { added, completed: new Set(done.map((task) => task.id)), begun: begun ?? undefined };
  }

  /** SQLite, in a transaction: marks the tasks done and counts them in their runs' rows; answers those it marked. */
  async #markDone(
    trx: Kysely<Database>,
    tasks: Array<{ runId: number; taskId: number }>,
    worker: string,
    now: string,
  ): Promise<Set<number>> {
    if (tasks.length === 0) return new Set();
    const { rows: marked } = await trx.executeQuery<{ id: number; run_id: number }>(
      plainQuery(
        trx,
        `done ${tasks.length}`,
        [worker, now, ...tasks.map((task) => task.taskId)],
        (p) =>
          `update "run_tasks" set "status" = 'done', "worker" = ${p()}, "error" = null, "finished_at" = ${p()} where "id" in (${tasks.map(p).join(", ")}) and "status" != 'done' returning "id", "run_id"`,
      ),
    );
    const perRun = new Map<number, number>();
    for (const task of marked) perRun.set(task.run_id, (perRun.get(task.run_id) ?? 0) + 1);
    for (const [runId, count] of perRun) await addToCount(trx, runId, "tasks_done", count, now);
    return new Set(marked.map((task) => task.id));
  }

  /**
   * Adds tasks the run does not have yet and counts them in its total; answers their ids, in the order
   * given. In pieces of STAGING_PIECE tasks, each its own commit (sorted by key within it), pacing between
   * them: a zone transfer's 60,000 follow-ups in one held the event loop 0.6 s (SQLite's commit, the
   * mapping of ids back to the tasks, the sort).
   */
  async addTasks(runId: number, tasks: TaskSpec[], now = nowIso()): Promise<number[]> {
    const ids: number[] = [];
    for (let i = 0; i < tasks.length; i += STAGING_PIECE) {
      ids.push(...(await this.#addPiece(runId, tasks.slice(i, i + STAGING_PIECE), now)));
      await pace();
    }
    return ids;
  }

  async #addPiece(runId: number, tasks: TaskSpec[], now: string): Promise<number[]> {
    if (!(this.db.getExecutor().adapter instanceof PostgresAdapter))
      return this.db.transaction().execute((trx) => this.#addTasks(trx, runId, tasks, now));
    // One autocommit insert per chunk: the keys it holds are released at once.
    const ids = await insertTaskRows(this.#taskDb, runId, byKey(tasks), now);
    wroteRunRows(this.db, runId, ids.length);
    this.#count(runId, ids.length, 0);
    return inGivenOrder(tasks, ids);
  }

  async #addTasks(db: Kysely<Database>, runId: number, tasks: TaskSpec[], now: string): Promise<number[]> {
    if (tasks.length === 0) return [];
    const ids = inGivenOrder(tasks, await insertTaskRows(db, runId, byKey(tasks), now));
    if (ids.length > 0) await addToCount(db, runId, "tasks_total", ids.length, now);
    return ids;
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

  /**
   * Which worker did how many tasks of a run, and how many attempts they took (for progress and for
   * checking that work was shared): counted from the run's task rows while it is active, from what their
   * deletion kept (`run_workers`) once it has ended, and from both while the rows are being deleted (one
   * statement, so one consistent view of the two).
   */
  async workersOf(runId: number): Promise<Array<{ worker: string; tasks: number; attempts: number }>> {
    const { rows } = await sql<{ worker: string | null; tasks: number | string; attempts: number | string }>`
      select worker, sum(tasks) as tasks, sum(attempts) as attempts from (
        select worker, tasks, attempts from run_workers where run_id = ${runId}
        union all
        select worker, count(*) as tasks, sum(attempts) as attempts from run_tasks
        where run_id = ${runId} and status = 'done' group by worker
      ) counted group by worker order by worker`.execute(this.db);
    return rows.map((row) => ({
      worker: row.worker ?? "",
      tasks: Number(row.tasks),
      attempts: Number(row.attempts),
    }));
  }

  /**
   * Once a run has ended (finished, failed or cancelled), its task bookkeeping goes: the `run_tasks` rows
   * (a /16 has about 330,000, with their payloads) are deleted a batch at a time, the event loop served
   * between batches, each batch in a transaction that adds what it deleted to the run's per-worker counts
   * (`run_workers`). The rows counted are exactly the rows deleted, so a batch cut short counts nothing
   * and two processes clearing the same run never count a row twice. Then the space they took (and, for
   * a run that did not finish, its discarded staging) is given back (free-space.ts).
   *
   * A queued or started run is left alone: its tasks are what a resumed run continues from. Nothing reads
   * an ended run's tasks: a task's failure is in the run's error, repeated jobs of an ended run stop at its
   * status. `stopping` ends the work between two batches (a shutdown); the scheduler's sweep
   * (`endedWithTasks`) finishes it later. Answers how many task rows went.
   */
  async clearEnded(runId: number, options: { stopping?: () => boolean } = {}): Promise<number> {
    const run = await this.db.selectFrom("runs").select("status").where("id", "=", runId).executeTakeFirst();
    if (!run || ACTIVE_RUN_STATUSES.includes(run.status)) return 0;
    let deleted = 0;
    // Batches follow the (run_id, key) index from where the last one ended: each read starts past the rows
    // deleted so far. Asking for "any PRUNE_BATCH rows of the run" each time started over from the front,
    // past every row deleted before, which PostgreSQL keeps in the index until a vacuum: quadratic over a
    // run's tasks.
    // A task finishing after its run ended may add keys behind the cursor: the sweep takes those.
    let after: string | undefined;
    while (!options.stopping?.()) {
      const count = await this.db.transaction().execute(async (trx) => {
        const batch = await trx
          .selectFrom("run_tasks")
          .select(["id", "key"])
          .where("run_id", "=", runId)
          .$if(after !== undefined, (query) => query.where("key", ">", after!))
          .orderBy("key")
          .limit(PRUNE_BATCH)
          .execute();
        if (batch.length === 0) return 0;
        after = batch[batch.length - 1].key;
        const rows = await trx
          .deleteFrom("run_tasks")
          .where(
            "id",
            "in",
            batch.map((row) => row.id),
          )
          .returning(["worker", "status", "attempts"])
          .execute();
        const byWorker = new Map<string, { tasks: number; attempts: number }>();
        for (const row of rows) {
          if (row.status !== "done" || row.worker === null) continue;
          const counted = byWorker.get(row.worker) ?? { tasks: 0, attempts: 0 };
          counted.tasks++;
          counted.attempts += row.attempts;
          byWorker.set(row.worker, counted);
        }
        if (byWorker.size > 0)
          await trx
            .insertInto("run_workers")
            .values([...byWorker].map(([worker, counted]) => ({ run_id: runId, worker, ...counted })))
            .onConflict((oc) =>
              oc.columns(["run_id", "worker"]).doUpdateSet((eb) => ({
                tasks: eb("run_workers.tasks", "+", eb.ref("excluded.tasks")),
                attempts: eb("run_workers.attempts", "+", eb.ref("excluded.attempts")),
              })),
            )
            .execute();
        return rows.length;
      });
      if (count === 0) break;
      deleted += count;
      await yieldToLoop();
    }
    if (!options.stopping?.())
      await reclaimFreeSpace(
        this.db,
        run.status === "finished"
          ? ["run_tasks", "runs"]
          : ["run_tasks", "runs", "staged_entities", "staged_findings"],
        options,
      );
    return deleted;
  }

  /**
   * Ended runs that still hold task rows: their clearing was cut short (a crash, a shutdown), a task still
   * in flight as the run ended wrote follow-ups, or they ended before task rows were cleared at all. The
   * runs holding task rows are found by a loose index scan (one index seek per run), not by reading the
   * tasks of the runs in progress.
   */
  async endedWithTasks(): Promise<number[]> {
    const { rows } = await sql<{ id: number }>`
      with recursive held (run_id) as (
        select min(run_id) from run_tasks
        union all
        select (select min(run_id) from run_tasks where run_id > held.run_id) from held
        where held.run_id is not null
      )
      select runs.id from held join runs on runs.id = held.run_id
      where runs.status not in ('queued', 'started') order by runs.id`.execute(this.db);
    return rows.map((row) => Number(row.id));
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

/** Deletes the staged entities and findings of the given runs. */
async function discardStaging(db: Kysely<Database>, runIds: number[]): Promise<void> {
  await db.deleteFrom("staged_entities").where("run_id", "in", runIds).execute();
  await db.deleteFrom("staged_findings").where("run_id", "in", runIds).execute();
}
