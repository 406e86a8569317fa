/**
 * What a queue carries and the contract between a queue and the coordinator. Two queues implement it:
 * in-process (the embedded default) and BullMQ on Redis (distributed workers). A job only names a run
 * and a task; the store holds the truth, so a job delivered twice or late does no harm.
 */
import type { HealthCheck } from "../api/health.ts";

export type RunJob =
  /** Plan the run: queued → started with its first tasks. */
  | { kind: "start"; runId: number; priority: number }
  /** Execute one task of a started run. */
  | { kind: "task"; runId: number; taskId: number; priority: number };

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
 * The coordinator's side. `run` resolving means the job is done; throwing HandBack gives it back; any
 * other error is a failed attempt, retried with backoff up to the configured attempts, after which the
 * queue calls `failed` once.
 */
export interface JobHandler {
  run(job: RunJob): Promise<void>;
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
  enqueue(jobs: RunJob[]): Promise<void>;
  /** Starts taking jobs. A distributed server only enqueues and never calls this. */
  consume(handler: JobHandler): void;
  /** A run ended: free its run slot and drop its waiting jobs where the queue can. */
  runEnded(runId: number): void;
  /** Jobs by state, for /metrics: waiting (ready to run), running (in hand), delayed (backing off). */
  depth(): Promise<QueueDepth>;
  /** Stops taking new jobs; jobs in hand keep running. */
  stop(): void;
  /** Waits for the jobs in hand to settle and releases connections. */
  close(): Promise<void>;
}

/** Backoff before retry n (1-based) of a failed task. */
export function retryDelay(baseMs: number, retry: number): number {
  return baseMs * 2 ** (retry - 1);
}
