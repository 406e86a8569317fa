/**
 * The store's hottest statements as plain SQL text, sent without Kysely's query builder. A discovery task
 * writes a few small statements (its start, its staging, its follow-ups, its completion); building each
 * with the builder (immutable nodes frozen at every step, then compiled) costs about as much CPU as SQLite
 * takes to run it, on the server's main thread. The texts here
 * are made once per shape and kept, in each dialect's parameter syntax; the builder keeps every other
 * query.
 */
import { CompiledQuery, type Kysely, PostgresAdapter } from "kysely";
import { setBounded } from "../core/bounded-map.ts";
import type { Database } from "./schema.ts";

const isPostgres = (db: Kysely<Database>) => db.getExecutor().adapter instanceof PostgresAdapter;

/** Texts kept per process (a shape is a statement and its row or list count). */
const TEXTS_KEPT = 512;
const texts = new Map<string, string>();

/** The text of `key`, made by `make` the first time (`$1`… on PostgreSQL, `?` on SQLite). */
function textOf(key: string, postgres: boolean, make: (parameter: () => string) => string): string {
  const dialectKey = `${postgres ? "p" : "s"}${key}`;
  let text = texts.get(dialectKey);
  if (text === undefined) {
    let n = 0;
    text = make(postgres ? () => `$${++n}` : () => "?");
    setBounded(texts, dialectKey, text, TEXTS_KEPT);
  }
  return text;
}

const quoted = (name: string) => `"${name}"`;

/**
 * A multi-row insert of `rows` into `table`, with `suffix` (an ON CONFLICT or RETURNING clause) after
 * it; undefined when the rows do not all have the same columns, in the same order, each with a value
 * (the builder then writes them, with defaults for what is missing).
 */
export function plainInsert(
  db: Kysely<Database>,
  table: keyof Database,
  rows: ReadonlyArray<Record<string, unknown>>,
  suffix = "",
): CompiledQuery | undefined {
  if (rows.length === 0) return undefined;
  const columns = Object.keys(rows[0]);
  const parameters: unknown[] = [];
  for (const row of rows) {
    let count = 0;
    for (const column in row) {
      const value = row[column];
      if (column !== columns[count++] || value === undefined) return undefined;
      parameters.push(value);
    }
    if (count !== columns.length) return undefined;
  }
  const key = `${table}(${columns.join(",")})x${rows.length} ${suffix}`;
  const text = textOf(key, isPostgres(db), (parameter) => {
    const values = Array.from({ length: rows.length }, () => `(${columns.map(parameter).join(", ")})`);
    return `insert into ${quoted(table)} (${columns.map(quoted).join(", ")}) values ${values.join(", ")} ${suffix}`.trimEnd();
  });
  return CompiledQuery.raw(text, parameters);
}

/** `make`'s text with the given parameters, the text made once per `key` and dialect. */
export function plainQuery(
  db: Kysely<Database>,
  key: string,
  parameters: unknown[],
  make: (parameter: () => string) => string,
): CompiledQuery {
  return CompiledQuery.raw(textOf(key, isPostgres(db), make), parameters);
}
