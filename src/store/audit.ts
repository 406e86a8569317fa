/**
 * The audit log: administrative actions — accounts, teams, users and keys from the CLI, collections and
 * their seeds from the API — with who, what, when and from where. Entries are only added; API changes
 * write theirs in the same transaction as the change, so an acknowledged change always has its entry.
 */
import { hostname, userInfo } from "node:os";
import type { Kysely, Selectable } from "kysely";
import { nowIso } from "../core/formats.ts";
import type { Principal } from "./accounts.ts";
import type { AuditLogTable, Database } from "./schema.ts";

export type AuditAction =
  | "account.create"
  | "account.update"
  | "team.create"
  | "team.add-member"
  | "team.remove-member"
  | "user.create"
  | "key.create"
  | "key.revoke"
  | "collection.create"
  | "collection.update"
  | "collection.seeds.add"
  | "collection.seeds.delete"
  | "collection.seed.delete"
  | "collection.delete"
  | "collection.webhook.create"
  | "collection.webhook.delete";

export interface AuditEntry {
  /** Who: `user:<name>` for an API key's user, `cli:<os user>` for the operator. */
  actor: string;
  userId?: number | null;
  accountId?: number | null;
  action: AuditAction;
  /** What it acted on, as `<kind>:<name or id>`. */
  target: string;
  /** From where: the client address, or `cli@<host>`. */
  source: string;
  requestId?: string | null;
  details?: Record<string, unknown>;
}

/** A stored entry, its details parsed. */
export type AuditRecord = Omit<Selectable<AuditLogTable>, "details"> & { details: Record<string, unknown> };

export interface AuditQuery {
  accountId?: number;
  /** An action, or a prefix of one ending with a dot (`collection.`). */
  action?: string;
  limit?: number;
}

/** Writes one entry; `db` may be a transaction so the entry commits with the change it records. */
export async function recordAudit(db: Kysely<Database>, entry: AuditEntry): Promise<void> {
  await db
    .insertInto("audit_log")
    .values({
      at: nowIso(),
      actor: entry.actor,
      user_id: entry.userId ?? null,
      account_id: entry.accountId ?? null,
      action: entry.action,
      target: entry.target,
      source: entry.source,
      request_id: entry.requestId ?? null,
      details: JSON.stringify(entry.details ?? {}),
    })
    .execute();
}

/** Who and from where for an API request made with a user's key. */
export function apiActor(
  principal: Principal,
  request: { ip: string; id: string },
): Pick<AuditEntry, "actor" | "userId" | "accountId" | "source" | "requestId"> {
  return {
    actor: `user:${principal.userName}`,
    userId: principal.userId,
    accountId: principal.accountId,
    source: request.ip,
    requestId: request.id,
  };
}

/** Who and from where for the operator's CLI: the OS user on this host. */
export function cliActor(): Pick<AuditEntry, "actor" | "source"> {
  let user = "unknown";
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (some containers): the host still says where
  }
  return { actor: `cli:${user}`, source: `cli@${hostname()}` };
}

/** Records an action the operator took with the CLI on this host. */
export function recordCliAction(
  db: Kysely<Database>,
  entry: Omit<AuditEntry, "actor" | "source" | "userId" | "requestId">,
): Promise<void> {
  return recordAudit(db, { ...cliActor(), ...entry });
}

function parseRow(row: Selectable<AuditLogTable>): AuditRecord {
  let details: Record<string, unknown> = {};
  try {
    details = JSON.parse(row.details);
  } catch {
    details = { unreadable: row.details };
  }
  return { ...row, details };
}

export class AuditLog {
  readonly db: Kysely<Database>;
  constructor(db: Kysely<Database>) {
    this.db = db;
  }

  record(entry: AuditEntry): Promise<void> {
    return recordAudit(this.db, entry);
  }

  /** Newest first. */
  async list(query: AuditQuery = {}): Promise<AuditRecord[]> {
    let select = this.db
      .selectFrom("audit_log")
      .selectAll()
      .orderBy("id", "desc")
      .limit(query.limit ?? 100);
    if (query.accountId !== undefined) select = select.where("account_id", "=", query.accountId);
    if (query.action) {
      const action = query.action;
      // Action names are lower-case words, dots and hyphens: no LIKE wildcard can slip in.
      if (!/^[a-z.-]+$/.test(action)) throw new Error(`"${action}" is not an action name or prefix`);
      select = action.endsWith(".")
        ? select.where("action", "like", `${action}%`)
        : select.where("action", "=", action);
    }
    return (await select.execute()).map(parseRow);
  }
}
