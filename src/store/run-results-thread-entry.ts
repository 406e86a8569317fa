/**
 * The thread of run-results.ts: opens the store on connections of its own, saves the run's results
 * (`saveRunResults`), gives back the space of the staging rows it deleted, closes them and answers the
 * summary or the error's message. On SQLite the parent holds the writer and copies the log back
 * afterwards, so this connection's checkpoints are off.
 */

import { parentPort, workerData } from "node:worker_threads";
import { sql } from "kysely";
import { openSqliteStore, openStore } from "./database.ts";
import { EntitiesRepository } from "./entities.ts";
import { leaveLogToParent } from "./large-commit.ts";
import {
  type RunResultsRequest,
  type StoreAddress,
  saveRunResults,
  type ThreadReply,
} from "./run-results.ts";

const { address, request } = workerData as { address: StoreAddress; request: RunResultsRequest };
let reply: ThreadReply;
try {
  leaveLogToParent();
  const store =
    "sqliteFile" in address
      ? openSqliteStore(address.sqliteFile)
      : openStore({ databaseUrl: address.databaseUrl, dataDir: "" });
  try {
    if (store.dialect === "sqlite") await sql`pragma wal_autocheckpoint = 0`.execute(store.db);
    const summary = await saveRunResults(store.db, request);
    // Nobody waits on this thread between steps: all of it in one.
    await new EntitiesRepository(store.db).reclaimStaging({ oneStep: true });
    reply = { summary };
  } finally {
    await store.close();
  }
} catch (error) {
  reply = { error: (error as Error).message };
}
parentPort?.postMessage(reply);
