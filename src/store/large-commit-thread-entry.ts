/**
 * The thread of large-commit.ts: a connection of its own to the database, on which it copies the
 * write-ahead log back (PASSIVE checkpoints) until less than `pages` frames are left uncopied, or a
 * bound of tries. A frame a reader's snapshot still needs is not copied until that reader moves on, so
 * one checkpoint may leave some; the writer's own checkpoints copy the rest.
 */
import { DatabaseSync } from "node:sqlite";
import { setTimeout as sleep } from "node:timers/promises";
import { parentPort, workerData } from "node:worker_threads";
import type { CheckpointReply } from "./large-commit.ts";

const { file, pages } = workerData as { file: string; pages: number };
const TRIES = 100;
const PAUSE_MS = 20;

let reply: CheckpointReply = { log: 0, checkpointed: 0 };
try {
  const database = new DatabaseSync(file);
  try {
    database.exec("PRAGMA busy_timeout = 5000;");
    const checkpoint = database.prepare("PRAGMA wal_checkpoint(PASSIVE)");
    for (let tries = 0; tries < TRIES; tries++) {
      const row = checkpoint.get() as { log: number; checkpointed: number };
      reply = { log: Number(row.log), checkpointed: Number(row.checkpointed) };
      if (reply.log - reply.checkpointed < pages) break;
      await sleep(PAUSE_MS);
    }
  } finally {
    database.close();
  }
} catch (error) {
  reply = { ...reply, error: (error as Error).message };
}
parentPort?.postMessage(reply);
