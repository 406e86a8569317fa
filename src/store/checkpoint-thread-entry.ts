/**
 * The checkpoint thread (checkpoint-thread.ts): a connection of its own to each SQLite database it is
 * given, on which it copies the write-ahead log back into the database every CHECKPOINT_MS (a PASSIVE
 * checkpoint: it never waits for, or holds up, a reader or the writer).
 */
import { DatabaseSync } from "node:sqlite";
import { parentPort } from "node:worker_threads";

export type CheckpointMessage = { type: "add" | "remove"; file: string; id: number };

const CHECKPOINT_MS = 250;
const databases = new Map<string, DatabaseSync>();

function checkpoint(): void {
  for (const database of databases.values()) {
    try {
      database.exec("PRAGMA wal_checkpoint(PASSIVE);");
    } catch {
      // Busy or gone: the next round tries again; the writer's log only grows meanwhile.
    }
  }
}

setInterval(checkpoint, CHECKPOINT_MS).unref();

parentPort?.on("message", (message: CheckpointMessage) => {
  let ok = true;
  if (message.type === "add" && !databases.has(message.file)) {
    try {
      const database = new DatabaseSync(message.file);
      database.exec("PRAGMA busy_timeout = 5000;");
      databases.set(message.file, database);
    } catch {
      ok = false; // its writer keeps checkpointing on its commits
    }
  } else if (message.type === "remove") {
    const database = databases.get(message.file);
    databases.delete(message.file);
    try {
      database?.exec("PRAGMA wal_checkpoint(PASSIVE);");
      database?.close();
    } catch {
      // Closing: the writer's own close checkpoints what is left.
    }
  }
  parentPort?.postMessage({ id: message.id, ok });
});
