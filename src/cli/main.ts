/** The `sightline` command. */
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { ConfigError } from "../core/config.ts";
import { registerCommands } from "./commands.ts";
import { CliError } from "./output.ts";

/** The version of package.json, which CHANGELOG.md follows. */
const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  version: string;
};

const program = new Command("sightline")
  .description("Sightline: self-hosted attack-surface management")
  .version(version, "-V, --version", "print the version")
  .showHelpAfterError()
  .exitOverride();

registerCommands(program);

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
