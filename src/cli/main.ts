/** The `sightline` command. */
import { Command, CommanderError } from "commander";
import { registerAuditCommands } from "../audit/cli.ts";
import { ConfigError, loadConfig } from "../config.ts";
import { startServer } from "../server.ts";
import { openStore } from "../store/database.ts";
import { migrateToLatest } from "../store/migrate.ts";
import { registerAdminCommands } from "./admin.ts";
import { CliError } from "./output.ts";
import { registerVulndbCommands } from "./vulndb.ts";

const program = new Command("sightline")
  .description("Sightline: self-hosted attack-surface management")
  .showHelpAfterError()
  .exitOverride();

program
  .command("serve")
  .description("run the API server (and, without REDIS_URL, the runs in-process)")
  .action(async () => {
    const config = loadConfig();
    const server = await startServer(config, {
      logger: { level: config.logLevel },
      announce: (line) => console.log(line),
    });
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      console.log(`${signal} received; finishing in-flight requests and shutting down.`);
      await server.close();
      process.exit(0);
    };
    process.on("SIGINT", () => void stop("SIGINT"));
    process.on("SIGTERM", () => void stop("SIGTERM"));
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
