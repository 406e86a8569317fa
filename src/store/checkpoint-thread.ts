/**
 * SQLite's write-ahead log copied back into the database by a thread of its own, not by the writer. Left
 * to the writer (`wal_autocheckpoint`), the commit that takes the log past 1,000 pages copies all of it
 * back before it returns: the commit of a large run's merge held the event loop as long as that copy
 * took (200 ms more for a transaction of 90 MB; the half-second stalls at the end of a domain-seeded
 * /19, docs/scale.md Session 13). One thread per process serves every open database. Fail-safe: a
 * database keeps the writer's checkpoints until the thread has it open, and gets them back if the
 * thread is lost.
 */
import { Worker } from "node:worker_threads";
import type { CheckpointMessage } from "./checkpoint-thread-entry.ts";

interface Registration {
  count: number;
  /** Gives the database its writer's checkpoints back. */
  restore(): void;
}

let worker: Worker | undefined;
let broken = false;
let nextId = 0;
const waiting = new Map<number, (ok: boolean) => void>();
const registered = new Map<string, Registration>();

function thread(): Worker | undefined {
  if (worker || broken) return worker;
  const started = new Worker(new URL("./checkpoint-thread-entry.ts", import.meta.url), {
    resourceLimits: { maxYoungGenerationSizeMb: 4 },
  });
  started.unref();
  started.on("message", (reply: { id: number; ok: boolean }) => {
    const done = waiting.get(reply.id);
    waiting.delete(reply.id);
    if (waiting.size === 0) started.unref();
    done?.(reply.ok);
  });
  const lost = () => {
    if (worker !== started) return;
    worker = undefined;
    broken = true;
    for (const done of waiting.values()) done(false);
    waiting.clear();
    for (const registration of registered.values()) registration.restore();
  };
  started.on("error", lost);
  started.on("exit", lost);
  worker = started;
  return started;
}

function ask(type: CheckpointMessage["type"], file: string): Promise<boolean> {
  const target = thread();
  if (!target) return Promise.resolve(false);
  const id = nextId++;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    target.ref();
    target.postMessage({ type, file, id } satisfies CheckpointMessage);
  });
}

/**
 * Hands the checkpoints of the database at `file` to the thread; answers whether it took them (then
 * `writer` stops checkpointing on its commits).
 */
export async function checkpointElsewhere(
  file: string,
  writer: { exec(sql: string): void },
): Promise<boolean> {
  const known = registered.get(file);
  if (known) {
    known.count++;
    writer.exec("PRAGMA wal_autocheckpoint = 0;");
    return true;
  }
  const registration = { count: 1, restore: () => writer.exec("PRAGMA wal_autocheckpoint = 1000;") };
  registered.set(file, registration);
  if (!(await ask("add", file))) {
    registered.delete(file);
    return false;
  }
  writer.exec("PRAGMA wal_autocheckpoint = 0;");
  return true;
}

/** The database at `file` is closing: the thread checkpoints it once more and lets it go. */
export async function checkpointHere(file: string): Promise<void> {
  const registration = registered.get(file);
  if (!registration || --registration.count > 0) return;
  registered.delete(file);
  await ask("remove", file);
}
