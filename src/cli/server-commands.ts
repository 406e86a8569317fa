/**
 * The commands that run Sightline itself: `serve` (the API, the scheduler and, without Redis, the runs),
 * `worker` (run tasks from Redis) and `migrate`. Their help lists the settings they read.
 */
import type { Command } from "commander";
import { ENVIRONMENT, loadConfig } from "../core/config.ts";
import { openStore } from "../store/database.ts";
import { migrateToLatest } from "../store/migrate.ts";
import { CliError, printedForScripts, withJson } from "./output.ts";

/** On SIGINT/SIGTERM: say what happens, close, exit; a second signal exits at once. */
function closeOnSignal(what: string, close: () => Promise<void>): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      console.log(`${signal} received again; exiting now.`);
      process.exit(1);
    }
    stopping = true;
    console.log(`${signal} received; ${what}`);
    await close();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

/** The help's last part: where the settings come from, and every variable's name (from the schema). */
export function settingsHelp(width = 100): string {
  const lines = ["", "Settings (each described with its default in docs/configuration.md):"];
  lines.push(
    "  defaults, then sightline.config.json (or the file SIGHTLINE_CONFIG names), then these variables:",
  );
  let line = " ";
  for (const name of Object.keys(ENVIRONMENT)) {
    if (line.length + name.length + 1 > width) {
      lines.push(line);
      line = " ";
    }
    line += ` ${name}`;
  }
  lines.push(line);
  return lines.join("\n");
}

export function registerServerCommands(program: Command): void {
  program
    .command("serve")
    .description("run the API server (and, without REDIS_URL, the runs in-process)")
    .addHelpText("after", () => settingsHelp())
    .action(async () => {
      const config = loadConfig();
      // Loaded on demand: client commands start faster without the server's dependencies.
      const { startServer } = await import("../app/server.ts");
      const server = await startServer(config, {
        logger: { level: config.logLevel },
        announce: (line) => console.log(line),
      });
      closeOnSignal("finishing in-flight requests and tasks, then shutting down.", () => server.close());
    });

  program
    .command("worker")
    .description(
      "execute run tasks from the BullMQ queue (needs REDIS_URL and DATABASE_URL); start any number",
    )
    .option("--metrics-port <port>", "serve Prometheus metrics at GET /metrics on this port")
    .option("--metrics-host <address>", "the address the metrics port listens on (default: HOST)")
    .addHelpText("after", () => settingsHelp())
    .action(async (options: { metricsPort?: string; metricsHost?: string }) => {
      const config = loadConfig();
      const metricsPort = options.metricsPort === undefined ? undefined : Number(options.metricsPort);
      if (
        metricsPort !== undefined &&
        !(Number.isInteger(metricsPort) && metricsPort >= 0 && metricsPort <= 65535)
      )
        throw new CliError(
          `--metrics-port must be a port number from 0 to 65535, not "${options.metricsPort}"`,
          2,
        );
      const { startWorker } = await import("../app/worker.ts");
      const worker = await startWorker(config, {
        announce: (line) => console.log(line),
        metricsPort,
        metricsHost: options.metricsHost,
      });
      closeOnSignal(
        `finishing tasks in flight for up to ${config.shutdownGraceSeconds}s, then handing the rest back.`,
        () => worker.close(),
      );
    });

  withJson(program.command("migrate").description("bring the database schema up to date")).action(
    async (options: { json?: boolean }) => {
      const store = openStore(loadConfig());
      try {
        const applied = await migrateToLatest(store);
        if (printedForScripts(options, { applied })) return;
        console.log(applied.length ? `Applied: ${applied.join(", ")}` : "The schema is up to date.");
      } finally {
        await store.close();
      }
    },
  );
}
