/**
 * The store: one Kysely database over SQLite (node:sqlite, a file under the data directory) or
 * PostgreSQL (DATABASE_URL). Dialect differences are kept to this folder.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Kysely, PostgresDialect } from "kysely";
import type pg from "pg";
import type { Config } from "../core/config.ts";
import { whenCheckpointed } from "./large-commit.ts";
import { prepareHotStatements, StatementNames } from "./prepared-statements.ts";
import type { Database } from "./schema.ts";
import { ReaderWriterSqliteDialect } from "./sqlite-dialect.ts";

export type Dialect = "sqlite" | "postgres";

export interface Store {
  db: Kysely<Database>;
  /**
   * Where a run's per-task statements go (a task's start, its completion with what it found and its
   * follow-ups): on PostgreSQL connections of their own (see openStore), on SQLite `db` itself.
   */
  taskDb: Kysely<Database>;
  dialect: Dialect;
  /** Where the data lives, for logs (never includes a password). */
  location: string;
  close(): Promise<void>;
}

export function openStore(config: Pick<Config, "databaseUrl" | "dataDir">): Store {
  if (config.databaseUrl) {
    // Commits do not wait for their WAL flush: the durability SQLite has below (synchronous = NORMAL: a
    // crash may lose the last commits, never corrupts). Every task's writes had waited on a flush; a
    // /20 took 41 s instead of 34. A DATABASE_URL that sets `options` keeps its own settings.
    const sessionOptions =
      new URL(config.databaseUrl).searchParams.get("options") ?? "-c synchronous_commit=off";
    const db = postgresDatabase(config.databaseUrl, sessionOptions);
    // The per-task statements have connections of their own, whose sessions plan each named statement
    // once for any parameters instead of again at every execution: a task's statements are always the
    // same few, PostgreSQL kept choosing a custom plan for them (an array's length changes its cost), and
    // planning was a sixth of its CPU in a run. Each finds its rows by an index, so the plan made once must
    // never be a sequential scan: one planned while a run's first tasks were the table's only rows would
    // be kept as the table grew. The rest (the API, the merge) keeps
    // custom plans, made for the tables as they are.
    const taskDb = postgresDatabase(
      config.databaseUrl,
      `${sessionOptions} -c plan_cache_mode=force_generic_plan -c enable_seqscan=off`,
    );
    const url = new URL(config.databaseUrl);
    url.password = "";
    return {
      db,
      taskDb,
      dialect: "postgres",
      location: url.toString(),
      close: async () => {
        await Promise.all([db.destroy(), taskDb.destroy()]);
      },
    };
  }
  const dir = resolve(config.dataDir);
  // A map of an organisation's weak spots is for its owner only: the folder 0700 when Sightline makes
  // it, the database 0600 (SQLite gives its -wal and -shm files the database's mode).
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, "sightline.db");
  if (!existsSync(file)) closeSync(openSync(file, "a", 0o600));
  chmodSync(file, 0o600);
  return openSqliteStore(file);
}

/** A store over the SQLite database in `file` (made by `openStore`, or another connection to its file). */
export function openSqliteStore(file: string): Store {
  const database = new DatabaseSync(file);
  // Incremental auto-vacuum lets the pages a run's deleted staging rows leave go back to the file system
  // (free-space.ts). It takes effect only when set before the first table is created: a new database gets
  // it; an existing one without it keeps working as before (docs/operations.md says how to convert it).
  database.exec("PRAGMA auto_vacuum = INCREMENTAL;");
  // WAL lets readers proceed during a write; a busy timeout rides out another process's write.
  // synchronous = NORMAL is WAL's usual setting: a commit is not flushed to disk on its own (a power cut
  // may lose the last commits, never corrupts), which takes a disk flush off every task's writes.
  database.exec(
    "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;",
  );
  // Reads outside transactions go to a second connection (see sqlite-dialect.ts).
  const reader = new DatabaseSync(file);
  reader.exec("PRAGMA busy_timeout = 5000;");
  const db = new Kysely<Database>({ dialect: new ReaderWriterSqliteDialect(database, reader) });
  // Closing waits for the threads copying a large commit's log back (a couple of seconds at most), so
  // none still writes the database's files once the store is closed (a shutdown, a removed folder).
  const close = async () => {
    await whenCheckpointed();
    await db.destroy();
  };
  return { db, taskDb: db, dialect: "sqlite", location: file, close };
}

/**
 * A database over a pool of up to 10 connections to `url` with the session `options` (`-c name=value …`),
 * which replace the URL's own (the caller passes those in): pg lets a connection string's parameters win
 * over the pool's settings.
 */
function postgresDatabase(url: string, options: string): Kysely<Database> {
  // pg is loaded only when a PostgreSQL database is configured, like BullMQ (src/runs/runtime.ts): less
  // live heap for the embedded default's collections to mark. It is CommonJS, so a synchronous require
  // keeps openStore synchronous.
  const { Pool } = createRequire(import.meta.url)("pg") as typeof pg;
  const connectionString = new URL(url);
  connectionString.searchParams.delete("options");
  // A connection attempt gives up after 5 s, so an unreachable database answers 503 instead of hanging.
  const pool = new Pool({
    connectionString: connectionString.toString(),
    max: 10,
    connectionTimeoutMillis: 5000,
    options,
  });
  // A client losing its server (a PostgreSQL restart, a cut network) must not crash the process: the
  // pool reports idle ones here, and a checked-out one would emit 'error' with no listener (Kysely adds
  // none), which Node turns into an uncaught exception. Its query fails anyway and the pool drops it.
  pool.on("error", () => {});
  const names = new StatementNames();
  pool.on("connect", (client) => {
    client.on("error", () => {});
    prepareHotStatements(client, names);
  });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
