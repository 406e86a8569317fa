/**
 * The read side of the results: entities and findings as of one finished run, filtered, in a stable
 * order, read in keyset batches.
 *
 * Why batches rather than one long cursor: a cursor holds its connection for as long as the client takes
 * to read the response — on SQLite the only connection (Kysely serialises access to it), on PostgreSQL
 * one of the pool's — so a few slow readers of a large result would stall every other request. A batch
 * is a short indexed query (`(kind, name) > (last read)`, LIMIT); memory holds one batch. Reading
 * "as of run N" (`version_run_id <= N <= last_run_id`, see migration 008) makes the batches one
 * consistent result even when another run finishes half-way through: a finish only closes versions and
 * adds new ones, it never changes what run N saw.
 */
import {
  type CompiledQuery,
  type ExpressionBuilder,
  type Kysely,
  type Selectable,
  type SelectQueryBuilder,
  sql,
} from "kysely";
import { setBounded } from "../core/bounded-map.ts";
import { badRequest, notFound } from "../core/errors.ts";
import { pace } from "../core/pace.ts";
import type { CollectionRow } from "./collections.ts";
import {
  type Details,
  ENTITY_CONTENT_COLUMNS,
  type EntityContent,
  type EntityRecord,
  type FindingRecord,
  findingOf,
  toContent,
} from "./entities.ts";
import { parseStored } from "./json-codec.ts";
import type { Database } from "./schema.ts";

/** Rows per query: large enough that the round trips do not matter, small enough to hold. */
export const BATCH = 1000;

/** A finished run the results are read as of. */
export interface ResultRun {
  collectionId: number;
  runId: number;
  /** When it finished: the last_seen of entities a later run saw unchanged (their sighting in this run is not kept). */
  finishedAt: string;
}

export interface Page {
  limit?: number;
  offset?: number;
}

/** What a list can be narrowed to; every field is optional. */
export interface EntityFilters {
  kinds?: string[];
  scoped?: boolean;
  hidden?: boolean;
  /** Case-insensitive substring of the name. */
  q?: string;
  /** Services and applications on this port. */
  port?: number;
  /** Hosts (IpAddress) with this port open. */
  openPort?: number;
  /** Services and applications running this product ("nginx" or "nginx 1.25.3"), case-insensitive. */
  product?: string;
  /** Only what this run saw for the first time. */
  firstSeenInRun?: boolean;
  /** Only entities that the run with this id did not see (for diffs). */
  notSeenIn?: number;
  /** Only these names (a batch of `names()`). */
  names?: string[];
  /** Only Uri entities the web probe described (a seed URL that never answered has no address). */
  applicationsOnly?: boolean;
  /** Only entities after this one in (kind, name) order: where an export page left off. */
  after?: { kind: string; name: string };
  /** Only entities last seen (as of the run) at or after this ISO time. */
  lastSeenFrom?: string;
}

export interface FindingFilters {
  severities?: number[];
  scoped?: boolean;
  /** Of the entity the issue is on. */
  hidden?: boolean;
  /** Case-insensitive substring of the issue name, pretty name or entity name. */
  q?: string;
  firstSeenInRun?: boolean;
  notSeenIn?: number;
  /** Only findings after this one in the findings' order: where an export page left off. */
  after?: { severity: number; name: string; entityKind: string; entityName: string };
  /** Only findings last seen (as of the run) at or after this ISO time. */
  lastSeenFrom?: string;
}

/** An entity as of a run (without its provenance: see EntityRowWithProvenance). */
export interface EntityRow extends EntityContent {
  /** This version's row (EntityRecord's `id` is the entity's, stable across versions). */
  rowId: number;
  entityId: number;
  address: string | null;
  port: number | null;
}

/** An entity as of a run with the tasks that reached it, for the lists that show them (applications). */
export interface EntityRowWithProvenance extends EntityRow, Pick<EntityRecord, "ancestors" | "taskResults"> {}

/** The columns an entity row is read with; provenance is two more, parsed only where asked for. */
const ENTITY_ROW_COLUMNS = [...ENTITY_CONTENT_COLUMNS, "last_run_id", "address", "port"] as const;
const PROVENANCE_COLUMNS = ["ancestors", "task_results"] as const;
type EntityRowColumns = Pick<Selectable<Database["entities"]>, (typeof ENTITY_ROW_COLUMNS)[number]>;

/** A finding as of a run, with what the issue views need of its entity. */
export interface FindingRow extends FindingRecord {
  /**
   * What the issue views read of the entity's details, to place it on the network (network.ts
   * `addressOf`): for a service or application its `ip_address` alone, from the indexed column; for
   * other kinds all of them; {} when the entity is not in the run.
   */
  entityDetails: Details;
  /** The service the entity runs on, "address:port", for services and applications (migration 013). */
  endpoint: string | null;
}

/** How many of a group's entities it lists; `entityCount` has them all. */
export const GROUP_ENTITIES = 100;

/**
 * One finding seen through the names of one service: the findings with the same issue name and endpoint
 * (a finding on no service is a group of its own). The row is its first finding in the issues' order
 * (most severe, then by entity), except `firstSeen` (the earliest), `lastSeen` (the latest) and
 * `scoped` (any of them).
 */
export interface FindingGroup extends FindingRow {
  /** The first GROUP_ENTITIES entities, in the issues' order. */
  entities: Array<{ kind: string; name: string }>;
  entityCount: number;
}

/** Groups read per batch: each lists up to GROUP_ENTITIES entities, so a batch holds at most 10,000. */
const GROUP_BATCH = 100;

type Db = Kysely<Database>;

/** `pattern LIKE` for a substring, with the wildcards in the text escaped. */
function contains(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

const like = (column: string, text: string) =>
  sql<boolean>`lower(${sql.ref(column)}) like ${contains(text)} escape '\\'`;

/** The version (of the entity or finding under table alias `alias`) that run `runId` saw. */
function seenIn(alias: string, runId: number) {
  const ref = (column: string) => sql.ref(`${alias}.${column}`);
  return sql<boolean>`${ref("version_run_id")} <= ${runId} and ${ref("last_run_id")} >= ${runId}`;
}

/**
 * Last seen, as of the run, at or after `from` (an ISO time, compared as text like the column). A
 * version the run did not end has the run's finish as its last sighting (see entityRow); one it ended
 * has its column, which is never later than the finish.
 */
function lastSeenFrom(alias: string, run: ResultRun, from: string) {
  if (run.finishedAt < from) return sql<boolean>`1 = 0`;
  const ref = (column: string) => sql.ref(`${alias}.${column}`);
  return sql<boolean>`(${ref("last_run_id")} > ${run.runId} or ${ref("last_seen")} >= ${from})`;
}

/**
 * Empties an array of rows once used. On PostgreSQL the objects that waited for a read — async frames,
 * node-postgres's query and result — live long enough to be promoted to old space, and still point at
 * the rows they were given after they are dead. A scavenge counts every pointer from old space as live,
 * so a batch's rows survived until the next full collection and were promoted in turn: old space grew
 * with the length of a response. An emptied array holds nothing.
 */
export function release(rows: unknown[]): void {
  rows.length = 0;
}

/** Rows mapped between two looks at the clock (`pace`): a row's decoding takes microseconds. */
const ROWS_PER_PACE = 32;

/**
 * The rows mapped, their array emptied (see `release`). Mapping decodes each row's stored JSON, about
 * 15 µs a row: a batch of a thousand on SQLite, whose reads never wait, would hold the event loop for
 * tens of milliseconds, so the mapping yields to it as `pace` says.
 */
export async function mapReleased<Row, T>(rows: Row[], map: (row: Row) => T): Promise<T[]> {
  const mapped: T[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    if (i % ROWS_PER_PACE === 0) await pace();
    mapped[i] = map(rows[i]);
  }
  release(rows);
  return mapped;
}

/** Reads rows in batches of `size` after the last one read; `page` offsets and limits the whole. */
export async function* batches<Row>(
  fetch: (after: Row | undefined, take: number, skip: number) => Promise<Row[]>,
  page: Page = {},
  size = BATCH,
): AsyncGenerator<Row> {
  let remaining = page.limit ?? Number.POSITIVE_INFINITY;
  let skip = page.offset ?? 0;
  let after: Row | undefined;
  while (remaining > 0) {
    const take = Math.min(size, remaining);
    // A read of a thousand rows is milliseconds of synchronous work on SQLite: the loop's turn first.
    await pace();
    const rows = await fetch(after, take, skip);
    skip = 0;
    for (const row of rows) yield row;
    const count = rows.length;
    after = rows[count - 1];
    // Let the batch go before the next is read: the suspended generator would hold it (two batches
    // alive across the read, which on PostgreSQL spans socket reads and garbage collections).
    release(rows);
    remaining -= count;
    if (count < take) return;
  }
}

/** Everything an async iterable yields, in an array (for small results and tests). */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/**
 * Groups what an iterable yields into arrays of up to `size`. A batch is emptied when the next is asked
 * for (see `release`): a consumer that keeps one keeps a copy.
 */
export async function* inBatches<T>(items: AsyncIterable<T>, size = BATCH): AsyncGenerator<T[]> {
  const batch: T[] = [];
  for await (const item of items) {
    batch.push(item);
    if (batch.length === size) {
      yield batch;
      release(batch);
    }
  }
  if (batch.length > 0) yield batch;
}

/** Reads an aggregate (no keyset to continue from) in OFFSET batches; `page` offsets and limits the whole. */
export async function* offsetBatches<Row>(
  fetch: (offset: number, take: number) => Promise<Row[]>,
  page: Page = {},
  size = BATCH,
): AsyncGenerator<Row> {
  let remaining = page.limit ?? Number.POSITIVE_INFINITY;
  let offset = page.offset ?? 0;
  while (remaining > 0) {
    const take = Math.min(size, remaining);
    const rows = await fetch(offset, take);
    for (const row of rows) yield row;
    remaining -= rows.length;
    offset += rows.length;
    if (rows.length < take) return;
  }
}

function entityRow(run: ResultRun, row: EntityRowColumns): EntityRow {
  return {
    ...toContent(row),
    rowId: row.id,
    entityId: row.entity_id ?? row.id,
    // Only the version's last run kept its sighting time; an earlier run saw it before it finished.
    lastSeen: row.last_run_id === run.runId ? row.last_seen : run.finishedAt,
    address: row.address,
    port: row.port,
  };
}

/**
 * A findings query in the issues' order — most severe first, then by issue name and entity — after the
 * finding a batch ended with.
 */
function inIssueOrder<O>(
  query: SelectQueryBuilder<Database & { f: Database["findings"] }, "f", O>,
  after?: Pick<FindingRow, "severity" | "name" | "entityKind" | "entityName">,
) {
  if (after)
    query = query.where((eb) =>
      eb(
        eb.refTuple("f.severity", "f.name", "f.entity_kind", "f.entity_name"),
        ">",
        eb.tuple(after.severity, after.name, after.entityKind, after.entityName),
      ),
    );
  return query.orderBy("f.severity").orderBy("f.name").orderBy("f.entity_kind").orderBy("f.entity_name");
}

type LatestRow = Selectable<Database["collections"]> & {
  latest_run_id: number | null;
  latest_finished_at: string | null;
};

/** Counts kept per process: a finished run's results never change, so neither do their counts. */
const COUNTS_KEPT = 1000;

export class ResultQueries {
  readonly db: Db;
  readonly #counts = new Map<string, Promise<number>>();
  #latestQuery: CompiledQuery<LatestRow> | undefined;
  constructor(db: Db) {
    this.db = db;
  }

  /**
   * Two steps for a page: its ids, in order, from the covering as-of index (so an offset skips index
   * entries, not rows with their JSON), then those rows.
   */
  async #rowsById<Row extends { id: number }>(
    table: "entities" | "findings",
    ids: Array<{ id: number }>,
    columns?: readonly string[],
  ): Promise<Row[]> {
    if (ids.length === 0) return [];
    const query = this.db.selectFrom(table as "entities");
    const rows = (await (columns ? query.select(columns as never) : query.selectAll())
      .where(
        "id",
        "in",
        ids.map((row) => row.id),
      )
      .execute()) as unknown as Row[];
    const byId = new Map(rows.map((row) => [row.id, row]));
    const ordered = ids.map((row) => byId.get(row.id)!);
    release(rows);
    byId.clear();
    return ordered;
  }

  /** Findings by id, in the order given, each with its check's texts (finding_texts). */
  async #findingRowsById(ids: Array<{ id: number }>) {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom("findings as f")
      .innerJoin("finding_texts as t", (join) =>
        join.onRef("t.collection_id", "=", "f.collection_id").onRef("t.hash", "=", "f.text_hash"),
      )
      .selectAll("f")
      .select(["t.description", "t.remediation", "t.reference_links"])
      .where(
        "f.id",
        "in",
        ids.map((row) => row.id),
      )
      .execute();
    const byId = new Map(rows.map((row) => [row.id, row]));
    const ordered = ids.map((row) => byId.get(row.id)!);
    release(rows);
    byId.clear();
    return ordered;
  }

  /** A count of a finished run's results, computed once (the oldest are forgotten past COUNTS_KEPT). */
  #count(what: string, run: ResultRun, filters: object, compute: () => Promise<number>): Promise<number> {
    const key = `${what}:${run.collectionId}:${run.runId}:${JSON.stringify(filters)}`;
    let found = this.#counts.get(key);
    if (!found) {
      found = compute();
      found.catch(() => this.#counts.delete(key));
      setBounded(this.#counts, key, found, COUNTS_KEPT);
    }
    return found;
  }

  /** The collection of that name in the account with its latest finished run (if any), in one query. */
  async collectionWithLatestRun(
    accountId: number,
    name: string,
  ): Promise<(CollectionRow & { latestRun: ResultRun | undefined }) | undefined> {
    // Built and compiled once, run with each request's values: building a query cost more than running it.
    this.#latestQuery ??= this.db
      .selectFrom("collections as c")
      .leftJoin("collection_results as r", "r.collection_id", "c.id")
      .selectAll("c")
      .select(["r.run_id as latest_run_id", "r.finished_at as latest_finished_at"])
      .where("c.account_id", "=", 0)
      .where("c.name", "=", "")
      .compile() as CompiledQuery<LatestRow>;
    const { rows } = await this.db.executeQuery<LatestRow>({
      ...this.#latestQuery,
      parameters: [accountId, name],
    });
    const row = rows[0];
    if (!row) return undefined;
    const { latest_run_id: runId, latest_finished_at: finishedAt, ...collection } = row;
    return {
      ...collection,
      latestRun:
        runId === null || finishedAt === null ? undefined : { collectionId: row.id, runId, finishedAt },
    };
  }

  /**
   * The run to read: the given one, which must be a finished run of the collection, or the latest
   * finished one (undefined before any run has finished).
   */
  async run(collection: { id: number; name: string }, runId?: number): Promise<ResultRun | undefined> {
    if (runId === undefined) {
      const row = await this.db
        .selectFrom("collection_results")
        .select(["run_id", "finished_at"])
        .where("collection_id", "=", collection.id)
        .executeTakeFirst();
      return row && { collectionId: collection.id, runId: row.run_id, finishedAt: row.finished_at };
    }
    const run = await this.db
      .selectFrom("runs")
      .select(["id", "status", "finished_at"])
      .where("collection_id", "=", collection.id)
      .where("id", "=", runId)
      .executeTakeFirst();
    if (!run)
      throw notFound(
        `Run ${runId} is not a run of collection "${collection.name}"; list its runs with GET /api/collections/${collection.name}/runs.`,
      );
    if (run.status !== "finished" || !run.finished_at)
      throw badRequest(
        `Run ${runId} is ${run.status}; only a finished run has results to read. Leave out run_id for the latest finished run.`,
        [{ field: "run_id", message: `run ${runId} is ${run.status}, not finished` }],
      );
    return { collectionId: collection.id, runId, finishedAt: run.finished_at };
  }

  /** The newest run of the collection, whatever its status. */
  lastRun(collectionId: number) {
    return this.db
      .selectFrom("runs")
      .selectAll()
      .where("collection_id", "=", collectionId)
      .orderBy("id", "desc")
      .limit(1)
      .executeTakeFirst();
  }

  /** The finished run of the collection before `runId`, if any. */
  async previousRun(collectionId: number, runId: number): Promise<ResultRun | undefined> {
    const row = await this.db
      .selectFrom("runs")
      .select(["id", "finished_at"])
      .where("collection_id", "=", collectionId)
      .where("status", "=", "finished")
      .where("id", "<", runId)
      .orderBy("id", "desc")
      .limit(1)
      .executeTakeFirst();
    return row?.finished_at ? { collectionId, runId: row.id, finishedAt: row.finished_at } : undefined;
  }

  // --- entities -----------------------------------------------------------------------------------

  #entities(run: ResultRun, filters: EntityFilters) {
    let query = this.db
      .selectFrom("entities as e")
      .where("e.collection_id", "=", run.collectionId)
      .where(seenIn("e", run.runId));
    // One kind is an equality, so that a keyset on the name alone is an index range on both dialects.
    if (filters.kinds?.length === 1) query = query.where("e.kind", "=", filters.kinds[0]);
    else if (filters.kinds) query = query.where("e.kind", "in", filters.kinds);
    if (filters.names) query = query.where("e.name", "in", filters.names.length > 0 ? filters.names : [""]);
    if (filters.scoped !== undefined) query = query.where("e.scoped", "=", filters.scoped ? 1 : 0);
    if (filters.hidden !== undefined) query = query.where("e.hidden", "=", filters.hidden ? 1 : 0);
    if (filters.q) query = query.where(like("e.name", filters.q));
    if (filters.port !== undefined) query = query.where("e.port", "=", filters.port);
    if (filters.applicationsOnly) query = query.where("e.address", "is not", null);
    if (filters.firstSeenInRun) query = query.where("e.first_run_id", "=", run.runId);
    if (filters.lastSeenFrom !== undefined) query = query.where(lastSeenFrom("e", run, filters.lastSeenFrom));
    if (filters.after && filters.kinds?.length === 1) query = query.where("e.name", ">", filters.after.name);
    else if (filters.after) {
      const { kind, name } = filters.after;
      query = query.where((eb) => eb(eb.refTuple("e.kind", "e.name"), ">", eb.tuple(kind, name)));
    }
    if (filters.openPort !== undefined) {
      const port = filters.openPort;
      query = query.where((eb) =>
        eb.exists(
          eb
            .selectFrom("entities as s")
            .select("s.id")
            .where("s.collection_id", "=", run.collectionId)
            .where("s.kind", "=", "NetworkService")
            .whereRef("s.address", "=", "e.name")
            .where("s.port", "=", port)
            .where(seenIn("s", run.runId)),
        ),
      );
    }
    if (filters.product) {
      const product = filters.product.toLowerCase();
      query = query.where((eb) =>
        eb.exists(
          eb
            .selectFrom("entity_products as p")
            .select("p.id")
            .whereRef("p.entity_row_id", "=", "e.id")
            .where((inner) =>
              inner.or([
                inner(inner.fn("lower", ["p.product"]), "=", product),
                inner(inner.fn("lower", ["p.label"]), "=", product),
              ]),
            ),
        ),
      );
    }
    if (filters.notSeenIn !== undefined) {
      const other = filters.notSeenIn;
      query = query.where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom("entities as w")
              .select("w.id")
              .where("w.collection_id", "=", run.collectionId)
              .whereRef("w.kind", "=", "e.kind")
              .whereRef("w.name", "=", "e.name")
              .where(seenIn("w", other)),
          ),
        ),
      );
    }
    return query;
  }

  /** The most common open ports of the run's services, by how many services have each: one grouped count. */
  async topPorts(
    run: ResultRun | undefined,
    limit: number,
  ): Promise<Array<{ port: number; protocol: string; count: number }>> {
    if (!run) return [];
    const protocol = sql<string>`case when e.name like '%/udp' then 'udp' else 'tcp' end`;
    const rows = await this.#entities(run, { kinds: ["NetworkService"] })
      .where("e.port", "is not", null)
      .select((eb) => ["e.port", protocol.as("protocol"), eb.fn.countAll<number | string>().as("count")])
      .groupBy(["e.port", protocol])
      .orderBy("count", "desc")
      .orderBy("e.port")
      .limit(limit)
      .execute();
    return rows.map((row) => ({ port: Number(row.port), protocol: row.protocol, count: Number(row.count) }));
  }

  async countEntities(
    run: ResultRun | undefined,
    filters: EntityFilters,
    options: { distinctNames?: boolean } = {},
  ): Promise<number> {
    if (!run) return 0;
    return this.#count("entities", run, { ...filters, ...options }, async () => {
      const row = await this.#entities(run, filters)
        .select((eb) =>
          (options.distinctNames
            ? eb.fn.count<number | string>("e.name").distinct()
            : eb.fn.countAll<number | string>()
          ).as("count"),
        )
        .executeTakeFirstOrThrow();
      return Number(row.count);
    });
  }

  /**
   * The entities as of the run, in (kind, name) order — or (name, kind) — read in batches; with their
   * provenance when asked (two JSON columns more to read and parse per row).
   */
  entities(
    run: ResultRun | undefined,
    filters: EntityFilters,
    options: { order?: "kind" | "name"; page?: Page; provenance: true },
  ): AsyncGenerator<EntityRowWithProvenance>;
  entities(
    run: ResultRun | undefined,
    filters: EntityFilters,
    options?: { order?: "kind" | "name"; page?: Page; provenance?: false },
  ): AsyncGenerator<EntityRow>;
  async *entities(
    run: ResultRun | undefined,
    filters: EntityFilters,
    options: { order?: "kind" | "name"; page?: Page; provenance?: boolean } = {},
  ): AsyncGenerator<EntityRow> {
    if (!run) return;
    const columns = options.provenance ? [...ENTITY_ROW_COLUMNS, ...PROVENANCE_COLUMNS] : ENTITY_ROW_COLUMNS;
    const byName = options.order === "name";
    const order = byName ? (["e.name", "e.kind"] as const) : (["e.kind", "e.name"] as const);
    yield* batches<EntityRow>(async (after, take, skip) => {
      let query = this.#entities(run, filters).select("e.id");
      if (after && !byName && filters.kinds?.length === 1) query = query.where("e.name", ">", after.name);
      else if (after) {
        const key = byName ? [after.name, after.kind] : [after.kind, after.name];
        query = query.where((eb) => eb(eb.refTuple(order[0], order[1]), ">", eb.tuple(key[0], key[1])));
      }
      const ids = await query.orderBy(order[0]).orderBy(order[1]).limit(take).offset(skip).execute();
      const rows = await this.#rowsById<EntityRowColumns>("entities", ids, columns);
      if (!options.provenance) return mapReleased(rows, (row) => entityRow(run, row));
      return mapReleased(
        rows as Array<
          EntityRowColumns & Pick<Selectable<Database["entities"]>, (typeof PROVENANCE_COLUMNS)[number]>
        >,
        (row): EntityRowWithProvenance => ({
          ...entityRow(run, row),
          ancestors: parseStored(row.ancestors),
          taskResults: parseStored(row.task_results),
        }),
      );
    }, options.page);
  }

  /** A batch's worth of distinct names, in name order, for results that fold several kinds per name. */
  async *names(
    run: ResultRun | undefined,
    filters: EntityFilters,
    page: Page = {},
  ): AsyncGenerator<string[]> {
    if (!run) return;
    yield* inBatches(
      batches<string>(async (after, take, skip) => {
        let query = this.#entities(run, filters).select("e.name").distinct();
        if (after !== undefined) query = query.where("e.name", ">", after);
        const rows = await query.orderBy("e.name").limit(take).offset(skip).execute();
        return mapReleased(rows, (row) => row.name);
      }, page),
    );
  }

  /** The open ports of the given addresses as of the run: the address, port and details of each service. */
  async services(run: ResultRun, addresses: string[]): Promise<Array<{ address: string; details: Details }>> {
    if (addresses.length === 0) return [];
    const rows = await this.#entities(run, { kinds: ["NetworkService"] })
      .select(["e.address", "e.details"])
      .where("e.address", "in", addresses)
      .execute();
    return mapReleased(rows, (row) => ({ address: row.address!, details: parseStored(row.details) }));
  }

  // --- findings -----------------------------------------------------------------------------------

  #findings(run: ResultRun, filters: FindingFilters) {
    // No join: the entity an issue is on is read per batch, so counts and offsets touch findings only.
    let query = this.db
      .selectFrom("findings as f")
      .where("f.collection_id", "=", run.collectionId)
      .where(seenIn("f", run.runId));
    if (filters.severities) query = query.where("f.severity", "in", filters.severities);
    if (filters.scoped !== undefined) query = query.where("f.scoped", "=", filters.scoped ? 1 : 0);
    if (filters.hidden !== undefined) {
      const onHidden = (eb: ExpressionBuilder<Database & { f: Database["findings"] }, "f">) =>
        eb.exists(
          eb
            .selectFrom("entities as e")
            .select("e.id")
            .where("e.collection_id", "=", run.collectionId)
            .whereRef("e.kind", "=", "f.entity_kind")
            .whereRef("e.name", "=", "f.entity_name")
            .where("e.hidden", "=", 1)
            .where(seenIn("e", run.runId)),
        );
      query = query.where((eb) => (filters.hidden ? onHidden(eb) : eb.not(onHidden(eb))));
    }
    if (filters.q) {
      const q = filters.q;
      query = query.where((eb) =>
        eb.or(
          [like("f.name", q), like("f.pretty_name", q), like("f.entity_name", q)].map((c) => eb.and([c])),
        ),
      );
    }
    if (filters.firstSeenInRun) query = query.where("f.first_run_id", "=", run.runId);
    if (filters.lastSeenFrom !== undefined) query = query.where(lastSeenFrom("f", run, filters.lastSeenFrom));
    if (filters.after) {
      const { severity, name, entityKind, entityName } = filters.after;
      query = query.where((eb) =>
        eb(
          eb.refTuple("f.severity", "f.name", "f.entity_kind", "f.entity_name"),
          ">",
          eb.tuple(severity, name, entityKind, entityName),
        ),
      );
    }
    if (filters.notSeenIn !== undefined) {
      const other = filters.notSeenIn;
      query = query.where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom("findings as w")
              .select("w.id")
              .where("w.collection_id", "=", run.collectionId)
              .whereRef("w.name", "=", "f.name")
              .whereRef("w.entity_kind", "=", "f.entity_kind")
              .whereRef("w.entity_name", "=", "f.entity_name")
              .where(seenIn("w", other)),
          ),
        ),
      );
    }
    return query;
  }

  async countFindings(run: ResultRun | undefined, filters: FindingFilters): Promise<number> {
    if (!run) return 0;
    return this.#count("findings", run, filters, async () => {
      const row = await this.#findings(run, filters)
        .select((eb) => eb.fn.countAll<number | string>().as("count"))
        .executeTakeFirstOrThrow();
      return Number(row.count);
    });
  }

  /** How many findings of each severity (only the severities that have some). */
  async severityCounts(run: ResultRun | undefined): Promise<Map<number, number>> {
    if (!run) return new Map();
    const rows = await this.#findings(run, {})
      .select((eb) => ["f.severity", eb.fn.countAll<number | string>().as("count")])
      .groupBy("f.severity")
      .execute();
    return new Map(rows.map((row) => [row.severity, Number(row.count)]));
  }

  /** Findings as of the run, most severe first, then by issue name and entity. */
  async *findings(
    run: ResultRun | undefined,
    filters: FindingFilters,
    page: Page = {},
  ): AsyncGenerator<FindingRow> {
    if (!run) return;
    yield* batches<FindingRow>(async (after, take, skip) => {
      const ids = await inIssueOrder(this.#findings(run, filters).select("f.id"), after)
        .limit(take)
        .offset(skip)
        .execute();
      return this.#findingRows(run, ids);
    }, page);
  }

  /** How many groups `findingGroups` answers. */
  async countFindingGroups(run: ResultRun | undefined, filters: FindingFilters): Promise<number> {
    if (!run) return 0;
    return this.#count("finding-groups", run, filters, async () => {
      const groups = this.#findings(run, filters)
        .select([
          "f.name",
          "f.endpoint",
          sql<number | null>`case when f.endpoint is null then f.id end`.as("single"),
        ])
        .distinct();
      const row = await this.db
        .selectFrom(groups.as("groups"))
        .select((eb) => eb.fn.countAll<number | string>().as("count"))
        .executeTakeFirstOrThrow();
      return Number(row.count);
    });
  }

  /**
   * The findings as of the run grouped by issue name and service (FindingGroup), in the issues' order of
   * each group's first finding. A finding starts a group when no finding of the same name and endpoint
   * comes before it: a probe of the first entries of one index range (migration 013), so a batch costs
   * its own rows whatever the size of the collection; its groups' counts and entities are then read
   * for the batch alone.
   */
  async *findingGroups(
    run: ResultRun | undefined,
    filters: FindingFilters,
    page: Page = {},
  ): AsyncGenerator<FindingGroup> {
    if (!run) return;
    yield* batches<FindingGroup>(
      async (after, take, skip) => {
        const heads = this.#findings(run, filters)
          .select("f.id")
          .where((eb) =>
            eb.or([
              eb("f.endpoint", "is", null),
              eb.not(
                eb.exists(
                  eb
                    .selectFrom(
                      this.#findings(run, filters)
                        .select(["f.name", "f.endpoint", "f.severity", "f.entity_kind", "f.entity_name"])
                        .as("g"),
                    )
                    .select("g.name")
                    .whereRef("g.name", "=", "f.name")
                    .whereRef("g.endpoint", "=", "f.endpoint")
                    .where((inner) =>
                      inner(
                        inner.refTuple("g.severity", "g.entity_kind", "g.entity_name"),
                        "<",
                        inner.refTuple("f.severity", "f.entity_kind", "f.entity_name"),
                      ),
                    ),
                ),
              ),
            ]),
          );
        const ids = await inIssueOrder(heads, after).limit(take).offset(skip).execute();
        const rows = await this.#findingRows(run, ids);
        return this.#withMembers(run, filters, rows);
      },
      page,
      GROUP_BATCH,
    );
  }

  /**
   * The groups these first findings start: each one's count, first and last sighting, scope and first
   * GROUP_ENTITIES entities, in one windowed read of the batch's groups (one range of the endpoint
   * index each, which covers what is read).
   */
  async #withMembers(run: ResultRun, filters: FindingFilters, heads: FindingRow[]): Promise<FindingGroup[]> {
    const keyOfGroup = (name: string, endpoint: string | null) => `${name}\u0000${endpoint}`;
    const groups = new Map<
      string,
      Pick<FindingGroup, "firstSeen" | "lastSeen" | "scoped" | "entities" | "entityCount">
    >();
    const shared = heads.filter((head) => head.endpoint !== null);
    if (shared.length > 0) {
      const pairs = sql.join(shared.map((head) => sql`(${head.name}, ${head.endpoint})`));
      const group = sql`partition by f.name, f.endpoint`;
      const members = this.#findings(run, filters)
        // Said outright, so that SQLite sees the partial endpoint index applies. The pairs are a VALUES
        // list: SQLite takes no list of row values after IN.
        .where("f.endpoint", "is not", null)
        .where(sql<boolean>`(f.name, f.endpoint) in (values ${pairs})`)
        .select([
          "f.name",
          "f.endpoint",
          "f.entity_kind",
          "f.entity_name",
          sql<number>`row_number() over (${group} order by f.severity, f.entity_kind, f.entity_name)`.as(
            "position",
          ),
          sql<number | string>`count(*) over (${group})`.as("count"),
          sql<string>`min(f.first_seen) over (${group})`.as("first_seen"),
          // As in the rows: a version the run did not end was last seen when the run finished.
          sql<string>`max(case when f.last_run_id = ${run.runId} then f.last_seen else ${run.finishedAt} end) over (${group})`.as(
            "last_seen",
          ),
          sql<number>`max(f.scoped) over (${group})`.as("scoped"),
        ]);
      const listed = await this.db
        .selectFrom(members.as("m"))
        .selectAll()
        .where("m.position", "<=", GROUP_ENTITIES)
        .orderBy("m.position")
        .execute();
      for (const row of listed) {
        const key = keyOfGroup(row.name, row.endpoint);
        const entity = { kind: row.entity_kind, name: row.entity_name };
        const found = groups.get(key);
        if (found) found.entities.push(entity);
        else
          groups.set(key, {
            entityCount: Number(row.count),
            firstSeen: row.first_seen,
            lastSeen: row.last_seen,
            scoped: Number(row.scoped) === 1,
            entities: [entity],
          });
      }
      release(listed);
    }
    return mapReleased(
      heads,
      (head): FindingGroup => ({
        ...head,
        entities: [{ kind: head.entityKind, name: head.entityName }],
        entityCount: 1,
        ...(head.endpoint === null ? undefined : groups.get(keyOfGroup(head.name, head.endpoint))),
      }),
    );
  }

  /** The findings of these ids, in their order, with what the issue views need of their entities. */
  async #findingRows(run: ResultRun, ids: Array<{ id: number }>): Promise<FindingRow[]> {
    const rows = await this.#findingRowsById(ids);
    // The entities the batch's issues are on: by name (an indexed IN list), matched by kind here.
    // Services and applications have their address in a column: their details (an application's are
    // kilobytes) are not read at all.
    const entities = new Map<
      string,
      { alias_group: number; address: string | null; details: string | Uint8Array | null }
    >();
    const names = [...new Set(rows.map((row) => row.entity_name))];
    const found =
      names.length === 0
        ? []
        : await this.#entities(run, { names })
            .select(["e.kind", "e.name", "e.alias_group", "e.address"])
            .select(
              sql<string | Uint8Array | null>`case when e.address is null then e.details end`.as("details"),
            )
            .execute();
    for (const entity of found) entities.set(`${entity.kind}\u0000${entity.name}`, entity);
    release(found);
    const findings = await mapReleased(rows, (row) => {
      const entity = entities.get(`${row.entity_kind}\u0000${row.entity_name}`);
      return {
        ...findingOf(row, row),
        lastSeen: row.last_run_id === run.runId ? row.last_seen : run.finishedAt,
        aliasGroup: entity?.alias_group ?? 0,
        entityDetails: !entity
          ? {}
          : entity.address !== null
            ? { ip_address: entity.address }
            : entity.details === null
              ? {}
              : parseStored(entity.details),
        endpoint: row.endpoint,
      };
    });
    entities.clear();
    return findings;
  }

  /** How many issues the run saw on each of these entities, keyed `<kind>\u0000<name>` (none: absent). */
  async issueCounts(run: ResultRun, entities: Array<{ kind: string; name: string }>) {
    const counts = new Map<string, number>();
    if (entities.length === 0) return counts;
    const rows = await this.#findings(run, {})
      .select((eb) => ["f.entity_kind", "f.entity_name", eb.fn.countAll<number | string>().as("count")])
      .where("f.entity_name", "in", [...new Set(entities.map((entity) => entity.name))])
      .groupBy(["f.entity_kind", "f.entity_name"])
      .execute();
    for (const row of rows) counts.set(`${row.entity_kind}\u0000${row.entity_name}`, Number(row.count));
    release(rows);
    return counts;
  }

  /** How many CVEs of the vulnerability database each of these entity versions carries, by row id. */
  async vulnCounts(rowIds: number[]) {
    const counts = new Map<number, number>();
    if (rowIds.length === 0) return counts;
    const rows = await this.db
      .selectFrom("entity_vulns as v")
      .innerJoin("vuln_cves as c", "c.cve_id", "v.cve_id")
      .select((eb) => ["v.entity_row_id", eb.fn.count<number | string>("v.cve_id").distinct().as("count")])
      .where("v.entity_row_id", "in", rowIds)
      .groupBy("v.entity_row_id")
      .execute();
    for (const row of rows) counts.set(row.entity_row_id, Number(row.count));
    release(rows);
    return counts;
  }

  // --- products and vulnerabilities ---------------------------------------------------------------

  #products(run: ResultRun, filters: EntityFilters) {
    let query = this.db
      .selectFrom("entity_products as p")
      .innerJoin("entities as e", "e.id", "p.entity_row_id")
      .where("p.collection_id", "=", run.collectionId)
      .where(seenIn("e", run.runId));
    if (filters.scoped !== undefined) query = query.where("e.scoped", "=", filters.scoped ? 1 : 0);
    if (filters.hidden !== undefined) query = query.where("e.hidden", "=", filters.hidden ? 1 : 0);
    if (filters.q) query = query.where(like("p.label", filters.q));
    return query;
  }

  async countProducts(run: ResultRun | undefined, filters: EntityFilters): Promise<number> {
    if (!run) return 0;
    return this.#count("products", run, filters, async () => {
      const row = await this.#products(run, filters)
        .select((eb) => eb.fn.count<number | string>("p.label").distinct().as("count"))
        .executeTakeFirstOrThrow();
      return Number(row.count);
    });
  }

  /** Each product (with its version) and how many services and applications run it, most common first. */
  async *products(
    run: ResultRun | undefined,
    filters: EntityFilters,
    page: Page = {},
  ): AsyncGenerator<{ product: string; count: number }> {
    if (!run) return;
    yield* offsetBatches(async (offset, take) => {
      const rows = await this.#products(run, filters)
        .select((eb) => ["p.label", eb.fn.countAll<number | string>().as("count")])
        .groupBy("p.label")
        .orderBy("count", "desc")
        .orderBy("p.label")
        .limit(take)
        .offset(offset)
        .execute();
      return rows.map((row) => ({ product: row.label, count: Number(row.count) }));
    }, page);
  }

  #vulnerabilities(run: ResultRun, filters: EntityFilters) {
    let query = this.db
      .selectFrom("entity_vulns as v")
      .innerJoin("entities as e", "e.id", "v.entity_row_id")
      // A CVE no longer in the database (rejected since the run) is not reported.
      .innerJoin("vuln_cves as c", "c.cve_id", "v.cve_id")
      .where("v.collection_id", "=", run.collectionId)
      .where(seenIn("e", run.runId));
    if (filters.scoped !== undefined) query = query.where("e.scoped", "=", filters.scoped ? 1 : 0);
    if (filters.hidden !== undefined) query = query.where("e.hidden", "=", filters.hidden ? 1 : 0);
    if (filters.q) {
      const q = filters.q;
      query = query.where((eb) => eb.or([eb.and([like("v.cve_id", q)]), eb.and([like("v.product", q)])]));
    }
    if (filters.product) {
      const product = filters.product.toLowerCase();
      query = query.where((eb) => eb(eb.fn("lower", ["v.product"]), "=", product));
    }
    return query;
  }

  async countVulnerabilities(run: ResultRun | undefined, filters: EntityFilters): Promise<number> {
    if (!run) return 0;
    const row = await this.#vulnerabilities(run, filters)
      .select((eb) => eb.fn.count<number | string>("v.cve_id").distinct().as("count"))
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  /**
   * Each CVE with the products that carry it and the names of the services and applications it
   * affects, highest score first, then most affected.
   */
  async *vulnerabilities(
    run: ResultRun | undefined,
    filters: EntityFilters,
    page: Page = {},
  ): AsyncGenerator<{ cve: string; products: string[]; affected: string[] }> {
    if (!run) return;
    const ranked = offsetBatches(async (offset, take) => {
      const rows = await this.#vulnerabilities(run, filters)
        .select((eb) => [
          "v.cve_id",
          eb.fn.count<number | string>("e.id").distinct().as("count"),
          sql<number>`max(coalesce(c.cvss_v3_score, c.cvss_v2_score, 0))`.as("score"),
        ])
        .groupBy("v.cve_id")
        .orderBy("score", "desc")
        .orderBy("count", "desc")
        .orderBy("v.cve_id")
        .limit(take)
        .offset(offset)
        .execute();
      return rows.map((row) => row.cve_id);
    }, page);
    for await (const cves of inBatches(ranked)) {
      const found = new Map<string, { products: Set<string>; affected: Set<string> }>(
        cves.map((cve) => [cve, { products: new Set(), affected: new Set() }]),
      );
      const rows = await this.#vulnerabilities(run, filters)
        .select(["v.cve_id", "v.product", "e.name"])
        .where("v.cve_id", "in", cves)
        .orderBy("e.name")
        .execute();
      for (const row of rows) {
        found.get(row.cve_id)?.products.add(row.product);
        found.get(row.cve_id)?.affected.add(row.name);
      }
      release(rows);
      for (const cve of cves) {
        const entry = found.get(cve)!;
        yield { cve, products: [...entry.products].sort(), affected: [...entry.affected] };
      }
    }
  }
}
