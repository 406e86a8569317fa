/** The `sightline` command. */
import { Command, CommanderError } from "commander";
import { registerAuditCommands } from "../audit/cli.ts";
import { ConfigError, loadConfig } from "../config.ts";
import { openStore } from "../store/database.ts";
import { migrateToLatest } from "../store/migrate.ts";
import { registerAdminCommands } from "./admin.ts";
import { registerCollectionCommands } from "./collections.ts";
import { registerExportCommand } from "./export.ts";
import { CliError } from "./output.ts";
import { registerRunCommands } from "./runs.ts";
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

const program = new Command("sightline")
  .description("Sightline: self-hosted attack-surface management")
  .showHelpAfterError()
  .exitOverride();

program
  .command("serve")
  .description("run the API server (and, without REDIS_URL, the runs in-process)")
  .action(async () => {
    const config = loadConfig();
    // Loaded on demand: client commands start faster without the server's dependencies.
    const { startServer } = await import("../server.ts");
    const server = await startServer(config, {
      logger: { level: config.logLevel },
      announce: (line) => console.log(line),
    });
    closeOnSignal("finishing in-flight requests and tasks, then shutting down.", () => server.close());
  });

program
  .command("worker")
  .description("execute run tasks from the BullMQ queue (needs REDIS_URL and DATABASE_URL); start any number")
  .action(async () => {
    const config = loadConfig();
    const { startWorker } = await import("../runs/worker.ts");
    const worker = await startWorker(config, { announce: (line) => console.log(line) });
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
registerCollectionCommands(program);
registerExportCommand(program);
registerVulndbCommands(program);

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
