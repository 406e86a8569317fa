/**
 * Giving back the space a run's deleted rows leave. A run stages every sighting in `staged_entities` /
 * `staged_findings` and deletes them once they are merged: on SQLite those pages stay in the file as free
 * pages (a third of the database after a scan), on PostgreSQL as dead rows until autovacuum comes by.
 *
 * SQLite: databases created by Sightline use `auto_vacuum = INCREMENTAL` (set in database.ts before the
 * first table exists), so free pages can be handed back to the file system a few at a time with
 * `PRAGMA incremental_vacuum(N)`. Each step is its own short write transaction, sized to take about
 * STEP_MS, and the event loop is served between steps. A database created before (auto_vacuum = 0) keeps
 * its free pages for later rows; `PRAGMA auto_vacuum = INCREMENTAL; VACUUM;` converts it (docs/operations.md).
 *
 * PostgreSQL: a plain `VACUUM` of the tables the rows were deleted from makes their space reusable and
 * gives back the empty pages at the end of each table. It runs in the database (nothing here waits on
 * it but this call), takes no lock that blocks reads or writes, and skips a table someone else is
 * vacuuming (SKIP_LOCKED) rather than wait for it. VACUUM never shrinks an index, though: the staging
 * and task tables' indexes kept their size, about 5 KB per host of a scan. So a table whose rows live
 * only while their run does (TRANSIENT) is truncated instead when it is empty — the usual case, one run
 * at a time — which gives back its indexes too: under an ACCESS EXCLUSIVE lock taken with NOWAIT (so
 * nothing waits for it; if anyone holds the table, even a reader, it is vacuumed instead), it is checked
 * to be empty and truncated, in one transaction. No insert can be in flight meanwhile (it would hold a
 * lock), and an empty table's truncation loses nothing.
 */
import { type Kysely, SqliteAdapter, sql } from "kysely";
import { yieldToLoop } from "../core/pace.ts";

/** How long one incremental-vacuum step should hold the writer (and the event loop). */
const STEP_MS = 2;
const MIN_PAGES = 8;
const MAX_PAGES = 1024;

export interface Reclaimed {
  /** Pages handed back to the file system (SQLite). */
  pages: number;
  /** Steps taken: one write transaction each, with the event loop served between two. */
  steps: number;
}

// biome-ignore lint/suspicious/noExplicitAny: works on any schema; only pragmas and VACUUM are issued
type AnyDb = Kysely<any>;

/** Tables whose rows live only while their run does: once one is empty, every page of it can go. */
const TRANSIENT = new Set(["staged_entities", "staged_findings", "run_tasks"]);

/** Truncates a transient table if it is empty and nobody holds it; true when it did. */
async function truncateIfEmpty(db: AnyDb, table: string): Promise<boolean> {
  try {
    return await db.transaction().execute(async (trx) => {
      await sql`lock table ${sql.table(table)} in access exclusive mode nowait`.execute(trx);
      const { rows } = await sql<{ held: boolean }>`
        select exists (select 1 from ${sql.table(table)}) as held`.execute(trx);
      if (rows[0]?.held) return false;
      await sql`truncate ${sql.table(table)}`.execute(trx);
      return true;
    });
  } catch (error) {
    // 55P03 lock_not_available: someone is using the table; a VACUUM does what it can instead.
    if ((error as { code?: string }).code === "55P03") return false;
    throw error;
  }
}

const pragmaNumber = async (db: AnyDb, pragma: "auto_vacuum" | "freelist_count") => {
  const { rows } = await sql<Record<string, number>>`${sql.raw(`pragma ${pragma}`)}`.execute(db);
  return Number(rows[0]?.[pragma] ?? 0);
};

/**
 * Hands back the free pages of a SQLite database in bounded steps, or truncates (when empty) or
 * vacuums the given PostgreSQL tables. Safe to call at any time and from several places at once; on a SQLite database without
 * incremental auto-vacuum it does nothing. `stopping` ends it between two steps (a shutdown). `oneStep`:
 * all of it in one statement, for a thread of the store's own while its parent holds the writer (no
 * request waits on that thread, and each step would only add a commit).
 */
export async function reclaimFreeSpace(
  db: AnyDb,
  tables: readonly string[],
  options: { stopping?: () => boolean; oneStep?: boolean } = {},
): Promise<Reclaimed> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) {
    const vacuumed: string[] = [];
    for (const table of tables)
      if (!(TRANSIENT.has(table) && (await truncateIfEmpty(db, table)))) vacuumed.push(table);
    if (vacuumed.length > 0)
      await sql`vacuum (skip_locked) ${sql.join(vacuumed.map((table) => sql.table(table)))}`.execute(db);
    return { pages: 0, steps: 0 };
  }
  if ((await pragmaNumber(db, "auto_vacuum")) !== 2) return { pages: 0, steps: 0 };
  if (options.oneStep) {
    const free = await pragmaNumber(db, "freelist_count");
    if (free === 0) return { pages: 0, steps: 0 };
    // Without a count it frees every free page.
    await sql`pragma incremental_vacuum`.execute(db);
    return { pages: free - (await pragmaNumber(db, "freelist_count")), steps: 1 };
  }
  let pages = 0;
  let steps = 0;
  let size = 64;
  for (let free = await pragmaNumber(db, "freelist_count"); free > 0 && !options.stopping?.(); ) {
    const asked = Math.min(size, free);
    const started = performance.now();
    await sql`${sql.raw(`pragma incremental_vacuum(${asked})`)}`.execute(db);
    const took = performance.now() - started;
    steps++;
    const left = await pragmaNumber(db, "freelist_count");
    // Other writers may free or reuse pages meanwhile; a step that frees nothing ends it.
    if (left >= free) break;
    pages += free - left;
    free = left;
    // The next step's size aims at STEP_MS from this one's pace (a page costs more when live pages
    // must move into the gap, little when the free pages are at the end of the file).
    // At most twice the last step: the pages nearest the end are often free and cheap, the next ones not.
    size = Math.round(
      Math.min(MAX_PAGES, 2 * asked, Math.max(MIN_PAGES, (asked * STEP_MS) / Math.max(took, 0.05))),
    );
    await yieldToLoop();
  }
  return { pages, steps };
}
