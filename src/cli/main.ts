/** The `sightline` command. */
import { Command, CommanderError } from "commander";
import { describeBuild } from "../core/build-info.ts";
import { ConfigError } from "../core/config.ts";
import { registerCommands } from "./commands.ts";
import { CliError } from "./output.ts";

const program = new Command("sightline")
  .description("Sightline: self-hosted attack-surface management")
  .version(describeBuild(), "-V, --version", "print the release and the commit")
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
