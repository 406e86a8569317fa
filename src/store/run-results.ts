/**
 * A finished run's results saved: its staged sightings merged into the collection's results (entities.ts)
 * and its third parties decided with the run's own scope (connections.ts), on this thread or on a thread
 * of its own.
 *
 * A large run's finish is the longest work the server's process does: at a /16 the merge folds a million
 * sightings for minutes, and its SQLite commit and the first reads after it take most of a second each,
 * stretches in which no request would be answered on the server's thread. On a thread with connections
 * of its own, none of it is on the event loop. SQLite allows one writer: while the thread writes, this
 * thread holds its writer connection in a transaction of nothing (large-commit.ts, so its checkpoints
 * stay off and the log is copied back on a thread afterwards), and its other writes wait for the finish
 * as they waited for the merge's transaction before; reads go on through the reader connection.
 * PostgreSQL needs nothing held. The thread then gives back the space of the staging rows the merge
 * deleted, in one step (free-space.ts), where in steps between requests on the server's thread a /16's
 * would take tens of milliseconds a step. Starting a thread and loading the store there costs about half a
 * second, so a small run's finish stays here.
 */
import { type Kysely, SqliteAdapter } from "kysely";
import { Scope } from "../core/scope.ts";
import type { Seed } from "../core/seeds.ts";
import { RunConnectionsRepository } from "./connections.ts";
import { EntitiesRepository, type MergeSummary } from "./entities.ts";
import { largeTransaction, mainFile } from "./large-commit.ts";
import type { Database } from "./schema.ts";
import { threadReply } from "./thread-reply.ts";

export interface RunResultsRequest {
  runId: number;
  collectionId: number;
  /** The run's scope as it started: its seeds and scan lists decide which hosts are third parties. */
  seeds: Seed[];
  scanAllow: string[];
  scanDeny: string[];
}

/** Where the thread finds the database: the SQLite file, or PostgreSQL's URL. */
export type StoreAddress = { sqliteFile: string } | { databaseUrl: string };

export interface ThreadReply {
  summary?: MergeSummary;
  error?: string;
}

/** Merges the run and decides its third parties, on this thread. */
export async function saveRunResults(
  db: Kysely<Database>,
  request: RunResultsRequest,
): Promise<MergeSummary> {
  const { runId, collectionId } = request;
  const entities = new EntitiesRepository(db);
  const summary = await entities.mergeRun(runId, collectionId);
  const finished = await entities.resultRun(collectionId);
  if (finished?.runId === runId) {
    const scope = new Scope(request.seeds, request);
    await new RunConnectionsRepository(db).decide({ collectionId, ...finished }, (host) =>
      scope.coversName(host),
    );
  }
  return summary;
}

/** `saveRunResults` and the staging space given back a step at a time, on this thread (a small run's finish). */
export async function saveRunResultsHere(
  db: Kysely<Database>,
  request: RunResultsRequest,
): Promise<MergeSummary> {
  const summary = await saveRunResults(db, request);
  await new EntitiesRepository(db).reclaimStaging();
  return summary;
}

/**
 * `saveRunResults` and the staging space given back, on a thread of its own (see above). `databaseUrl`
 * is PostgreSQL's when the store is on it. A SQLite database with no file (in memory) has nothing a
 * thread could open: done here.
 */
export async function saveRunResultsOnThread(
  db: Kysely<Database>,
  request: RunResultsRequest,
  databaseUrl: string,
): Promise<MergeSummary> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return onThread({ databaseUrl }, request);
  const sqliteFile = await mainFile(db);
  if (sqliteFile === "") return saveRunResultsHere(db, request);
  return largeTransaction(db, () => onThread({ sqliteFile }, request));
}

async function onThread(address: StoreAddress, request: RunResultsRequest): Promise<MergeSummary> {
  const { reply, error } = await threadReply<ThreadReply>(
    new URL("./run-results-thread-entry.ts", import.meta.url),
    // A young generation of 8 MB, not V8's default sized from the machine's memory: the merge's short-lived
    // garbage filled all of it between collections (a /20's finish took the process 140-170 MB up, 80 with it).
    { workerData: { address, request }, resourceLimits: { maxYoungGenerationSizeMb: 8 } },
  );
  if (reply?.summary) return reply.summary;
  throw new Error(reply?.error ?? `the thread saving the results stopped (${error})`);
}
