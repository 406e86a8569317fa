/** Repository of accounts, teams, users, memberships and API keys. */
import type { Kysely } from "kysely";
import { setBounded } from "../core/bounded-map.ts";
import { nowIso } from "../core/formats.ts";
import {
  DECOY_HASH,
  generateAccessKey,
  generateSecretKey,
  hashChosenSecret,
  hashSecret,
  isFastHash,
  verifyFastSecret,
  verifySecret,
} from "./keys.ts";
import type { AccountStatus, Database } from "./schema.ts";

export interface Principal {
  userId: number;
  userName: string;
  accountId: number;
  accountStatus: AccountStatus;
  isAdmin: boolean;
  defaultTeamId: number | null;
  teamIds: number[];
}

export interface IssuedKey {
  id: number;
  accessKey: string;
  secretKey: string;
}

export class AccountsRepository {
  readonly db: Kysely<Database>;
  readonly #verifySecret: typeof verifySecret;
  /**
   * Slow (scrypt) hashes this process has seen a secret match, with a fast hash of that secret, in memory
   * only: scrypt costs tens of milliseconds, and a key used for every request must not pay it each time.
   * Keyed by the stored hash, so a changed secret is verified afresh.
   */
  readonly #slowVerified = new Map<string, string>();
  /** `verifySecret` is replaceable so tests can see that every failed pair costs exactly one verification. */
  constructor(db: Kysely<Database>, options: { verifySecret?: typeof verifySecret } = {}) {
    this.db = db;
    this.#verifySecret = options.verifySecret ?? verifySecret;
  }

  async countUsers(): Promise<number> {
    const row = await this.db
      .selectFrom("users")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  async createAccount(name: string, status: AccountStatus) {
    return this.db
      .insertInto("accounts")
      .values({ name, status, created_at: nowIso() })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  listAccounts() {
    return this.db.selectFrom("accounts").selectAll().orderBy("id").execute();
  }

  findAccount(ref: string) {
    return this.db
      .selectFrom("accounts")
      .selectAll()
      .where((eb) =>
        /^\d+$/.test(ref) ? eb.or([eb("id", "=", Number(ref)), eb("name", "=", ref)]) : eb("name", "=", ref),
      )
      .executeTakeFirst();
  }

  async setAccountStatus(id: number, status: AccountStatus) {
    await this.db.updateTable("accounts").set({ status }).where("id", "=", id).execute();
  }

  async createTeam(accountId: number, name: string) {
    return this.db
      .insertInto("teams")
      .values({ account_id: accountId, name, created_at: nowIso() })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  listTeams(accountId?: number) {
    let query = this.db.selectFrom("teams").selectAll().orderBy("id");
    if (accountId !== undefined) query = query.where("account_id", "=", accountId);
    return query.execute();
  }

  findTeam(ref: string) {
    return this.db
      .selectFrom("teams")
      .selectAll()
      .where((eb) => (/^\d+$/.test(ref) ? eb("id", "=", Number(ref)) : eb("name", "=", ref)))
      .executeTakeFirst();
  }

  async createUser(accountId: number, name: string, teamId: number, isAdmin = false) {
    return this.db.transaction().execute(async (trx) => {
      const user = await trx
        .insertInto("users")
        .values({
          account_id: accountId,
          name,
          is_admin: isAdmin ? 1 : 0,
          default_team_id: teamId,
          created_at: nowIso(),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx.insertInto("team_members").values({ team_id: teamId, user_id: user.id }).execute();
      return user;
    });
  }

  listUsers(accountId?: number) {
    let query = this.db.selectFrom("users").selectAll().orderBy("id");
    if (accountId !== undefined) query = query.where("account_id", "=", accountId);
    return query.execute();
  }

  findUser(ref: string) {
    return this.db
      .selectFrom("users")
      .selectAll()
      .where((eb) => (/^\d+$/.test(ref) ? eb("id", "=", Number(ref)) : eb("name", "=", ref)))
      .executeTakeFirst();
  }

  async addMember(teamId: number, userId: number) {
    await this.db
      .insertInto("team_members")
      .values({ team_id: teamId, user_id: userId })
      .onConflict((oc) => oc.doNothing())
      .execute();
  }

  async removeMember(teamId: number, userId: number) {
    await this.db
      .deleteFrom("team_members")
      .where("team_id", "=", teamId)
      .where("user_id", "=", userId)
      .execute();
  }

  /** The teams a user is a member of, by id. */
  teamsOf(userId: number) {
    return this.db
      .selectFrom("team_members")
      .innerJoin("teams", "teams.id", "team_members.team_id")
      .select(["teams.id", "teams.name"])
      .where("team_members.user_id", "=", userId)
      .orderBy("teams.id")
      .execute();
  }

  async teamIdsOf(userId: number): Promise<number[]> {
    const rows = await this.db
      .selectFrom("team_members")
      .select("team_id")
      .where("user_id", "=", userId)
      .execute();
    return rows.map((row) => row.team_id);
  }

  /**
   * Issues a key pair; the secret is returned this once and only its hash is stored: the fast hash for a
   * generated 256-bit secret, scrypt for one a person chose (`given`).
   */
  async issueKey(userId: number, given?: { accessKey: string; secretKey: string }): Promise<IssuedKey> {
    const accessKey = given?.accessKey ?? generateAccessKey();
    const secretKey = given?.secretKey ?? generateSecretKey();
    const secretHash = given ? await hashChosenSecret(secretKey) : hashSecret(secretKey);
    const row = await this.db
      .insertInto("api_keys")
      .values({
        user_id: userId,
        access_key: accessKey,
        secret_hash: secretHash,
        created_at: nowIso(),
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    return { id: row.id, accessKey, secretKey };
  }

  /** Keys with their user's name, never their hashes. */
  #keysWithUsers() {
    return this.db
      .selectFrom("api_keys")
      .innerJoin("users", "users.id", "api_keys.user_id")
      .select([
        "api_keys.id",
        "api_keys.access_key",
        "users.name as user",
        "api_keys.created_at",
        "api_keys.revoked_at",
      ]);
  }

  listKeys(userId?: number) {
    let query = this.#keysWithUsers().orderBy("api_keys.id");
    if (userId !== undefined) query = query.where("api_keys.user_id", "=", userId);
    return query.execute();
  }

  /** A key (by access key or id) with its user and account. */
  findKey(ref: string) {
    return this.#keysWithUsers()
      .select("users.account_id")
      .where((eb) =>
        /^\d+$/.test(ref) ? eb("api_keys.id", "=", Number(ref)) : eb("api_keys.access_key", "=", ref),
      )
      .executeTakeFirst();
  }

  /** Revokes by access key or id; answers whether a live key was revoked. */
  async revokeKey(ref: string): Promise<boolean> {
    const result = await this.db
      .updateTable("api_keys")
      .set({ revoked_at: nowIso() })
      .where((eb) => (/^\d+$/.test(ref) ? eb("id", "=", Number(ref)) : eb("access_key", "=", ref)))
      .where("revoked_at", "is", null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * A key given at start (SIGHTLINE_BOOTSTRAP_*) whose secret was stored with the fast hash before
   * scrypt: stored again with scrypt, once its secret is shown to match. Answers whether it changed.
   */
  async upgradeChosenSecret(accessKey: string, secretKey: string): Promise<boolean> {
    const row = await this.db
      .selectFrom("api_keys")
      .select(["id", "secret_hash"])
      .where("access_key", "=", accessKey)
      .executeTakeFirst();
    if (!row || !isFastHash(row.secret_hash) || !verifyFastSecret(secretKey, row.secret_hash)) return false;
    await this.db
      .updateTable("api_keys")
      .set({ secret_hash: await hashChosenSecret(secretKey) })
      .where("id", "=", row.id)
      .where("secret_hash", "=", row.secret_hash)
      .execute();
    return true;
  }

  /** One verification of a secret against a stored hash; a slow hash seen to match before is checked fast. */
  async #matches(secretKey: string, stored: string): Promise<boolean> {
    if (isFastHash(stored)) return this.#verifySecret(secretKey, stored);
    const fast = this.#slowVerified.get(stored);
    if (fast && verifyFastSecret(secretKey, fast)) return true;
    const matches = await this.#verifySecret(secretKey, stored);
    if (matches) setBounded(this.#slowVerified, stored, hashSecret(secretKey), 1000);
    return matches;
  }

  /** The user behind a key pair, or undefined for an unknown, wrong or revoked pair. */
  async authenticate(accessKey: string, secretKey: string): Promise<Principal | undefined> {
    const row = await this.db
      .selectFrom("api_keys")
      .innerJoin("users", "users.id", "api_keys.user_id")
      .innerJoin("accounts", "accounts.id", "users.account_id")
      .select([
        "api_keys.secret_hash",
        "api_keys.revoked_at",
        "users.id as user_id",
        "users.name as user_name",
        "users.is_admin",
        "users.default_team_id",
        "accounts.id as account_id",
        "accounts.status",
      ])
      .where("api_keys.access_key", "=", accessKey)
      .executeTakeFirst();
    // One verification whatever is wrong (unknown access key, wrong secret, revoked key): the answer takes
    // the same time, so timing does not tell an attacker which access keys exist.
    const matches = await this.#matches(secretKey, row?.secret_hash ?? DECOY_HASH);
    if (!row || !matches || row.revoked_at !== null) return undefined;
    const teamIds = await this.teamIdsOf(row.user_id);
    const principal: Principal = {
      userId: row.user_id,
      userName: row.user_name,
      accountId: row.account_id,
      accountStatus: row.status,
      isAdmin: row.is_admin === 1,
      // Membership, not history, grants a team: a default team the user has left is no default.
      defaultTeamId:
        row.default_team_id !== null && teamIds.includes(row.default_team_id)
          ? row.default_team_id
          : (teamIds[0] ?? null),
      teamIds,
    };
    return principal;
  }
}
