/** The `sightline` command. */
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { ConfigError, loadConfig } from "../core/config.ts";
import { openStore } from "../store/database.ts";
import { migrateToLatest } from "../store/migrate.ts";
import { registerAdminCommands } from "./admin.ts";
import { registerAuditCommands } from "./audit.ts";
import { registerCollectionCommands } from "./collections.ts";
import { registerExportCommand } from "./export.ts";
import { registerFingerprintCommands } from "./fingerprints.ts";
import { registerIpdbCommands } from "./ipdb.ts";
import { CliError } from "./output.ts";
import { registerRunCommands } from "./runs.ts";
import { registerSourceCommands } from "./sources.ts";
import { registerTemplateCommands } from "./templates.ts";
import { registerVulndbCommands } from "./vulndb.ts";

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

/** The version of package.json, which CHANGELOG.md follows. */
const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  version: string;
};

const program = new Command("sightline")
  .description("Sightline: self-hosted attack-surface management")
  .version(version, "-V, --version", "print the version")
  .showHelpAfterError()
  .exitOverride();

program
  .command("serve")
  .description("run the API server (and, without REDIS_URL, the runs in-process)")
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
  .description("execute run tasks from the BullMQ queue (needs REDIS_URL and DATABASE_URL); start any number")
  .option("--metrics-port <port>", "serve Prometheus metrics at GET /metrics on this port")
  .option("--metrics-host <address>", "the address the metrics port listens on (default: HOST)")
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

program
  .command("migrate")
  .description("bring the database schema up to date")
  .action(async () => {
    const store = openStore(loadConfig());
    try {
      const applied = await migrateToLatest(store);
      console.log(applied.length ? `Applied: ${applied.join(", ")}` : "The schema is up to date.");
    } finally {
      await store.close();
    }
  });

registerAdminCommands(program);
registerAuditCommands(program);
registerRunCommands(program);
registerSourceCommands(program);
registerCollectionCommands(program);
registerExportCommand(program);
registerVulndbCommands(program);
registerIpdbCommands(program);
registerFingerprintCommands(program);
registerTemplateCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : 2;
  } else if (error instanceof CliError || error instanceof ConfigError) {
    console.error(`sightline: ${error.message}`);
    process.exitCode = error instanceof CliError ? error.exitCode : 2;
  } else {
    console.error(`sightline: ${(error as Error).message}`);
    process.exitCode = 1;
  }
}
