/** `sightline audit list`: the audit log, newest first, for people (a table) or scripts (--json). */
import type { Command } from "commander";
import { loadConfig } from "../core/config.ts";
import { formatTimestamp } from "../core/formats.ts";
import { AuditLog } from "../store/audit.ts";
import { openServices } from "../store/services.ts";
import { CliError, type DataOptions, printedForScripts, show, withJsonLines } from "./output.ts";

export function registerAuditCommands(program: Command): void {
  const audit = program.command("audit").description("read the audit log of administrative actions");
  withJsonLines(
    audit
      .command("list")
      .description("who did what, when and from where: newest first")
      .option("--account <account>", "only this account's entries (id or name)")
      .option("--action <action>", "only this action, or a prefix ending with a dot (e.g. key.)")
      .option("--limit <n>", "at most this many entries", "100"),
  ).action(async (options: DataOptions & { account?: string; action?: string; limit: string }) => {
    const limit = Number(options.limit);
    if (!Number.isSafeInteger(limit) || limit < 1)
      throw new CliError("--limit must be a whole number ≥ 1", 2);
    if (options.action !== undefined && !/^[a-z.-]+$/.test(options.action))
      throw new CliError("--action must be an action such as key.revoke, or a prefix such as key.", 2);
    const services = await openServices(loadConfig());
    try {
      let accountId: number | undefined;
      if (options.account) {
        const account = await services.accounts.findAccount(options.account);
        if (!account) throw new CliError(`account "${options.account}" does not exist`);
        accountId = account.id;
      }
      const entries = await new AuditLog(services.store.db).list({
        accountId,
        action: options.action,
        limit,
      });
      if (printedForScripts(options, entries)) return;
      show(
        entries.map((entry) => ({
          ...entry,
          at: formatTimestamp(entry.at),
          details: JSON.stringify(entry.details),
        })),
        ["id", "at", "actor", "action", "target", "source", "request_id", "details"],
      );
    } finally {
      await services.store.close();
    }
  });
}
