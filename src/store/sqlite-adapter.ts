/**
 * Kysely's SqliteDialect expects a better-sqlite3-shaped database; this adapts Node's own node:sqlite
 * (no native addon to build). Statements spread their parameters; `reader` = the statement has columns.
 *
 * Kysely prepares every query it runs; compiling SQL costs more than running a small indexed query, so
 * the adapter keeps the most recently used prepared statements (a statement is reset by each `all` and
 * `run`, so one can serve any number of queries one after another; `iterate` gets its own).
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite";
import type { SqliteDatabase, SqliteStatement } from "kysely";

const STATEMENTS_KEPT = 256;

export function adaptNodeSqlite(database: DatabaseSync): SqliteDatabase {
  const prepared = new Map<string, StatementSync>();
  const statementFor = (sql: string) => {
    let statement = prepared.get(sql);
    if (statement) prepared.delete(sql);
    else {
      statement = database.prepare(sql);
      if (prepared.size >= STATEMENTS_KEPT) prepared.delete(prepared.keys().next().value!);
    }
    prepared.set(sql, statement);
    return statement;
  };
  const params = (parameters: ReadonlyArray<unknown>) => parameters as SQLInputValue[];
  return {
    close: () => {
      prepared.clear();
      database.close();
    },
    prepare(sql: string): SqliteStatement {
      const statement = statementFor(sql);
      return {
        reader: statement.columns().length > 0,
        all: (parameters) => statement.all(...params(parameters)),
        run: (parameters) => {
          const result = statement.run(...params(parameters));
          return { changes: result.changes, lastInsertRowid: result.lastInsertRowid };
        },
        iterate: (parameters) => database.prepare(sql).iterate(...params(parameters)),
      };
    },
  };
}
