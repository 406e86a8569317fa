/**
 * First start: with no users at all, create an account, a team, an admin user and a key pair, so a new
 * install is usable at once. Keys come from the configuration when given, else they are generated and
 * handed back to be printed this one time.
 */
import type { Config } from "../core/config.ts";
import type { AccountsRepository, IssuedKey } from "./accounts.ts";

export interface Bootstrapped {
  account: string;
  team: string;
  user: string;
  key: IssuedKey;
  generated: boolean;
}

export async function bootstrapFirstUser(
  accounts: AccountsRepository,
  config: Pick<Config, "bootstrapAccessKey" | "bootstrapSecretKey">,
): Promise<Bootstrapped | undefined> {
  if ((await accounts.countUsers()) > 0) return undefined;
  const account = await accounts.createAccount("default", "active");
  const team = await accounts.createTeam(account.id, "default");
  const user = await accounts.createUser(account.id, "admin", team.id, true);
  const given = config.bootstrapAccessKey
    ? { accessKey: config.bootstrapAccessKey, secretKey: config.bootstrapSecretKey }
    : undefined;
  const key = await accounts.issueKey(user.id, given);
  return { account: account.name, team: team.name, user: user.name, key, generated: !given };
}
