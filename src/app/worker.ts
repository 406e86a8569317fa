/**
 * `sightline worker`: executes run tasks from the BullMQ queue. Start any number, on any machine that
 * reaches the server's Redis and PostgreSQL; they share every run task by task.
 */

import { hostname } from "node:os";
import pino from "pino";
import { type Config, ConfigError } from "../core/config.ts";
import type { RunWork } from "../core/run-work.ts";
import { describeRedis } from "../runs/bullmq-queue.ts";
import type { RunLog } from "../runs/coordinator.ts";
import { createRunSystem, type RunSystem } from "../runs/runtime.ts";
import type { Services } from "../store/services.ts";
import { openServices } from "../store/services.ts";
import { createWebhookSystem } from "../webhooks/system.ts";
import { MetricsRegistry, serveMetrics } from "./metrics.ts";
import { loadRunWork } from "./work-loader.ts";

export interface RunningWorker {
  services: Services;
  runs: RunSystem;
  /** host:pid, as recorded on the tasks this worker runs. */
  id: string;
  /** Where its metrics are served (with a metrics port). */
  metricsUrl?: string;
  /** Stops taking tasks, lets those in flight finish within the shutdown grace, hands back the rest. */
  close(): Promise<void>;
}

/**
 * Log lines of a worker process: pino's JSON on stdout, as the server writes them (src/api/logging.ts),
 * at or above the configured level, each with the worker's name.
 */
export function consoleLog(level: string, worker = `${hostname()}:${process.pid}`): RunLog {
  const log = pino({ level, base: { pid: process.pid, hostname: hostname(), worker } });
  return {
    info: (message) => log.info(message),
    warn: (message) => log.warn(message),
    error: (message) => log.error(message),
  };
}

export async function startWorker(
  config: Config,
  options: {
    announce?: (line: string) => void;
    log?: RunLog;
    runWork?: (services: Services) => RunWork | Promise<RunWork>;
    /** Serve GET /metrics on this port (0: any free one) of `metricsHost` (default: the configured host). */
    metricsPort?: number;
    metricsHost?: string;
  } = {},
): Promise<RunningWorker> {
  if (!config.redisUrl)
    throw new ConfigError("sightline worker takes its tasks from Redis: set REDIS_URL to the server's Redis");
  if (!config.databaseUrl)
    throw new ConfigError(
      "sightline worker must share the server's database: set DATABASE_URL to its PostgreSQL",
    );
  const log = options.log ?? consoleLog(config.logLevel);
  const services = await openServices(config, { waiting: (message) => log.warn(message) });
  const metrics = options.metricsPort === undefined ? undefined : new MetricsRegistry();
  let endpoint: Awaited<ReturnType<typeof serveMetrics>> | undefined;
  try {
    const runs = await createRunSystem(services, {
      metrics,
      role: "worker",
      work: await (options.runWork ?? loadRunWork)(services),
      // Runs a worker finishes or fails write their webhook events to the outbox; servers send them.
      hooks: [createWebhookSystem(services).hook],
    });
    await runs.start(log);
    await runs.queue.ready();
    const id = runs.coordinator.worker;
    if (metrics)
      endpoint = await serveMetrics(metrics, {
        host: options.metricsHost ?? config.host,
        port: options.metricsPort!,
        token: config.metricsToken,
      });
    if (endpoint) options.announce?.(`Worker metrics: ${endpoint.url}`);
    options.announce?.(
      `Worker ${id} is taking run tasks from ${describeRedis(config.redisUrl)} (up to ${config.taskConcurrency} at once).`,
    );
    return {
      services,
      runs,
      id,
      metricsUrl: endpoint?.url,
      async close() {
        await endpoint?.close();
        await runs.close();
        await services.store.close();
      },
    };
  } catch (error) {
    await endpoint?.close();
    await services.store.close();
    throw error;
  }
}
