/**
 * The distributed queue: every start and every task is a BullMQ job on Redis, so any number of
 * `sightline worker` processes share one run. Job priority is the run's priority (lower first). A worker
 * that dies holding jobs loses its locks; after `queueStallSeconds` another worker's stalled-job check
 * puts them back and they run again. The job id is the unit of work, so re-enqueueing is harmless.
 */
import { once } from "node:events";
import { DelayedError, Queue, WaitingError, Worker } from "bullmq";
import { Redis } from "ioredis";
import type { HealthCheck } from "../core/health.ts";
import {
  Deferred,
  deferDelay,
  HandBack,
  type JobHandler,
  jobId,
  type QueueDepth,
  type RunJob,
  type RunQueue,
  untilDone,
  WORKER_SEEN_SECONDS,
} from "./queue.ts";

export const QUEUE_NAME = "runs";

export interface BullQueueOptions {
  redisUrl: string;
  prefix: string;
  taskConcurrency: number;
  attempts: number;
  backoffMs: number;
  stallSeconds: number;
  /** Shown in Redis as the worker's name. */
  workerName: string;
  onError(message: string): void;
}

/** Jobs added per addBulk (one MULTI). */
const ENQUEUE_PIECE = 1_000;

/** Where Redis is, for sentences (never the password). */
export function describeRedis(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname === "/" ? "" : parsed.pathname}`;
}

export class BullRunQueue implements RunQueue {
  readonly kind = "bullmq";
  readonly durable = true;
  readonly healthChecks: Record<string, HealthCheck>;
  private readonly options: BullQueueOptions;
  private readonly producer: Queue;
  /** A plain client for health checks: it reports "down" at once instead of queueing the command. */
  private readonly probe: Redis;
  private worker: Worker | undefined;
  private closing: Promise<void> | undefined;
  /** Tries in a row deferred by an outage, by job id (in this process; the delay only). */
  private readonly deferrals = new Map<string, number>();
  private heartbeat: NodeJS.Timeout | undefined;
  private beat: (() => Promise<void>) | undefined;

  constructor(options: BullQueueOptions) {
    this.options = options;
    const connection = { url: options.redisUrl, maxRetriesPerRequest: null };
    this.producer = new Queue(QUEUE_NAME, {
      connection,
      prefix: options.prefix,
      defaultJobOptions: {
        attempts: options.attempts,
        backoff: { type: "exponential", delay: options.backoffMs },
        removeOnComplete: true,
        removeOnFail: { age: 7 * 24 * 3600 },
      },
    });
    this.producer.on("error", (error) => options.onError(`queue: ${error.message}`));
    this.probe = new Redis(options.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    this.probe.on("error", () => {});
    const where = describeRedis(options.redisUrl);
    this.healthChecks = {
      redis: async () => {
        try {
          const timeout = AbortSignal.timeout(1000);
          if (this.probe.status !== "ready") await once(this.probe, "ready", { signal: timeout });
          await withTimeout(this.probe.ping(), 1000);
          return { ok: true, detail: where };
        } catch (error) {
          return {
            ok: false,
            detail: `Redis at ${where} is unreachable (${(error as Error).message}); runs wait until it is back`,
          };
        }
      },
    };
  }

  async enqueue(jobs: RunJob[], options: { revive?: boolean } = {}): Promise<void> {
    if (jobs.length === 0) return;
    if (options.revive) {
      // Kept failed jobs would swallow the new ones of the same id: retry those instead.
      for (const job of jobs) {
        const held = await this.producer.getJob(jobId(job));
        if (held && (await held.getState()) === "failed") await held.retry("failed");
      }
    }
    // In pieces: one addBulk is one MULTI, built and written in one step, and a zone transfer's task queues
    // 60,000 follow-ups. A process that stops between pieces leaves tasks in the store without their
    // jobs, which the run's recovery queues again (as it does for a worker that died before queueing).
    for (let i = 0; i < jobs.length; i += ENQUEUE_PIECE)
      await this.producer.addBulk(
        jobs
          .slice(i, i + ENQUEUE_PIECE)
          .map((job) => ({ name: job.kind, data: job, opts: { jobId: jobId(job), priority: job.priority } })),
      );
  }

  consume(handler: JobHandler): void {
    const worker = new Worker<RunJob>(
      QUEUE_NAME,
      async (job, token) => {
        const id = jobId(job.data);
        try {
          await handler.run(job.data);
          this.deferrals.delete(id);
        } catch (error) {
          if (error instanceof Deferred) {
            // The database is down: try again later without counting an attempt (BullMQ counts none for
            // a job moved to delayed). Should Redis be down too, the move fails and the job's lock runs
            // out: it comes back as stalled, which is what happens to a worker that died.
            const tries = (this.deferrals.get(id) ?? 0) + 1;
            this.deferrals.set(id, tries);
            if (this.deferrals.size > 10_000) this.deferrals.clear();
            if (tries === 1) this.options.onError(`job ${id} waits: ${error.message}`);
            await job.moveToDelayed(Date.now() + deferDelay(tries), token);
            throw new DelayedError();
          }
          if (!(error instanceof HandBack)) throw error;
          // Back to waiting without counting an attempt; another worker (or this one, restarted) takes it.
          await job.moveToWait(token);
          throw new WaitingError();
        }
      },
      {
        connection: { url: this.options.redisUrl, maxRetriesPerRequest: null },
        prefix: this.options.prefix,
        name: this.options.workerName,
        concurrency: this.options.taskConcurrency,
        lockDuration: this.options.stallSeconds * 1000,
        stalledInterval: this.options.stallSeconds * 1000,
        // A job whose worker keeps dying comes back as often as a failing one; the coordinator counts
        // every start of a task and fails the run before BullMQ would give up on the job silently.
        maxStalledCount: this.options.attempts,
      },
    );
    worker.on("error", (error) => this.options.onError(`worker: ${error.message}`));
    worker.on("failed", (job, error) => {
      // Only a job that will not be retried (finishedOn set) ends badly; the run learns of it.
      // Recording it needs the database, which may be down right now: keep trying until it answers.
      if (job?.finishedOn)
        void untilDone(() => handler.failed(job.data, error), {
          stopped: () => this.closing !== undefined,
          onError: (failure, tries) => {
            if (tries === 1)
              this.options.onError(`recording that job ${job.id} failed waits: ${failure.message}`);
          },
        });
    });
    this.worker = worker;
    // Present while it lives: servers tell a run waiting for workers from one waiting for its turn.
    const key = this.presenceKey(this.options.workerName);
    const beat = async () => {
      if (this.probe.status !== "ready")
        await once(this.probe, "ready", { signal: AbortSignal.timeout(5000) });
      await this.probe.set(key, Date.now().toString(), "EX", WORKER_SEEN_SECONDS);
    };
    this.beat = () => beat().catch(() => {});
    void this.beat();
    this.heartbeat = setInterval(() => void this.beat?.(), (WORKER_SEEN_SECONDS * 1000) / 3);
    this.heartbeat.unref();
  }

  private presenceKey(worker: string): string {
    return `${this.options.prefix}:sightline-workers:${worker}`;
  }

  /** Workers whose presence key has not expired; bounded by the number of workers, not by jobs. */
  async workersSeen(): Promise<number> {
    let count = 0;
    let cursor = "0";
    do {
      const [next, keys] = await withTimeout(
        this.probe.scan(cursor, "MATCH", this.presenceKey("*"), "COUNT", 1000),
        1000,
      );
      count += keys.length;
      cursor = next;
    } while (cursor !== "0");
    return count;
  }

  /** Jobs of every run in Redis, whichever process holds them. */
  async depth(): Promise<QueueDepth> {
    const counts = await withTimeout(
      this.producer.getJobCounts("waiting", "prioritized", "active", "delayed"),
      1000,
    );
    return {
      waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
      running: counts.active ?? 0,
      delayed: counts.delayed ?? 0,
    };
  }

  /** Waiting jobs of an ended run stay in Redis until a worker takes them and finds the run over. */
  runEnded(): void {}

  stop(): void {
    clearInterval(this.heartbeat);
    if (this.heartbeat) void this.probe.del(this.presenceKey(this.options.workerName)).catch(() => {});
    this.heartbeat = undefined;
    this.closing ??= this.worker?.close();
  }

  async close(): Promise<void> {
    this.stop();
    await this.closing;
    await this.producer.close();
    this.probe.disconnect();
  }

  async ready(): Promise<void> {
    await this.producer.waitUntilReady();
    await this.worker?.waitUntilReady();
    await this.beat?.();
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
