/**
 * Named (prepared) statements for the PostgreSQL pool's hot queries. Kysely sends every query as an
 * unnamed statement, which PostgreSQL parses and plans again each time; a run sends the same handful of
 * statements for every task (claim, stage, follow-ups, completion), so naming them lets each connection
 * prepare each once (the scale bench's /20 measures what it saves).
 *
 * Bounded: a query is named once it has been seen twice, and at most MAX_NAMED queries are (queries
 * whose text varies, such as IN lists of every length, stay unnamed once the budget is spent).
 *
 * Statements inside an explicit transaction go unnamed (see `prepareHotStatements`): the hot per-task
 * statements are single autocommit statements.
 *
 * A schema change under live connections (a newer Sightline migrating while this one runs) can make
 * PostgreSQL refuse a prepared statement whose result columns changed ("cached plan must not change
 * result type"); a pooler that does not keep sessions may lose it ("prepared statement does not
 * exist"). Either way the query gets a new name, so the next use prepares it afresh, and the query is
 * sent again at once.
 */
import type pg from "pg";

/** Queries named at most, per process. */
const MAX_NAMED = 400;
/** Distinct query texts counted at most, before the counting starts over. */
const MAX_TRACKED = 5_000;
/** Longer texts (large multi-row inserts) are not worth a name each. */
const MAX_TEXT = 16_384;
/** cached plan must not change result type; prepared statement does not exist. */
const STALE_PLAN = new Set(["0A000", "26000"]);

interface Tracked {
  seen: number;
  name?: string;
}

export class StatementNames {
  readonly #tracked = new Map<string, Tracked>();
  #named = 0;
  #next = 1;

  /** The name to send `text` under, or undefined to send it unnamed. */
  nameFor(text: string): string | undefined {
    if (text.length > MAX_TEXT) return undefined;
    let tracked = this.#tracked.get(text);
    if (!tracked) {
      if (this.#tracked.size >= MAX_TRACKED) this.#forgetUnnamed();
      tracked = { seen: 0 };
      this.#tracked.set(text, tracked);
    }
    tracked.seen++;
    if (tracked.name === undefined && tracked.seen >= 2 && this.#named < MAX_NAMED) {
      tracked.name = `sightline_${this.#next++}`;
      this.#named++;
    }
    return tracked.name;
  }

  /** A new name for `text`, after the server refused the old one's plan. */
  rename(text: string): string {
    const name = `sightline_${this.#next++}`;
    const tracked = this.#tracked.get(text);
    if (tracked) tracked.name = name;
    return name;
  }

  #forgetUnnamed(): void {
    for (const [text, tracked] of this.#tracked) if (tracked.name === undefined) this.#tracked.delete(text);
  }
}

type Query = (text: unknown, values?: unknown, ...rest: unknown[]) => unknown;

/** Makes a pool client send hot parameterised queries as named statements (`names` is the pool's). */
export function prepareHotStatements(client: pg.Client, names: StatementNames): void {
  const query = client.query.bind(client) as Query;
  const named: Query = (text, values, ...rest) => {
    // Only Kysely's shape, (text, parameters): a cursor, a config object or a callback goes as it is.
    if (typeof text !== "string" || !Array.isArray(values) || values.length === 0 || rest.length > 0)
      return query(text, values, ...rest);
    // Inside an explicit transaction (bulk work: a run's merge, the clearing of its tasks) a statement
    // goes unnamed, so it is planned for its own parameters and the tables as they are. A named
    // statement's generic plan, made while the merge's tables were small, was kept as the merge grew them
    // (a /18's merge took 24 s instead of 16); forcing custom plans for the whole transaction instead
    // replanned the foreign-key check of every inserted row, a third of PostgreSQL's time in a merge.
    if (client.getTransactionStatus() !== "I") return query(text, values);
    const name = names.nameFor(text);
    if (name === undefined) return query(text, values);
    return (query({ name, text, values }) as Promise<unknown>).catch((error: { code?: string }) => {
      if (!STALE_PLAN.has(error?.code ?? "")) throw error;
      const renamed = names.rename(text);
      if (client.getTransactionStatus() !== "I") throw error;
      return query({ name: renamed, text, values });
    });
  };
  (client as unknown as { query: Query }).query = named;
}
