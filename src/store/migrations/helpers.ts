/** Column shapes that differ by dialect, defined once for every migration. */
import type { ColumnDefinitionBuilder, CreateTableBuilder, Kysely } from "kysely";
import type { Dialect } from "../database.ts";

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as typed now
export type MigrationDb = Kysely<any>;

export interface DialectMigration {
  up(db: MigrationDb, dialect: Dialect): Promise<void>;
}

/** An auto-incrementing integer primary key named `id`. */
export function withId<T extends string>(table: CreateTableBuilder<T, never>, dialect: Dialect) {
  return dialect === "postgres"
    ? table.addColumn("id", "serial", (c) => c.primaryKey())
    : table.addColumn("id", "integer", (c) => c.primaryKey().autoIncrement());
}

/** A foreign key that removes the row with its parent. */
export const cascade = (target: string) => (c: ColumnDefinitionBuilder) =>
  c.references(target).onDelete("cascade").notNull();

/** Whether `table` has `column` already (a migration that adds one may run on a database it has changed). */
export async function hasColumn(db: MigrationDb, table: string, column: string): Promise<boolean> {
  const tables = await db.introspection.getTables();
  return tables.some((found) => found.name === table && found.columns.some((c) => c.name === column));
}
