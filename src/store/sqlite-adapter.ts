/**
 * Kysely's SqliteDialect expects a better-sqlite3-shaped database; this adapts Node's own node:sqlite
 * (no native addon to build). Statements spread their parameters; `reader` = the statement has columns.
 */
import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import type { SqliteDatabase, SqliteStatement } from "kysely";

export function adaptNodeSqlite(database: DatabaseSync): SqliteDatabase {
  return {
    close: () => database.close(),
    prepare(sql: string): SqliteStatement {
      const statement = database.prepare(sql);
      const params = (parameters: ReadonlyArray<unknown>) => parameters as SQLInputValue[];
      return {
        reader: statement.columns().length > 0,
        all: (parameters) => statement.all(...params(parameters)),
        run: (parameters) => {
          const result = statement.run(...params(parameters));
          return { changes: result.changes, lastInsertRowid: result.lastInsertRowid };
        },
        iterate: (parameters) => statement.iterate(...params(parameters)),
      };
    },
  };
}
