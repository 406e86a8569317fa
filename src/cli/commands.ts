/** Every `sightline` command, registered on the program in the order `--help` lists them. */
import type { Command } from "commander";
import { registerAdminCommands } from "./admin.ts";
import { registerAuditCommands } from "./audit.ts";
import { registerCollectionCommands } from "./collections.ts";
import { registerCompletionCommand } from "./completion.ts";
import { registerExportCommand } from "./export.ts";
import { registerFingerprintCommands } from "./fingerprints.ts";
import { registerIpdbCommands } from "./ipdb.ts";
import { registerRunCommands } from "./runs.ts";
import { registerServerCommands } from "./server-commands.ts";
import { registerSourceCommands } from "./sources.ts";
import { registerTemplateCommands } from "./templates.ts";
import { registerVulndbCommands } from "./vulndb.ts";

export function registerCommands(program: Command): Command {
  registerServerCommands(program);
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
  registerCompletionCommand(program);
  return program;
}
