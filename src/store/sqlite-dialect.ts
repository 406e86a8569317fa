/**
 * SQLite with a reader beside the writer. Kysely's SqliteDialect funnels every query through one
 * connection under one mutex, so a transaction (the final merge of a large run, a few seconds) makes
 * every other query wait for it: `/healthz` and every result list included. Here statements outside a
 * transaction that only read (SELECT) run on a second connection, which in WAL mode reads the last
 * committed state without waiting for the writer; transactions and every other statement share the
 * writer connection, one transaction at a time.
 */
import type { DatabaseSync } from "node:sqlite";
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  SelectQueryNode,
  SqliteAdapter,
  type SqliteDatabase,
  SqliteDialect,
} from "kysely";
import { adaptNodeSqlite } from "./sqlite-adapter.ts";

/** A promise-chain lock: one holder at a time, waiters in arrival order. */
class Lock {
  #tail: Promise<void> = Promise.resolve();

  async acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const previous = this.#tail;
    this.#tail = previous.then(() => held);
    await previous;
    return release;
  }
}

function execute(db: SqliteDatabase, compiled: CompiledQuery): QueryResult<unknown> {
  const statement = db.prepare(compiled.sql);
  if (statement.reader) return { rows: statement.all(compiled.parameters) as unknown[] };
  const { changes, lastInsertRowid } = statement.run(compiled.parameters);
  return {
    insertId: lastInsertRowid != null ? BigInt(lastInsertRowid) : undefined,
    numAffectedRows: changes != null ? BigInt(changes) : undefined,
    rows: [],
  };
}

/** A SELECT built with Kysely, or raw SQL that is one (`select 1` of the health check). */
const readOnly = (compiled: CompiledQuery) =>
  SelectQueryNode.is(compiled.query) || /^\s*select\b/i.test(compiled.sql);

class RoutingConnection implements DatabaseConnection {
  /** Set while this connection holds the writer for a transaction. */
  release: (() => void) | undefined;
  readonly #driver: ReaderWriterDriver;

  constructor(driver: ReaderWriterDriver) {
    this.#driver = driver;
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const { reader, writer, lock } = this.#driver;
    if (this.release) return execute(writer, compiled) as QueryResult<R>;
    if (readOnly(compiled)) return execute(reader, compiled) as QueryResult<R>;
    // A single statement: it runs whole on this thread, but not inside another caller's transaction.
    const release = await lock.acquire();
    try {
      return execute(writer, compiled) as QueryResult<R>;
    } finally {
      release();
    }
  }

  async *streamQuery<R>(compiled: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const database = this.release ? this.#driver.writer : this.#driver.reader;
    for (const row of database.prepare(compiled.sql).iterate(compiled.parameters)) yield { rows: [row as R] };
  }
}

class ReaderWriterDriver implements Driver {
  readonly writer: SqliteDatabase;
  readonly reader: SqliteDatabase;
  readonly lock = new Lock();

  constructor(writer: DatabaseSync, reader: DatabaseSync) {
    this.writer = adaptNodeSqlite(writer);
    this.reader = adaptNodeSqlite(reader);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new RoutingConnection(this);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const routing = connection as RoutingConnection;
    routing.release = await this.lock.acquire();
    try {
      execute(this.writer, CompiledQuery.raw("begin"));
    } catch (error) {
      this.#end(routing);
      throw error;
    }
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      execute(this.writer, CompiledQuery.raw("commit"));
    } finally {
      this.#end(connection as RoutingConnection);
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      execute(this.writer, CompiledQuery.raw("rollback"));
    } finally {
      this.#end(connection as RoutingConnection);
    }
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    this.reader.close();
    this.writer.close();
  }

  #end(connection: RoutingConnection): void {
    const release = connection.release;
    connection.release = undefined;
    release?.();
  }
}

/** Says it has several connections, so Kysely does not serialize every query behind one mutex. */
class ReaderWriterAdapter extends SqliteAdapter {
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

export class ReaderWriterSqliteDialect extends SqliteDialect {
  readonly #writer: DatabaseSync;
  readonly #reader: DatabaseSync;

  constructor(writer: DatabaseSync, reader: DatabaseSync) {
    super({ database: adaptNodeSqlite(writer) });
    this.#writer = writer;
    this.#reader = reader;
  }

  override createDriver(): Driver {
    return new ReaderWriterDriver(this.#writer, this.#reader);
  }

  override createAdapter(): SqliteAdapter {
    return new ReaderWriterAdapter();
  }
}
