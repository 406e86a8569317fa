/**
 * PostgreSQL: the statistics of a run's working tables (`staged_entities`, `staged_findings`, `run_tasks`)
 * follow the run's growth, whatever autovacuum does. Those tables start each run empty (truncated after the
 * last one) and grow to hundreds of thousands of rows within minutes; the look-ups tasks make of them are
 * prepared statements, whose plan PostgreSQL makes from the statistics it has and keeps until they change.
 * With autovacuum off (as on this project's CI server) or behind, the plan made for an empty table was kept
 * for the whole run: the look-up of a name's staged sightings took `kind in (…)` as a filter over the run's
 * range of the (run_id, kind, name, id) index instead of a key, so each look-up read every staged row of the
 * run (at a domain-seeded /18, tens of times the pages of a look-up with statistics).
 *
 * So each process counts the rows it writes to a run's working tables and analyzes them each time that
 * count has doubled (from FIRST): a few ANALYZEs per run, each sampling a bounded number of rows, each
 * invalidating the plans made before it. One at a time per process, in the background (a task never waits
 * for it: ANALYZE takes no lock that inserts or reads wait on), and a failure only means the next doubling
 * tries again. The merge keeps its own (entities.ts, `#analyzeAsItGrows`): it reads inside one transaction.
 */
import { type Kysely, PostgresAdapter, sql } from "kysely";
import { setBounded } from "../core/bounded-map.ts";
import type { StagingRows } from "./entities.ts";
import type { Database } from "./schema.ts";

/** Rows a run writes before its working tables are first analyzed. */
const FIRST = 2_000;
/** Runs followed at once by one process (more are forgotten oldest first, and start counting again). */
const RUNS_KEPT = 64;

class GrowthAnalyzer {
  readonly #db: Kysely<Database>;
  readonly #runs = new Map<number, { written: number; analyzeAt: number }>();
  #analyzing: Promise<void> | undefined;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  wrote(runId: number, rows: number): void {
    let run = this.#runs.get(runId);
    if (!run) {
      run = { written: 0, analyzeAt: FIRST };
      setBounded(this.#runs, runId, run, RUNS_KEPT);
    }
    run.written += rows;
    if (run.written < run.analyzeAt || this.#analyzing) return;
    run.analyzeAt = 2 * run.written;
    this.#analyzing = sql`analyze staged_entities, staged_findings, run_tasks`
      .execute(this.#db)
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        this.#analyzing = undefined;
      });
  }

  /** The ANALYZE in flight, if any (tests wait for it). */
  get settled(): Promise<void> {
    return this.#analyzing ?? Promise.resolve();
  }
}

const analyzers = new WeakMap<Kysely<Database>, GrowthAnalyzer>();

function analyzerOf(db: Kysely<Database>): GrowthAnalyzer | undefined {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return undefined;
  let analyzer = analyzers.get(db);
  if (!analyzer) {
    analyzer = new GrowthAnalyzer(db);
    analyzers.set(db, analyzer);
  }
  return analyzer;
}

/**
 * Counts rows written to run `runId`'s working tables through `db` (the store's main pool: the ANALYZE runs
 * there), analyzing them when the run's count has doubled. Nothing on SQLite, which plans these look-ups
 * from its indexes alone.
 */
export function wroteRunRows(db: Kysely<Database>, runId: number, rows: number): void {
  if (rows > 0) analyzerOf(db)?.wrote(runId, rows);
}

/**
 * Counts what some tasks staged, as `wroteRunRows` does: each task's rows (`stagingRows`) are of one run,
 * which its rows carry.
 */
export function wroteStaging(db: Kysely<Database>, staging: StagingRows[]): void {
  const analyzer = analyzerOf(db);
  if (!analyzer) return;
  for (const rows of staging) {
    const runId = (rows.entities[0] ?? rows.findings[0])?.run_id;
    if (runId !== undefined) analyzer.wrote(runId, rows.entities.length + rows.findings.length);
  }
}

/** Resolves once the ANALYZE started through `db`, if any, has ended. */
export function stagingAnalyzed(db: Kysely<Database>): Promise<void> {
  return analyzers.get(db)?.settled ?? Promise.resolve();
}
