/**
 * A large transaction whose commit does not copy SQLite's write-ahead log back on the event loop.
 *
 * With `wal_autocheckpoint` (1,000 pages) the commit that takes the log past it copies the whole log
 * into the database before it returns: the final merge of a large run commits tens of megabytes, and
 * such a commit would hold every request for about half a second at a /19. So
 * around such a transaction the writer's own checkpoints are off, and once it has committed a thread
 * of its own copies the log back (PASSIVE: it never waits for, or holds up, a reader or the writer),
 * every 20 ms, until the log has started over (a write that begins when the whole log is copied back
 * starts it over), so what the writer adds meanwhile is copied too; or until it is all copied with the
 * writer idle, whose next write starts it over. Then the writer's checkpoints come back. Should the
 * writer never leave such a moment (under a run's continuous writes), the thread gives up after about
 * two seconds and the writer's checkpoints copy the rest between two of its commits. The thread copies
 * to the end rather than leaving the writer the last checkpoint's worth, which would cost the writer's
 * thread a checkpoint of the writes made during the copy, and its sync.
 * PostgreSQL: a plain transaction.
 */
import { type Kysely, SqliteAdapter, sql, type Transaction } from "kysely";
import type { Database } from "./schema.ts";
import { threadReply } from "./thread-reply.ts";

export interface CheckpointReply {
  /** Frames in the log and frames copied back, at the thread's last checkpoint. */
  log: number;
  checkpointed: number;
  error?: string;
}

/** Per database file: the large transactions whose log is still being copied back, and the setting to restore. */
const deferred = new Map<string, { count: number; pages: number }>();
/** The latest copy under way, for tests and shutdowns that want the log settled. */
let settling: Promise<void> = Promise.resolve();

/**
 * Resolves once every thread started by `largeTransaction` so far has finished. The threads do not keep
 * the process alive (it loses nothing if it ends meanwhile); whoever waits for them does, or the process
 * would end with the wait still pending.
 */
export async function whenCheckpointed(): Promise<void> {
  const alive = setInterval(() => {}, 1000);
  try {
    await settling;
  } finally {
    clearInterval(alive);
  }
}

/**
 * Set in a thread whose large transactions run while its parent holds the writer (run-results.ts): the
 * parent has turned its own checkpoints off and copies the log back once the thread is done, so here a
 * large transaction is a plain one (on a connection whose checkpoints are off too).
 */
let logLeftToParent = false;

/** This thread's large transactions leave the log to the thread that started it (see above). */
export function leaveLogToParent(): void {
  logLeftToParent = true;
}

/** The file of a SQLite database ("" for one in memory or temporary). */
export const mainFile = async (trx: Kysely<Database> | Transaction<Database>) => {
  const { rows } = await sql<{ name: string; file: string }>`pragma database_list`.execute(trx);
  return rows.find((row) => row.name === "main")?.file ?? "";
};

/** Copies the log of the database at `file` back on a thread until it holds fewer than `pages` frames; never rejects. */
async function checkpointOnThread(file: string, pages: number): Promise<CheckpointReply> {
  // unref: a process that ends meanwhile loses nothing; the log stays, for the next checkpoint.
  const { reply, error } = await threadReply<CheckpointReply>(
    new URL("./large-commit-thread-entry.ts", import.meta.url),
    { workerData: { file, pages }, resourceLimits: { maxYoungGenerationSizeMb: 4 }, unref: true },
  );
  return reply ?? { log: 0, checkpointed: 0, error };
}

/**
 * Runs `body` in one transaction; on SQLite with the writer's checkpoints off until a thread has copied
 * its log back (the answer does not wait for that). An in-memory or temporary database, which has no
 * file for a thread to open, keeps its checkpoints.
 */
export async function largeTransaction<T>(
  db: Kysely<Database>,
  body: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  if (logLeftToParent || !(db.getExecutor().adapter instanceof SqliteAdapter))
    return db.transaction().execute(body);
  let file = "";
  const result = await db
    .transaction()
    .execute(async (trx) => {
      file = await mainFile(trx);
      if (file !== "") {
        const known = deferred.get(file);
        if (known) known.count++;
        else {
          const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(trx);
          deferred.set(file, { count: 1, pages: Number(rows[0]?.wal_autocheckpoint ?? 1000) });
        }
        await sql`pragma wal_autocheckpoint = 0`.execute(trx);
      }
      return body(trx);
    })
    .catch(async (error) => {
      if (file !== "") await restore(db, file);
      throw error;
    });
  if (file !== "") {
    const copied = checkpointOnThread(file, deferred.get(file)?.pages ?? 1000).then(() => restore(db, file));
    settling = Promise.all([settling, copied]).then(() => {});
  }
  return result;
}

/** One large transaction's log is copied back (or given up on): the writer checkpoints again when none is left. */
async function restore(db: Kysely<Database>, file: string): Promise<void> {
  const known = deferred.get(file);
  if (!known || --known.count > 0) return;
  deferred.delete(file);
  // Outside a transaction a pragma goes to the writer (sqlite-dialect.ts); a closed database has nothing to restore.
  await sql`${sql.raw(`pragma wal_autocheckpoint = ${known.pages}`)}`.execute(db).catch(() => {});
}
