/**
 * `sightline worker`: executes run tasks from the BullMQ queue. Start any number, on any machine that
 * reaches the server's Redis and PostgreSQL; they share every run task by task.
 */
import type { Services } from "../api/context.ts";
import { type Config, ConfigError } from "../config.ts";
import { openServices } from "../services.ts";
import { createWebhookSystem } from "../webhooks/system.ts";
import { describeRedis } from "./bullmq-queue.ts";
import type { RunLog } from "./coordinator.ts";
import { createRunSystem, type RunSystem } from "./runtime.ts";
import type { RunWork } from "./work.ts";
import { loadRunWork } from "./work-loader.ts";

export interface RunningWorker {
  services: Services;
  runs: RunSystem;
  /** host:pid, as recorded on the tasks this worker runs. */
  id: string;
  /** Stops taking tasks, lets those in flight finish within the shutdown grace, hands back the rest. */
  close(): Promise<void>;
}

const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"];

/** Log lines on stderr for a worker process, at or above the configured level. */
export function consoleLog(level: string): RunLog {
  const threshold = level === "silent" ? Number.POSITIVE_INFINITY : LEVELS.indexOf(level);
  const at = (name: string) => (message: string) => {
    if (LEVELS.indexOf(name) >= threshold) console.error(`${new Date().toISOString()} ${name}: ${message}`);
  };
  return { info: at("info"), warn: at("warn"), error: at("error") };
}

export async function startWorker(
  config: Config,
  options: {
    announce?: (line: string) => void;
    log?: RunLog;
    runWork?: (services: Services) => RunWork | Promise<RunWork>;
  } = {},
): Promise<RunningWorker> {
  if (!config.redisUrl)
    throw new ConfigError("sightline worker takes its tasks from Redis: set REDIS_URL to the server's Redis");
  if (!config.databaseUrl)
    throw new ConfigError(
      "sightline worker must share the server's database: set DATABASE_URL to its PostgreSQL",
    );
  const services = await openServices(config);
  try {
    const runs = createRunSystem(services, {
      role: "worker",
      work: await (options.runWork ?? loadRunWork)(services),
      // Runs a worker finishes or fails write their webhook events to the outbox; servers send them.
      hooks: [createWebhookSystem(services).hook],
    });
    await runs.start(options.log ?? consoleLog(config.logLevel));
    await runs.queue.ready();
    const id = runs.coordinator.worker;
    options.announce?.(
      `Worker ${id} is taking run tasks from ${describeRedis(config.redisUrl)} (up to ${config.taskConcurrency} at once).`,
    );
    return {
      services,
      runs,
      id,
      async close() {
        await runs.close();
        await services.store.close();
      },
    };
  } catch (error) {
    await services.store.close();
    throw error;
  }
}
