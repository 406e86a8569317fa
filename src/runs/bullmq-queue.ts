/**
 * The distributed queue: every start and every task is a BullMQ job on Redis, so any number of
 * `sightline worker` processes share one run. Job priority is the run's priority (lower first). A worker
 * that dies holding jobs loses its locks; after `queueStallSeconds` another worker's stalled-job check
 * puts them back and they run again. The job id is the unit of work, so re-enqueueing is harmless.
 */
import { once } from "node:events";
import { Queue, WaitingError, Worker } from "bullmq";
import { Redis } from "ioredis";
import type { HealthCheck } from "../api/health.ts";
import { HandBack, type JobHandler, jobId, type QueueDepth, type RunJob, type RunQueue } from "./queue.ts";

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

  async enqueue(jobs: RunJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.producer.addBulk(
      jobs.map((job) => ({ name: job.kind, data: job, opts: { jobId: jobId(job), priority: job.priority } })),
    );
  }

  consume(handler: JobHandler): void {
    const worker = new Worker<RunJob>(
      QUEUE_NAME,
      async (job, token) => {
        try {
          await handler.run(job.data);
        } catch (error) {
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
      if (job?.finishedOn) void handler.failed(job.data, error);
    });
    this.worker = worker;
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
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
