/**
 * Administration against the store directly (the operator's side): accounts, teams, users, keys.
 * Each command opens the configured store, does one thing, and closes it.
 */
import type { Command } from "commander";
import { loadConfig } from "../core/config.ts";
import { recordCliAction } from "../store/audit.ts";
import { ACCOUNT_STATUSES, type AccountStatus } from "../store/schema.ts";
import type { Services } from "../store/services.ts";
import { openServices } from "../store/services.ts";
import { CliError, type DataOptions, output, withJsonLines } from "./output.ts";

type Json = DataOptions;

async function withServices<T>(work: (services: Services) => Promise<T>): Promise<T> {
  const services = await openServices(loadConfig());
  try {
    return await work(services);
  } finally {
    await services.store.close();
  }
}

function checkStatus(status: string): AccountStatus {
  if (!(ACCOUNT_STATUSES as readonly string[]).includes(status)) {
    throw new CliError(`status must be one of ${ACCOUNT_STATUSES.join(", ")}, not "${status}"`, 2);
  }
  return status as AccountStatus;
}

const NAME = /^[a-zA-Z0-9_.@-]{1,64}$/;
function checkName(kind: string, name: string): string {
  if (!NAME.test(name))
    throw new CliError(`${kind} name must be 1–64 characters of letters, digits and _ . @ -`, 2);
  return name;
}

async function need<T>(value: Promise<T | undefined>, what: string): Promise<T> {
  const found = await value;
  if (!found) throw new CliError(`${what} does not exist`);
  return found;
}

/** Unique-constraint violations from either dialect become a sentence. */
async function unique<T>(work: Promise<T>, what: string): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (/unique|duplicate/i.test((error as Error).message)) throw new CliError(`${what} already exists`);
    throw error;
  }
}

export function registerAdminCommands(program: Command): void {
  const accounts = program.command("accounts").description("manage accounts (customers) and their status");
  accounts
    .command("create <name>")
    .description("create an account with its first team (named like the account)")
    .option("--status <status>", `one of ${ACCOUNT_STATUSES.join(", ")}`, "trial")
    .option("--json", "print JSON")
    .action(async (name: string, options: Json & { status: string }) => {
      const status = checkStatus(options.status);
      checkName("account", name);
      await withServices(async ({ accounts }) => {
        const account = await unique(accounts.createAccount(name, status), `account "${name}"`);
        const team = await accounts.createTeam(account.id, name);
        await recordCliAction(accounts.db, {
          action: "account.create",
          accountId: account.id,
          target: `account:${name}`,
          details: { status, team_id: team.id },
        });
        output(options, {
          id: account.id,
          name: account.name,
          status: account.status,
          team_id: team.id,
        });
      });
    });
  withJsonLines(accounts.command("list").description("every account")).action(async (options: Json) => {
    await withServices(async ({ accounts }) => output(options, await accounts.listAccounts()));
  });
  accounts
    .command("update <account>")
    .description("change an account's status (by id or name)")
    .requiredOption("--status <status>", `one of ${ACCOUNT_STATUSES.join(", ")}`)
    .option("--json", "print JSON")
    .action(async (ref: string, options: Json & { status: string }) => {
      const status = checkStatus(options.status);
      await withServices(async ({ accounts }) => {
        const account = await need(accounts.findAccount(ref), `account "${ref}"`);
        await accounts.setAccountStatus(account.id, status);
        await recordCliAction(accounts.db, {
          action: "account.update",
          accountId: account.id,
          target: `account:${account.name}`,
          details: { status, previous_status: account.status },
        });
        output(options, { id: account.id, name: account.name, status });
      });
    });

  const teams = program.command("teams").description("manage teams and their members");
  teams
    .command("create <name>")
    .requiredOption("--account <account>", "account id or name")
    .option("--json", "print JSON")
    .action(async (name: string, options: Json & { account: string }) => {
      checkName("team", name);
      await withServices(async ({ accounts }) => {
        const account = await need(accounts.findAccount(options.account), `account "${options.account}"`);
        const team = await unique(accounts.createTeam(account.id, name), `team "${name}" in that account`);
        await recordCliAction(accounts.db, {
          action: "team.create",
          accountId: account.id,
          target: `team:${team.id}`,
          details: { name },
        });
        output(options, team);
      });
    });
  withJsonLines(
    teams
      .command("list")
      .description("every team")
      .option("--account <account>", "only this account's teams"),
  ).action(async (options: Json & { account?: string }) => {
    await withServices(async ({ accounts }) => {
      const account = options.account
        ? await need(accounts.findAccount(options.account), `account "${options.account}"`)
        : undefined;
      output(options, await accounts.listTeams(account?.id));
    });
  });
  for (const [verb, description] of [
    ["add-member", "add a user to a team"],
    ["remove-member", "remove a user from a team"],
  ] as const) {
    teams
      .command(`${verb} <team> <user>`)
      .description(description)
      .option("--json", "print JSON")
      .action(async (teamRef: string, userRef: string, options: Json) => {
        await withServices(async ({ accounts }) => {
          const team = await need(accounts.findTeam(teamRef), `team "${teamRef}"`);
          const user = await need(accounts.findUser(userRef), `user "${userRef}"`);
          if (team.account_id !== user.account_id)
            throw new CliError("the user and the team belong to different accounts");
          if (verb === "add-member") await accounts.addMember(team.id, user.id);
          else await accounts.removeMember(team.id, user.id);
          await recordCliAction(accounts.db, {
            action: verb === "add-member" ? "team.add-member" : "team.remove-member",
            accountId: team.account_id,
            target: `team:${team.id}`,
            details: { user: user.name, user_id: user.id },
          });
          output(options, { team_id: team.id, user_id: user.id, member: verb === "add-member" });
        });
      });
  }

  const users = program.command("users").description("manage users");
  users
    .command("create <name>")
    .requiredOption("--team <team>", "the user's first (default) team, id or name")
    .option("--admin", "an administrator")
    .option("--no-key", "do not issue a key pair now")
    .option("--json", "print JSON")
    .action(async (name: string, options: Json & { team: string; admin?: boolean; key: boolean }) => {
      checkName("user", name);
      await withServices(async ({ accounts }) => {
        const team = await need(accounts.findTeam(options.team), `team "${options.team}"`);
        const user = await unique(
          accounts.createUser(team.account_id, name, team.id, options.admin),
          `user "${name}"`,
        );
        const key = options.key ? await accounts.issueKey(user.id) : undefined;
        await recordCliAction(accounts.db, {
          action: "user.create",
          accountId: user.account_id,
          target: `user:${user.name}`,
          details: { team_id: team.id, admin: Boolean(options.admin), access_key: key?.accessKey ?? null },
        });
        output(options, {
          id: user.id,
          name: user.name,
          account_id: user.account_id,
          team_id: team.id,
          ...(key ? { access_key: key.accessKey, secret_key: key.secretKey } : {}),
        });
      });
    });
  withJsonLines(users.command("list").description("every user")).action(async (options: Json) => {
    await withServices(async ({ accounts }) => output(options, await accounts.listUsers()));
  });

  const keys = program.command("keys").description("manage API key pairs");
  keys
    .command("create <user>")
    .description("issue a key pair for a user; the secret is printed once")
    .option("--json", "print JSON")
    .action(async (userRef: string, options: Json) => {
      await withServices(async ({ accounts }) => {
        const user = await need(accounts.findUser(userRef), `user "${userRef}"`);
        const key = await accounts.issueKey(user.id);
        await recordCliAction(accounts.db, {
          action: "key.create",
          accountId: user.account_id,
          target: `key:${key.accessKey}`,
          details: { user: user.name },
        });
        output(options, {
          id: key.id,
          user: user.name,
          access_key: key.accessKey,
          secret_key: key.secretKey,
        });
      });
    });
  withJsonLines(
    keys
      .command("list")
      .description("every key pair (never a secret)")
      .option("--user <user>", "only this user's keys"),
  ).action(async (options: Json & { user?: string }) => {
    await withServices(async ({ accounts }) => {
      const user = options.user
        ? await need(accounts.findUser(options.user), `user "${options.user}"`)
        : undefined;
      output(options, await accounts.listKeys(user?.id));
    });
  });
  keys
    .command("revoke <key>")
    .description("revoke a key pair by access key or id")
    .option("--json", "print JSON")
    .action(async (ref: string, options: Json) => {
      await withServices(async ({ accounts }) => {
        if (!(await accounts.revokeKey(ref))) throw new CliError(`no live key "${ref}" to revoke`);
        const key = await accounts.findKey(ref);
        await recordCliAction(accounts.db, {
          action: "key.revoke",
          accountId: key?.account_id,
          target: `key:${key?.access_key ?? ref}`,
          details: { user: key?.user ?? null },
        });
        output(options, { key: ref, revoked: true });
      });
    });
}
