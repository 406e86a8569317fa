/**
 * The store: one Kysely database over SQLite (node:sqlite, a file under the data directory) or
 * PostgreSQL (DATABASE_URL). Dialect differences are kept to this folder.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Kysely, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import type { Config } from "../config.ts";
import type { Database } from "./schema.ts";
import { adaptNodeSqlite } from "./sqlite-adapter.ts";

export type Dialect = "sqlite" | "postgres";

export interface Store {
  db: Kysely<Database>;
  dialect: Dialect;
  /** Where the data lives, for logs (never includes a password). */
  location: string;
  close(): Promise<void>;
}

export function openStore(config: Pick<Config, "databaseUrl" | "dataDir">): Store {
  if (config.databaseUrl) {
    // A connection attempt gives up after 5 s, so an unreachable database answers 503 instead of hanging.
    const pool = new pg.Pool({
      connectionString: config.databaseUrl,
      max: 10,
      connectionTimeoutMillis: 5000,
    });
    // A client losing its server (a PostgreSQL restart, a cut network) must not crash the process: the
    // pool reports idle ones here, and a checked-out one would emit 'error' with no listener (Kysely adds
    // none), which Node turns into an uncaught exception. Its query fails anyway and the pool drops it.
    pool.on("error", () => {});
    pool.on("connect", (client) => client.on("error", () => {}));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    const url = new URL(config.databaseUrl);
    url.password = "";
    return { db, dialect: "postgres", location: url.toString(), close: () => db.destroy() };
  }
  const dir = resolve(config.dataDir);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "sightline.db");
  const database = new DatabaseSync(file);
  // WAL lets readers proceed during a write; a busy timeout rides out another process's write.
  database.exec("PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;");
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: adaptNodeSqlite(database) }) });
  return { db, dialect: "sqlite", location: file, close: () => db.destroy() };
}
