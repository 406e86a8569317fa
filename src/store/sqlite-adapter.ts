/**
 * Kysely's SqliteDialect expects a better-sqlite3-shaped database; this adapts Node's own node:sqlite
 * (no native addon to build). Statements spread their parameters; `reader` = the statement has columns
 * (or is a pragma: stepped to its end).
 *
 * Kysely prepares every query it runs; compiling SQL costs more than running a small indexed query, so
 * the adapter keeps the most recently used prepared statements (a statement is reset by each `all` and
 * `run`, so one can serve any number of queries one after another; `iterate` gets its own).
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite";
import type { SqliteDatabase, SqliteStatement } from "kysely";
import { setBounded } from "../core/bounded-map.ts";

const STATEMENTS_KEPT = 256;

export function adaptNodeSqlite(database: DatabaseSync): SqliteDatabase {
  // With whether each has columns: asking a statement for its columns builds an array each time.
  const prepared = new Map<string, { statement: StatementSync; reader: boolean }>();
  const statementFor = (sql: string) => {
    let entry = prepared.get(sql);
    if (!entry) {
      const statement = database.prepare(sql);
      // A pragma may answer rows it declares no columns for: `incremental_vacuum(N)` steps once per page
      // it frees, so `run` (one step) would free one page; `all` steps it to the end.
      entry = { statement, reader: statement.columns().length > 0 || /^\s*pragma\b/i.test(sql) };
    }
    setBounded(prepared, sql, entry, STATEMENTS_KEPT);
    return entry;
  };
  const params = (parameters: ReadonlyArray<unknown>) => parameters as SQLInputValue[];
  return {
    close: () => {
      prepared.clear();
      database.close();
    },
    prepare(sql: string): SqliteStatement {
      const { statement, reader } = statementFor(sql);
      return {
        reader,
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
