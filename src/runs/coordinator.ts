/**
 * The run lifecycle: queued → started → finished, or failed (with a reason) or cancelled.
 *
 * The coordinator is both sides of the queue. As the control side it creates runs (forced by the API,
 * scheduled by the scheduler), cancels them and fails those past their time limit. As the job handler
 * it plans a run (its start job), executes tasks through the RunWork, records their follow-ups, and when
 * no task is left lets exactly one process call `finish`. Every transition is a compare-and-set in the
 * store, so any number of processes may run coordinators over the same runs.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { nowIso } from "../core/formats.ts";
import type { Counter, Metrics } from "../core/metrics.ts";
import type { RunInfo, RunWork, TaskOutcome } from "../core/run-work.ts";
import type { StagingRows } from "../store/entities.ts";
import type { RunRow, RunsRepository } from "../store/runs.ts";
import { WORKING_TABLES_LOST } from "../store/working-marks.ts";
import { InFlight, RunEnded, ShuttingDown } from "./in-flight.ts";
import {
  Deferred,
  deferDelay,
  HandBack,
  type JobHandler,
  type RunJob,
  type RunQueue,
  type TaskSlot,
} from "./queue.ts";
import { mayRide, RidingCompletions } from "./riding-completions.ts";

export const FORCED_PRIORITY = 1;
export const SCHEDULED_PRIORITY = 5;

/**
 * How long a task that waits (RunWork.waits) holds its slot before giving it back. Each slot starts at
 * most one such task per this time, so it bounds how fast a block of unused addresses (three waiting
 * tasks each) is gone through: at 250 ms the 8 slots would start only 32 a second. A task that ends
 * sooner than this never joins the waiting ones.
 */
const WAITING_AFTER_MS = 50;

/** How long a process that claimed a run's finish waits for the database before deferring it. */
const FINISH_PATIENCE_MS = 10 * 60_000;

/** How often runs with tasks in flight here are checked for cancel, failure and the time limit. */
const WATCH_MS = 1000;
/**
 * How long a run's row read here serves the tasks that start after it. A task starts only in a started
 * run; reading the row for every task was one statement of about six per task (a round trip each on
 * PostgreSQL). A change made here drops the row at once; one made elsewhere (a cancel on another server,
 * a failure on a worker) is seen within this time, as the watch of tasks in flight sees it.
 */
const RUN_ROW_FRESH_MS = WATCH_MS;

export interface RunLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const SILENT: RunLog = { info() {}, warn() {}, error() {} };

/**
 * Told when a run ends here (finished, or failed by this process). Called without being awaited, so
 * what a hook does (webhooks write their outbox) never delays the run machinery; a hook that fails is
 * logged. A hook must tolerate being told twice about a run and, for durability, catch up on its own.
 */
export interface RunHook {
  runEnded(runId: number, status: "finished" | "failed"): Promise<void>;
}

export interface CoordinatorOptions {
  repository: RunsRepository;
  queue: RunQueue;
  work: RunWork;
  /** This process, as recorded on the tasks it runs (host:pid). */
  worker: string;
  timeLimitSeconds: number;
  taskAttempts: number;
  log?: RunLog;
  hooks?: RunHook[];
  /** Where task counters go (GET /metrics); none in a process without it. */
  metrics?: Metrics;
}

/** Counters of the tasks this process ran, by discovery module (the task's kind). */
interface TaskCounters {
  started: Counter;
  finished: Counter;
  failed: Counter;
}

const NO_COUNTER: Counter = { inc() {} };

function taskCounters(metrics: Metrics | undefined): TaskCounters {
  if (!metrics) return { started: NO_COUNTER, finished: NO_COUNTER, failed: NO_COUNTER };
  return {
    started: metrics.counter(
      "sightline_discovery_tasks_started_total",
      "Discovery tasks this process began, by module.",
      ["module"],
    ),
    finished: metrics.counter(
      "sightline_discovery_tasks_finished_total",
      "Discovery tasks this process completed, by module.",
      ["module"],
    ),
    failed: metrics.counter(
      "sightline_discovery_tasks_failed_total",
      "Attempts of discovery tasks that failed in this process (retried, or failing their run), by module.",
      ["module"],
    ),
  };
}

export type CancelOutcome = "cancelled" | "ended" | "finishing";

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

export class RunCoordinator implements JobHandler {
  readonly repository: RunsRepository;
  readonly queue: RunQueue;
  readonly worker: string;
  log: RunLog;
  private readonly work: RunWork;
  private readonly timeLimitSeconds: number;
  private readonly taskAttempts: number;
  private readonly inFlight: InFlight;
  private readonly infos = new Map<number, RunInfo>();
  /** Rows of runs with tasks here, as last read (RUN_ROW_FRESH_MS). */
  private readonly runRows = new Map<number, { row: RunRow; readAt: number }>();
  private readonly hooks: RunHook[];
  private readonly counters: TaskCounters;
  /** Tasks whose last attempt here was cut short by an outage: their next start does not count. */
  private readonly outageCut = new Set<number>();
  private stopping = false;
  /** Runs whose finish this process claimed and could not complete for an outage: retried by their next job. */
  private readonly finishCut = new Set<number>();
  /** Ended runs whose task rows this process is clearing, one at a time, in the background (`clearEnded`). */
  private readonly clearing = new Set<number>();
  private cleared: Promise<void> = Promise.resolve();
  /** Completions of tasks without follow-ups, written with the next task's start. */
  private readonly riding: RidingCompletions;

  constructor(options: CoordinatorOptions) {
    this.repository = options.repository;
    this.queue = options.queue;
    this.work = options.work;
    this.worker = options.worker;
    this.timeLimitSeconds = options.timeLimitSeconds;
    this.taskAttempts = options.taskAttempts;
    this.log = options.log ?? SILENT;
    this.hooks = options.hooks ?? [];
    this.counters = taskCounters(options.metrics);
    this.riding = new RidingCompletions(options.repository, options.worker);
    this.inFlight = new InFlight({
      watch: (runIds) => this.watch(runIds),
      pollMs: WATCH_MS,
      onError: (error) => this.log.warn(`checking runs in flight failed: ${error.message}`),
    });
  }

  // --- control ----------------------------------------------------------------------------------------

  /** A forced run of the collection, or the run already queued or started (`created: false`). */
  async force(collectionId: number): Promise<{ run: RunRow; created: boolean }> {
    // The active run may end between a refused insert and the look-up; then the insert succeeds next time.
    for (let attempt = 0; attempt < 5; attempt++) {
      const created = await this.repository.create(collectionId, "forced", FORCED_PRIORITY);
      if (created) {
        this.dispatch(created);
        return { run: created, created: true };
      }
      const active = await this.repository.active(collectionId);
      if (active) return { run: active, created: false };
    }
    throw new Error(`could not create a run for collection ${collectionId}: it keeps changing`);
  }

  /** Hands a queued run to the queue. Never waits on it: a queue that is down delays the run, not the caller. */
  dispatch(run: RunRow): void {
    this.queue
      .enqueue([{ kind: "start", runId: run.id, priority: run.priority }])
      .catch((error) =>
        this.log.warn(`run ${run.id} stays queued until the queue takes it: ${messageOf(error)}`),
      );
  }

  async cancel(runId: number, reason: string): Promise<CancelOutcome> {
    if (await this.repository.end(runId, "cancelled", reason)) {
      this.ended(runId, new RunEnded(runId, reason));
      this.clearEnded(runId);
      return "cancelled";
    }
    const run = await this.repository.get(runId);
    return run?.status === "started" && run.finishing_at ? "finishing" : "ended";
  }

  /** Fails the run (if still active) and stops its work here; other processes notice within a second. */
  async fail(runId: number, reason: string, options: { finishing?: boolean } = {}): Promise<void> {
    const failed = await this.repository.end(runId, "failed", reason, options);
    if (failed) {
      this.log.warn(`run ${runId} failed: ${reason}`);
      this.notify(runId, "failed");
    }
    this.ended(runId, new RunEnded(runId, reason));
    if (failed) this.clearEnded(runId);
  }

  /**
   * Once a run has ended here: its task bookkeeping goes, in the background (a /16's takes a while, in
   * batches that serve the event loop), one run at a time. What is kept is which worker did how many
   * tasks (`RunsRepository.workersOf`). A run whose clearing is cut short is finished by `clearAllEnded`.
   */
  clearEnded(runId: number): void {
    if (this.stopping || this.clearing.has(runId)) return;
    this.clearing.add(runId);
    this.cleared = this.cleared.then(async () => {
      try {
        await this.repository.clearEnded(runId, { stopping: () => this.stopping });
      } catch (error) {
        this.log.warn(
          `clearing the tasks of run ${runId} failed (the scheduler tries again): ${messageOf(error)}`,
        );
      } finally {
        this.clearing.delete(runId);
      }
    });
  }

  /** Settles when the clearing of every run handed to `clearEnded` so far is over (for tests and benchmarks). */
  whenCleared(): Promise<void> {
    return this.cleared;
  }

  /** Clears the ended runs that still hold task rows (cut short, written to late, or from before); answers how many. */
  async clearAllEnded(): Promise<number> {
    const runIds = await this.repository.endedWithTasks();
    for (const runId of runIds) this.clearEnded(runId);
    return runIds.length;
  }

  /** Fails every run past its time limit (and any that died while saving its results). */
  async expireOverdue(): Promise<number> {
    const now = Date.now();
    const finishingBefore = new Date(now - this.timeLimitSeconds * 1000).toISOString();
    const overdue = await this.repository.overdue(new Date(now).toISOString(), finishingBefore);
    for (const run of overdue) await this.expire(run);
    return overdue.length;
  }

  /**
   * Fails every started run whose working tables the database lost (a PostgreSQL crash empties its
   * unlogged tables, store/working-marks.ts): what its tasks had done and staged is gone, and finishing
   * on the rest would publish a partial result as complete.
   */
  async failLost(): Promise<number> {
    const lost = await this.repository.lostWorkingTables();
    for (const run of lost)
      await this.fail(run.id, WORKING_TABLES_LOST, { finishing: run.finishing_at !== null });
    return lost.length;
  }

  /**
   * Re-queues work that may have no job: in-process at start (`includeRunning`: tasks that were running,
   * or a finish that was under way, when the process died), and periodically for a durable queue (a job
   * lost between the store and Redis).
   */
  async resume(runs: RunRow[], options: { includeRunning?: boolean } = {}): Promise<void> {
    for (const run of runs) {
      if (run.status === "queued") this.dispatch(run);
      else if (run.status === "started") {
        // Only an embedded restart may take over a finish that died half-way: no other process runs it.
        if (options.includeRunning && run.finishing_at) await this.repository.unclaimFinish(run.id);
        await this.continueRun(run, { ...options, revive: true });
      }
    }
  }

  // --- execution --------------------------------------------------------------------------------------

  /**
   * Does a job. Any failure while the database does not answer is an outage, not the job's fault: it is
   * deferred (tried again later, as often as it takes, without using up an attempt).
   */
  async run(job: RunJob, slot?: TaskSlot): Promise<void> {
    try {
      if (job.kind === "start") await this.startRun(job.runId);
      else await this.runTask(job.runId, job.taskId, slot);
    } catch (error) {
      if (error instanceof HandBack || error instanceof Deferred) throw error;
      if (!(await this.repository.reachable())) throw new Deferred(error);
      throw error;
    }
  }

  async failed(job: RunJob, error: Error): Promise<void> {
    const what = job.kind === "start" ? "Planning the run" : `Task ${job.taskId}`;
    await this.fail(job.runId, `${what} failed and will not be retried: ${error.message}`);
  }

  /** Stops taking jobs, lets tasks in flight finish for up to `graceMs`, then hands the rest back. */
  async shutdown(graceMs: number): Promise<void> {
    this.stopping = true;
    this.queue.stop();
    await this.inFlight.drained(graceMs);
    this.inFlight.abortAll(new ShuttingDown());
    await this.queue.close();
    this.inFlight.close();
    // Clearing stops between two batches; the next process's scheduler finishes it.
    await this.cleared;
  }

  private async startRun(runId: number): Promise<void> {
    let run = await this.repository.get(runId);
    if (run?.status === "queued") {
      const info = await this.info(runId);
      const tasks = info ? await this.work.plan(info) : [];
      const deadline = new Date(Date.now() + this.timeLimitSeconds * 1000).toISOString();
      if (info && (await this.repository.start(runId, tasks, deadline))) {
        this.log.info(`run ${runId} of ${info.collectionName} started with ${tasks.length} tasks`);
      }
      run = await this.repository.get(runId);
    }
    if (run?.status !== "started") {
      this.queue.runEnded(runId);
      return;
    }
    await this.continueRun(run);
  }

  /** Queues the run's unfinished tasks (the queue drops ids it already holds), or finishes it when none is left. */
  private async continueRun(
    run: RunRow,
    options: { includeRunning?: boolean; revive?: boolean } = {},
  ): Promise<void> {
    const ids = await this.repository.unfinishedTaskIds(run.id, options);
    if (ids.length === 0) await this.tryFinish(run.id);
    else
      await this.queue.enqueue(
        ids.map((taskId) => ({ kind: "task", runId: run.id, taskId, priority: run.priority })),
        { revive: options.revive },
      );
  }

  /** The run's row, read at most RUN_ROW_FRESH_MS ago (by a task's start or the watch). */
  private async freshRun(runId: number): Promise<RunRow | undefined> {
    const known = this.runRows.get(runId);
    if (known && Date.now() - known.readAt < RUN_ROW_FRESH_MS) return known.row;
    const row = await this.repository.get(runId);
    this.rememberRun(runId, row);
    return row;
  }

  private rememberRun(runId: number, row: RunRow | undefined): void {
    if (row?.status !== "started" || row.finishing_at) {
      this.runRows.delete(runId);
      return;
    }
    if (this.runRows.size >= 1000) this.runRows.clear();
    this.runRows.set(runId, { row, readAt: Date.now() });
  }

  private async runTask(runId: number, taskId: number, slot?: TaskSlot): Promise<void> {
    const run = await this.freshRun(runId);
    if (run?.status === "started" && run.finishing_at && this.finishCut.has(runId)) {
      await this.completeFinish(runId);
      return;
    }
    if (run?.status !== "started" || run.finishing_at) {
      if (run?.status !== "started") this.ended(runId);
      return;
    }
    if (run.deadline_at && run.deadline_at < nowIso()) {
      await this.expire(run);
      return;
    }
    const task = await this.riding.begin(taskId, { uncounted: this.outageCut.delete(taskId) });
    if (!task) {
      // A repeated job of a done task: its worker may have died before queueing the follow-ups.
      await this.continueRun(run);
      return;
    }
    if (task.attempts > this.taskAttempts) {
      await this.fail(
        runId,
        `Task "${task.key}" was started ${task.attempts - 1} times and its worker stopped each time; the run was stopped.`,
      );
      return;
    }
    const info = await this.info(runId);
    if (!info) return;
    // A task that waits gives its slot back once it has gone on for a while: one that ends at once (a
    // refused or answering address) keeps it, so quick tasks do not crowd the thread beyond the slots.
    const release =
      slot && this.work.waits?.(task.kind) ? setTimeout(() => slot.release(), WAITING_AFTER_MS) : undefined;
    const module = { module: task.kind };
    this.counters.started.inc(module);
    const lease = this.inFlight.begin(runId);
    let outcome: TaskOutcome;
    try {
      try {
        const result = await this.work.execute(task, info, lease.signal);
        outcome = Array.isArray(result) ? { followUps: result } : result;
      } catch (error) {
        await this.taskFailed(run, task, error, lease.signal);
        return;
      } finally {
        clearTimeout(release);
        lease.end();
      }
      if (lease.signal.reason instanceof RunEnded) {
        await this.repository.releaseTask(task.id);
        return;
      }
    } catch (error) {
      if (!(error instanceof HandBack) && !(await this.repository.reachable())) {
        // The attempt met an outage (the work's own writes, or recording its failure): not its fault.
        this.remember(this.outageCut, task.id);
        throw new Deferred(error);
      }
      throw error;
    }
    // Done, even if a shutdown began meanwhile: keep the work. Should the database be down, the job is
    // deferred and the task done again, not counted.
    let recorded: { added: number[]; completed: boolean };
    const found = outcome.found as StagingRows | undefined;
    try {
      // A task gives its slot back and its completion rides with the next task's start, with its
      // follow-ups, unless it is large (riding-completions.ts); the embedded queue's slots are the only
      // ones that can be given.
      if (mayRide(outcome.followUps, found) && slot?.release())
        recorded = await this.riding.ride({ runId, taskId: task.id, found, followUps: outcome.followUps });
      else
        recorded = await this.repository.completeTask(runId, task.id, outcome.followUps, this.worker, found);
    } catch (error) {
      if (!(await this.repository.reachable())) this.remember(this.outageCut, task.id);
      throw error;
    }
    const { added, completed } = recorded;
    // Follow-ups this call added are queued here even when another worker completed the task meanwhile:
    // that worker found them in the run already and queues none of them.
    if (completed) this.counters.finished.inc(module);
    if (added.length > 0)
      await this.queue.enqueue(
        added.map((id) => ({ kind: "task", runId, taskId: id, priority: run.priority })),
      );
    else if (completed) {
      // While this queue holds jobs of the run whose tasks are not done, the run cannot finish: the last
      // of them tries (a statement saved for nearly every task of an embedded run). Said and asked in
      // one synchronous step, so of two tasks ending together the second always sees the first done.
      slot?.taskDone?.();
      if (!this.queue.holdsUndoneJobsOf?.(runId)) await this.tryFinish(runId);
    }
  }

  private async taskFailed(
    run: RunRow,
    task: { id: number; key: string; kind: string; attempts: number },
    error: unknown,
    signal: AbortSignal,
  ): Promise<void> {
    if (signal.aborted) {
      const shutdown = signal.reason instanceof ShuttingDown;
      await this.repository.releaseTask(task.id, { refund: shutdown });
      if (shutdown) throw new HandBack();
      return;
    }
    const message = messageOf(error);
    this.counters.failed.inc({ module: task.kind });
    await this.repository.releaseTask(task.id, { error: message });
    if (task.attempts >= this.taskAttempts) {
      await this.fail(
        run.id,
        `Task "${task.key}" failed ${task.attempts} time${task.attempts === 1 ? "" : "s"}; last error: ${message}`,
      );
      return;
    }
    throw error; // the queue retries it after a backoff
  }

  /** The one process whose claim wins calls `finish`; only then does the run become finished. */
  private async tryFinish(runId: number): Promise<void> {
    this.runRows.delete(runId);
    if (!(await this.repository.claimFinish(runId))) return;
    await this.completeFinish(runId);
  }

  /**
   * The finish itself, once claimed. An outage meanwhile: this process keeps the claim and its job and
   * waits for the database (up to FINISH_PATIENCE_MS), since no other process may take over a claimed
   * finish; past that, or when shutting down, the job is deferred and this process's next try of it
   * finishes the run.
   */
  private async completeFinish(runId: number): Promise<void> {
    const since = Date.now();
    for (let tries = 1; ; tries++) {
      try {
        await this.finishOnce(runId);
        this.finishCut.delete(runId);
        return;
      } catch (error) {
        if (await this.repository.reachable()) throw error;
        if (this.stopping || Date.now() - since > FINISH_PATIENCE_MS) {
          this.remember(this.finishCut, runId);
          throw new Deferred(error);
        }
        if (tries === 1) this.log.warn(`run ${runId} waits for the database to save its results`);
        await sleep(deferDelay(tries));
      }
    }
  }

  private async finishOnce(runId: number): Promise<void> {
    // Read afresh, not from the cache of the run's start: the finish is told how many tasks the run had.
    const info = await this.repository.info(runId);
    if (await this.repository.workingTablesLost(runId)) {
      await this.fail(runId, WORKING_TABLES_LOST, { finishing: true });
      return;
    }
    try {
      if (info) await this.work.finish(info);
    } catch (error) {
      if (!(await this.repository.reachable())) throw error;
      await this.fail(runId, `Saving the run's results failed: ${messageOf(error)}`, { finishing: true });
      return;
    }
    const finished = await this.repository.markFinished(runId);
    if (finished) {
      this.log.info(`run ${runId} finished`);
      this.notify(runId, "finished");
    }
    this.ended(runId);
    if (finished) this.clearEnded(runId);
  }

  private remember(set: Set<number>, id: number): void {
    if (set.size >= 10_000) set.clear();
    set.add(id);
  }

  private async expire(run: RunRow): Promise<void> {
    const limit =
      run.deadline_at && run.started_at
        ? Math.round((Date.parse(run.deadline_at) - Date.parse(run.started_at)) / 1000)
        : this.timeLimitSeconds;
    const reason = run.finishing_at
      ? `The run stopped while saving its results and did not recover within ${limit} seconds.`
      : `The run exceeded its time limit of ${limit} seconds (SIGHTLINE_RUN_TIME_LIMIT) and was stopped; earlier results are kept.`;
    await this.fail(run.id, reason, { finishing: run.finishing_at !== null });
  }

  /** For the tasks in flight here: which runs ended elsewhere or ran out of time. */
  private async watch(runIds: number[]): Promise<RunEnded[]> {
    const rows = await this.repository.statuses(runIds);
    for (const runId of runIds) this.rememberRun(runId, rows.get(runId));
    const now = nowIso();
    const ended: RunEnded[] = [];
    for (const runId of runIds) {
      const run = rows.get(runId);
      if (run?.status === "started" && run.deadline_at && run.deadline_at < now && !run.finishing_at) {
        await this.expire(run);
      } else if (run?.status !== "started") {
        ended.push(new RunEnded(runId, `run ${runId} is ${run?.status ?? "gone"}`));
      }
    }
    return ended;
  }

  private notify(runId: number, status: "finished" | "failed"): void {
    for (const hook of this.hooks)
      hook
        .runEnded(runId, status)
        .catch((error) => this.log.warn(`after run ${runId} ${status}: ${messageOf(error)}`));
  }

  /** Local clean-up once a run is over: abort its tasks here and free its queue slot. */
  private ended(runId: number, reason?: RunEnded): void {
    if (reason) this.inFlight.abortRun(runId, reason);
    this.queue.runEnded(runId);
    this.infos.delete(runId);
    this.runRows.delete(runId);
  }

  private async info(runId: number): Promise<RunInfo | undefined> {
    let info = this.infos.get(runId);
    if (!info) {
      info = await this.repository.info(runId);
      // Runs that ended in other processes never say so here; keep the cache small instead.
      if (this.infos.size >= 1000) this.infos.clear();
      if (info) this.infos.set(runId, info);
    }
    return info;
  }
}
