/**
 * The run machinery of one process, put together from the configuration:
 * - a server without REDIS_URL executes runs in-process (the embedded default) and schedules them;
 * - a server with REDIS_URL schedules and enqueues to BullMQ; `sightline worker` processes execute;
 * - a worker executes jobs from BullMQ and never schedules.
 */
import { hostname } from "node:os";
import type { HealthCheck } from "../core/health.ts";
import type { Metrics } from "../core/metrics.ts";
import type { RunWork } from "../core/run-work.ts";
import { RUN_STATUSES } from "../core/runs.ts";
import type { Services } from "../store/services.ts";
import { RunCoordinator, type RunHook, type RunLog } from "./coordinator.ts";
import { InProcessQueue } from "./in-process-queue.ts";
import type { RunQueue } from "./queue.ts";
import { Scheduler } from "./scheduler.ts";

/** First retry of a failed task after this long, doubling each time. */
const RETRY_BACKOFF_MS = 500;

export interface RunSystem {
  coordinator: RunCoordinator;
  queue: RunQueue;
  scheduler: Scheduler | undefined;
  healthChecks: Record<string, HealthCheck>;
  /** Starts executing and scheduling; `log` is where the machinery reports. */
  start(log: RunLog): Promise<void>;
  /** Stops scheduling and taking jobs; tasks in flight get the shutdown grace, then are handed back. */
  close(): Promise<void>;
}

export async function createRunSystem(
  services: Services,
  options: {
    role: "server" | "worker";
    work: RunWork;
    /** Registers runs by state, queue depth, task and discovery-error counters here (GET /metrics). */
    metrics?: Metrics;
    /** Told when a run ends here (webhooks). */
    hooks?: RunHook[];
  },
): Promise<RunSystem> {
  const { config } = services;
  const worker = `${hostname()}:${process.pid}`;
  // BullMQ and ioredis are loaded only when Redis is configured (pg only with PostgreSQL): 7 MB less live
  // heap in the embedded default's server, which every full collection must mark.
  const queue: RunQueue = config.redisUrl
    ? new (await import("./bullmq-queue.ts")).BullRunQueue({
        redisUrl: config.redisUrl,
        prefix: config.redisPrefix,
        taskConcurrency: config.taskConcurrency,
        attempts: config.taskAttempts,
        backoffMs: RETRY_BACKOFF_MS,
        stallSeconds: config.queueStallSeconds,
        workerName: worker,
        onError: (message) => coordinator.log.warn(message),
      })
    : new InProcessQueue({
        taskConcurrency: config.taskConcurrency,
        runConcurrency: config.runConcurrency,
        attempts: config.taskAttempts,
        backoffMs: RETRY_BACKOFF_MS,
        onError: (message) => coordinator.log.warn(message),
      });
  const coordinator = new RunCoordinator({
    repository: services.runs,
    queue,
    work: options.work,
    worker,
    timeLimitSeconds: config.runTimeLimitSeconds,
    taskAttempts: config.taskAttempts,
    hooks: options.hooks,
    metrics: options.metrics,
  });
  if (options.metrics) instrument(options.metrics, services, queue, options.work);
  const executes = options.role === "worker" || !queue.durable;
  const scheduler =
    options.role === "server"
      ? new Scheduler({
          repository: services.runs,
          coordinator,
          intervalSeconds: config.schedulerIntervalSeconds,
          requeueIdleAfterSeconds: queue.durable ? Math.max(60, 2 * config.queueStallSeconds) : undefined,
        })
      : undefined;

  return {
    coordinator,
    queue,
    scheduler,
    healthChecks: queue.healthChecks,
    async start(log) {
      coordinator.log = log;
      if (executes && !queue.durable) {
        // Nothing of the in-process queue survived the last process: rebuild it from the store.
        await coordinator.expireOverdue();
        await coordinator.failLost();
        await coordinator.resume(await services.runs.unfinished(), { includeRunning: true });
      }
      if (executes) queue.consume(coordinator);
      scheduler?.start();
    },
    async close() {
      await scheduler?.stop();
      await coordinator.shutdown(config.shutdownGraceSeconds * 1000);
      // Task counts not yet written (PostgreSQL); a run is recounted when it finishes anyway.
      await services.runs.writeCounts().catch(() => {});
      await options.work.close?.();
    },
  };
}

/** The run machinery's figures: runs by state (from the store), the queue's jobs, and the work's own. */
function instrument(metrics: Metrics, services: Services, queue: RunQueue, work: RunWork): void {
  metrics.gauge(
    "sightline_runs",
    "Runs by state, across every collection.",
    async () => {
      const counts = await services.runs.countByStatus();
      return RUN_STATUSES.map((state) => ({ labels: { state }, value: counts[state] }));
    },
    ["state"],
  );
  metrics.gauge(
    "sightline_queue_jobs",
    "Jobs of the run queue by state (waiting, running, delayed for a retry); BullMQ counts every worker's.",
    async () => {
      const depth = await queue.depth();
      return (["waiting", "running", "delayed"] as const).map((state) => ({
        labels: { queue: queue.kind, state },
        value: depth[state],
      }));
    },
    ["queue", "state"],
  );
  const { workersSeen } = queue;
  if (workersSeen)
    metrics.gauge(
      "sightline_workers",
      "sightline worker processes seen taking run tasks in the last 30 seconds (distributed mode).",
      async () => [{ labels: {}, value: await workersSeen.call(queue) }],
    );
  work.instrument?.(metrics);
}
