import type { DialectMigration } from "./helpers.ts";
import { withId } from "./helpers.ts";

/**
 * The audit log of administrative actions: who (actor, and the user when known), did what (action, target,
 * details as JSON text), when, from where (an address or `cli@host`), under which request id. Rows are only
 * ever added. No foreign keys: an entry must outlive the account, user or collection it speaks of.
 */
export const auditLog: DialectMigration = {
  async up(db, dialect) {
    await withId(db.schema.createTable("audit_log"), dialect)
      .addColumn("at", "text", (c) => c.notNull())
      .addColumn("actor", "text", (c) => c.notNull())
      .addColumn("user_id", "integer")
      .addColumn("account_id", "integer")
      .addColumn("action", "text", (c) => c.notNull())
      .addColumn("target", "text", (c) => c.notNull())
      .addColumn("source", "text", (c) => c.notNull())
      .addColumn("request_id", "text")
      .addColumn("details", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("audit_log_account_at")
      .on("audit_log")
      .columns(["account_id", "at"])
      .execute();
  },
};
