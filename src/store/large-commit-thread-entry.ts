/**
 * The thread of large-commit.ts: a connection of its own to the database, on which it copies the
 * write-ahead log back (PASSIVE checkpoints) until the log holds fewer than `pages` frames (the writer
 * started it over once it was all copied back) or is all copied with nothing written since the last
 * try (an idle writer's next write starts it over), or a bound of tries. A frame a reader's snapshot still
 * needs is not copied until that reader moves on, and what the writer adds meanwhile is copied by the
 * next try; whatever is left when the tries run out, the writer's own checkpoints copy.
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
      const last = reply;
      reply = { log: Number(row.log), checkpointed: Number(row.checkpointed) };
      if (reply.log < pages) break;
      // All copied, and nothing written since the last try: the writer's next write starts the log over.
      if (reply.checkpointed === reply.log && reply.log === last.log) break;
      await sleep(PAUSE_MS);
    }
  } finally {
    database.close();
  }
} catch (error) {
  reply = { ...reply, error: (error as Error).message };
}
parentPort?.postMessage(reply);
