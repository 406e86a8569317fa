import { cascade, type DialectMigration, withId } from "./helpers.ts";

/**
 * Accounts, teams, users, API keys, collections and seeds. Timestamps are ISO-8601 text and booleans
 * 0/1 integers on both dialects, so the repositories read them the same way everywhere.
 */
export const accountsAndCollections: DialectMigration = {
  async up(db, dialect) {
    await withId(db.schema.createTable("accounts"), dialect)
      .addColumn("name", "text", (c) => c.notNull().unique())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await withId(db.schema.createTable("teams"), dialect)
      .addColumn("account_id", "integer", cascade("accounts.id"))
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addUniqueConstraint("teams_account_name", ["account_id", "name"])
      .execute();
    await withId(db.schema.createTable("users"), dialect)
      .addColumn("account_id", "integer", cascade("accounts.id"))
      .addColumn("name", "text", (c) => c.notNull().unique())
      .addColumn("is_admin", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("default_team_id", "integer", (c) => c.references("teams.id").onDelete("set null"))
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("team_members")
      .addColumn("team_id", "integer", cascade("teams.id"))
      .addColumn("user_id", "integer", cascade("users.id"))
      .addPrimaryKeyConstraint("team_members_pk", ["team_id", "user_id"])
      .execute();
    await withId(db.schema.createTable("api_keys"), dialect)
      .addColumn("user_id", "integer", cascade("users.id"))
      .addColumn("access_key", "text", (c) => c.notNull().unique())
      .addColumn("secret_hash", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("revoked_at", "text")
      .execute();
    await withId(db.schema.createTable("collections"), dialect)
      .addColumn("account_id", "integer", cascade("accounts.id"))
      .addColumn("team_id", "integer", cascade("teams.id"))
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("scan_rate", "text", (c) => c.notNull().defaultTo("auto"))
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .addUniqueConstraint("collections_account_name", ["account_id", "name"])
      .execute();
    await db.schema.createIndex("collections_team").on("collections").column("team_id").execute();
    await withId(db.schema.createTable("seeds"), dialect)
      .addColumn("collection_id", "integer", cascade("collections.id"))
      .addColumn("type", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addUniqueConstraint("seeds_collection_type_name", ["collection_id", "type", "name"])
      .execute();
  },
};
