/**
 * What a queue carries and the contract between a queue and the coordinator. Two queues implement it:
 * in-process (the embedded default) and BullMQ on Redis (distributed workers). A job only names a run
 * and a task; the store holds the truth, so a job delivered twice or late does no harm.
 */
import type { HealthCheck } from "../core/health.ts";

export type RunJob =
  /** Plan the run: queued → started with its first tasks. */
  | { kind: "start"; runId: number; priority: number }
  /** Execute one task of a started run. */
  | { kind: "task"; runId: number; taskId: number; priority: number };

/** A job's hold on one of the queue's task slots. */
export interface TaskSlot {
  release(): boolean;
  /** The job's task is done: the job no longer keeps its run from finishing (`holdsUndoneJobsOf`). */
  taskDone?(): void;
}

/** One id per unit of work, so a job enqueued again while it waits or runs is not added twice. */
export function jobId(job: RunJob): string {
  return job.kind === "start" ? `run-${job.runId}-start` : `run-${job.runId}-task-${job.taskId}`;
}

/** Thrown by a handler to give its job back untouched (shutdown); it does not count as an attempt. */
export class HandBack extends Error {
  constructor() {
    super("handed back: this process is shutting down");
    this.name = "HandBack";
  }
}

/**
 * Thrown by a handler when a dependency (the database) is unreachable: the job is tried again after a
 * backoff, as often as it takes, and the attempt does not count — an outage is nobody's fault and must
 * not use up a task's attempts or fail its run.
 */
export class Deferred extends Error {
  readonly cause: unknown;
  constructor(cause: unknown) {
    super(
      `deferred until the database answers again: ${cause instanceof Error ? cause.message : String(cause)}`,
    );
    this.name = "Deferred";
    this.cause = cause;
  }
}

/** Longest wait between two tries of a job deferred by an outage. */
export const MAX_DEFER_MS = 15_000;

/** Wait before try n (1-based) of a deferred job: doubling from 250 ms, at most MAX_DEFER_MS. */
export function deferDelay(tries: number): number {
  return Math.min(MAX_DEFER_MS, 250 * 2 ** Math.min(tries - 1, 16));
}

/**
 * Calls `attempt` until it resolves, waiting `deferDelay` between tries and reporting each failure; gives
 * up silently once `stopped()` (a process shutting down leaves the store to say what is left). Never
 * rejects: it is what a queue uses to tell the coordinator a job failed for good, which must not be lost
 * to a database that is down at that moment, nor take the process down.
 */
export async function untilDone(
  attempt: () => Promise<void>,
  options: { stopped(): boolean; onError(error: Error, tries: number): void },
): Promise<void> {
  for (let tries = 1; !options.stopped(); tries++) {
    try {
      await attempt();
      return;
    } catch (error) {
      options.onError(error instanceof Error ? error : new Error(String(error)), tries);
      await new Promise((resolve) => setTimeout(resolve, deferDelay(tries)).unref());
    }
  }
}

/**
 * The coordinator's side. `run` resolving means the job is done; throwing HandBack gives it back; any
 * other error is a failed attempt, retried with backoff up to the configured attempts, after which the
 * queue calls `failed` once (through `untilDone`: it may reject while the database is down); throwing
 * Deferred retries the job after `deferDelay` without counting an attempt.
 */
export interface JobHandler {
  /**
   * `slot`, where the queue offers it (the embedded queue): `release()` moves a job that will mostly
   * wait on the network out of the task slots into the pool of waiting jobs; false when that pool is full.
   */
  run(job: RunJob, slot?: TaskSlot): Promise<void>;
  failed(job: RunJob, error: Error): Promise<void>;
}

export interface QueueDepth {
  waiting: number;
  running: number;
  delayed: number;
}

export interface RunQueue {
  /** `in-process` or `bullmq`, as /metrics labels it. */
  readonly kind: string;
  /** Jobs outlive this process (in Redis); an in-process queue is rebuilt from the store at start. */
  readonly durable: boolean;
  /** Dependency checks for /healthz. */
  readonly healthChecks: Record<string, HealthCheck>;
  /** Resolves once connected (at once for the in-process queue). */
  ready(): Promise<void>;
  /**
   * Adds jobs; an id the queue holds already is not added twice. `revive`: a job of that id that failed
   * for good is tried again (a run resumed because its failure could not be recorded).
   */
  enqueue(jobs: RunJob[], options?: { revive?: boolean }): Promise<void>;
  /** Starts taking jobs. A distributed server only enqueues and never calls this. */
  consume(handler: JobHandler): void;
  /**
   * Whether this queue holds jobs of the run whose tasks are not done (waiting, backing off, or running
   * and not yet past `TaskSlot.taskDone`): the run cannot finish yet. Absent where the queue cannot
   * tell cheaply (a distributed queue's jobs are anywhere).
   */
  holdsUndoneJobsOf?(runId: number): boolean;
  /** A run ended: free its run slot and drop its waiting jobs where the queue can. */
  runEnded(runId: number): void;
  /** Jobs by state, for /metrics: waiting (ready to run), running (in hand), delayed (backing off). */
  depth(): Promise<QueueDepth>;
  /**
   * Worker processes seen taking jobs in the last WORKER_SEEN_SECONDS (a distributed queue's workers say
   * so in Redis); undefined where this process executes the runs itself.
   */
  workersSeen?(): Promise<number>;
  /** Stops taking new jobs; jobs in hand keep running. */
  stop(): void;
  /** Waits for the jobs in hand to settle and releases connections. */
  close(): Promise<void>;
}

/** Backoff before retry n (1-based) of a failed task. */
export function retryDelay(baseMs: number, retry: number): number {
  return baseMs * 2 ** (retry - 1);
}

/** How long a worker counts as present after it last said so. */
export const WORKER_SEEN_SECONDS = 30;
