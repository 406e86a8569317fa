/**
 * Repository of discovery results: a run's staged entities, findings and notes, their merge into the
 * collection's results when the run finishes, and the reads the result views make.
 */
import { createHash } from "node:crypto";
import {
  type Insertable,
  type Kysely,
  PostgresAdapter,
  type Selectable,
  sql,
  type Transaction,
} from "kysely";
import { carriesProducts, productFacts, vulnerabilityFacts } from "../core/facts.ts";
import { nowIso } from "../core/formats.ts";
import { mapPaced, pace, yieldToLoop } from "../core/pace.ts";
import { endpointName } from "../core/service-names.ts";
import { reclaimFreeSpace } from "./free-space.ts";
import { parseStored } from "./json-codec.ts";
import { encodeJsonMany } from "./json-codec-thread.ts";
import { largeTransaction } from "./large-commit.ts";
import { plainInsert } from "./plain-statements.ts";
import type {
  Database,
  EntitiesTable,
  FindingsTable,
  FindingTextColumns,
  StagedEntitiesTable,
  StagedFindingsTable,
} from "./schema.ts";
import { wroteStaging } from "./staging-statistics.ts";
import { WORKING_TABLES_LOST, workingTablesLost } from "./working-marks.ts";

export type Details = Record<string, unknown>;

/** What a run's merge made the collection's results: its entities and findings, counted. */
export interface MergeSummary {
  entities: number;
  findings: number;
}

export interface EntityKey {
  kind: string;
  name: string;
}

/** Provenance of an entity: which task found it, from which entity, at which depth. */
export interface TaskResult {
  name: string;
  task: string;
  entity_type: string;
  entity_name: string;
  depth: number;
}

export interface Ancestor {
  name: string;
  type: string;
}

export interface StagedEntity extends EntityKey {
  details: Details;
  scoped: boolean;
  hidden: boolean;
  depth: number;
  aliases: EntityKey[];
  ancestors: Ancestor[];
  taskResult?: TaskResult;
}

export interface Finding {
  name: string;
  entityKind: string;
  entityName: string;
  prettyName: string;
  severity: number;
  confidence: string;
  category: string;
  description: string;
  remediation: string;
  references: Array<{ type: string; uri: string }>;
  details: Details;
  scoped: boolean;
}

/** What a run has staged so far about one entity, its sightings merged (the shallowest one's provenance). */
export interface StagedSighting extends EntityKey {
  details: Details;
  scoped: boolean;
  depth: number;
  ancestors: Ancestor[];
}

/** What one task found, written in one go. */
export interface StagedWork {
  entities: StagedEntity[];
  findings: Finding[];
  /** A note is a message of `noteKind`, or names its own kind. */
  notes: Array<string | { kind: string; message: string }>;
  /** What wrote the notes (a discovery module's name, `plan`); default `other`. */
  noteKind?: string;
}

/** A run's notes of one kind: how many, and the first few. */
export interface NoteKindSummary {
  kind: string;
  count: number;
  examples: string[];
}

export interface EntityRecord extends EntityKey {
  /** The row id: stable for the life of the entity in the collection. */
  id: number;
  details: Details;
  scoped: boolean;
  hidden: boolean;
  aliasGroup: number;
  ancestors: Ancestor[];
  taskResults: TaskResult[];
  firstSeen: string;
  lastSeen: string;
  firstRunId: number;
}

export interface FindingRecord extends Finding {
  id: number;
  firstSeen: string;
  lastSeen: string;
  aliasGroup: number;
}

/** New versions after which PostgreSQL's statistics are refreshed. */
const ANALYZE_AFTER = 1000;

/**
 * Rows per INSERT: well under both dialects' bound-parameter limits, and short enough that a synchronous
 * SQLite statement holds the event loop a few milliseconds.
 */
const CHUNK = 100;

async function insertChunks<
  T extends
    | "entities"
    | "findings"
    | "staged_entities"
    | "staged_findings"
    | "entity_products"
    | "entity_vulns",
>(db: Kysely<Database>, table: T, rows: Insertable<Database[T]>[]): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    const plain = plainInsert(db, table, chunk as Array<Record<string, unknown>>);
    // Kysely cannot relate a generic table to its row type; the signature above does.
    if (plain) await db.executeQuery(plain);
    else
      await db
        .insertInto(table)
        .values(chunk as never)
        .execute();
    await pace();
  }
}

/**
 * Merges what two sightings said about an entity: objects key by key, arrays as a union, anything else the
 * later sighting wins. Two sightings that list different things (the names resolving to an address, the
 * endpoints serving a certificate) are tasks of one run that finish in any order: their union is sorted,
 * so the order tasks finished in does not make an unchanged entity look changed. An array one sighting
 * gave, or several gave alike, keeps its order (headers, redirect chains).
 */
export function mergeDetails(earlier: Details, later: Details): Details {
  const merged: Details = { ...earlier };
  for (const [key, value] of Object.entries(later)) {
    const previous = merged[key];
    if (Array.isArray(previous) && Array.isArray(value)) {
      const before = previous.map((item) => JSON.stringify(item));
      const after = value.map((item) => JSON.stringify(item));
      const alike = before.length === after.length && before.every((text, index) => text === after[index]);
      if (!alike) {
        const union = new Map<string, unknown>([
          ...before.map((text, index): [string, unknown] => [text, previous[index]]),
          ...after.map((text, index): [string, unknown] => [text, value[index]]),
        ]);
        merged[key] = [...union.keys()].sort().map((text) => union.get(text));
      }
    } else if (isPlainObject(previous) && isPlainObject(value)) {
      merged[key] = mergeDetails(previous, value);
    } else if (value !== undefined) {
      merged[key] = value;
    }
  }
  return merged;
}

/**
 * The merge of many sightings of one entity, the same as folding `mergeDetails` over them in order but
 * linear in their size: a list is kept as a set of its items' JSON texts while sightings add to it and
 * sorted once at the end, not re-stringified and re-sorted at every sighting (a /16's block lists 65,536
 * addresses, one per sighting).
 */
export class DetailsMerger {
  #root: MergeNode | undefined;

  add(details: Details): void {
    this.#root = absorb(this.#root, details);
  }

  result(): Details {
    return this.#root ? (settle(this.#root) as Details) : {};
  }
}

type MergeNode =
  | { type: "list"; first: unknown[]; firstTexts?: string[]; union?: Map<string, unknown> }
  | { type: "object"; keys: Map<string, MergeNode> }
  | { type: "value"; value: unknown };

function absorb(node: MergeNode | undefined, value: unknown): MergeNode | undefined {
  if (value === undefined) return node;
  if (node?.type === "list" && Array.isArray(value)) {
    const texts = value.map((item) => JSON.stringify(item));
    if (!node.union) {
      node.firstTexts ??= node.first.map((item) => JSON.stringify(item));
      const first = node.firstTexts;
      if (first.length === texts.length && first.every((text, index) => text === texts[index])) return node;
      node.union = new Map(first.map((text, index) => [text, node.first[index]]));
    }
    for (let index = 0; index < texts.length; index++) node.union.set(texts[index], value[index]);
    return node;
  }
  if (node?.type === "object" && isPlainObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      const next = absorb(node.keys.get(key), item);
      if (next) node.keys.set(key, next);
    }
    return node;
  }
  if (Array.isArray(value)) return { type: "list", first: value };
  if (isPlainObject(value)) return absorb({ type: "object", keys: new Map() }, value);
  return { type: "value", value };
}

function settle(node: MergeNode): unknown {
  if (node.type === "value") return node.value;
  if (node.type === "object") {
    // fromEntries defines own properties, as the spread in mergeDetails does ("__proto__" included).
    return Object.fromEntries([...node.keys].map(([key, child]) => [key, settle(child)]));
  }
  if (!node.union) return node.first;
  const union = node.union;
  return [...union.keys()].sort().map((text) => union.get(text));
}

function isPlainObject(value: unknown): value is Details {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const keyOf = (kind: string, name: string) => `${kind}\u0000${name}`;

/** One entity as the merge of all its sightings in a run. */
interface MergedEntity extends StagedEntity {
  taskResults: TaskResult[];
  firstSeen: string;
  lastSeen: string;
}

/** Union-find over entity keys, for alias groups. */
class Groups {
  readonly #parent = new Map<string, string>();
  has(key: string): boolean {
    return this.#parent.has(key);
  }
  find(key: string): string {
    let root = key;
    while (this.#parent.has(root) && this.#parent.get(root) !== root) root = this.#parent.get(root)!;
    this.#parent.set(key, root);
    return root;
  }
  keys(): string[] {
    return [...this.#parent.keys()];
  }
  join(a: string, b: string): void {
    const [ra, rb] = [this.find(a), this.find(b)];
    if (ra !== rb) this.#parent.set(ra, rb);
  }
}

/** The columns of an entity version besides its provenance (ancestors, task_results). */
export const ENTITY_CONTENT_COLUMNS = [
  "id",
  "entity_id",
  "kind",
  "name",
  "details",
  "scoped",
  "hidden",
  "alias_group",
  "first_seen",
  "last_seen",
  "first_run_id",
] as const;

export type EntityContent = Omit<EntityRecord, "ancestors" | "taskResults">;

/**
 * An entity version without its provenance, from its content columns: what most results show, read
 * without the two JSON columns only the applications list carries.
 */
export function toContent(
  row: Pick<Selectable<EntitiesTable>, (typeof ENTITY_CONTENT_COLUMNS)[number]>,
): EntityContent {
  return {
    id: row.entity_id ?? row.id,
    kind: row.kind,
    name: row.name,
    details: parseStored(row.details),
    scoped: row.scoped === 1,
    hidden: row.hidden === 1,
    aliasGroup: row.alias_group,
    firstSeen: row.first_seen,
    lastSeen: row.last_seen,
    firstRunId: row.first_run_id,
  };
}

/** A stored entity version as the repository speaks of it; its id is the entity's stable id. */
export function toRecord(row: Selectable<EntitiesTable>): EntityRecord {
  return {
    ...toContent(row),
    ancestors: parseStored(row.ancestors),
    taskResults: parseStored(row.task_results),
  };
}

/** The newest version of an entity or finding, as the merge needs it. */
interface LatestVersion {
  id: number;
  alias_group?: number;
  entity_id: number | null;
  first_seen: string;
  first_run_id: number;
  last_run_id: number;
  content_hash: string;
}

/**
 * JSON with object keys sorted: the same content hashes the same whatever order it was merged in. Built
 * by concatenation: a merge hashes every entity and issue of a run, and the arrays of map, filter and
 * join made it about 30% slower.
 */
function canonicalJson(value: unknown): string {
  if (typeof value !== "object" || value === null) return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let text = "[";
    for (let index = 0; index < value.length; index++)
      text += (index === 0 ? "" : ",") + canonicalJson(value[index]);
    return `${text}]`;
  }
  let text = "{";
  for (const key of Object.keys(value).sort()) {
    const item = (value as Details)[key];
    if (item === undefined) continue;
    text += `${text.length === 1 ? "" : ","}${JSON.stringify(key)}:${canonicalJson(item)}`;
  }
  return `${text}}`;
}

const contentHash = (content: unknown) =>
  createHash("sha256").update(canonicalJson(content)).digest("base64");

/** Services and applications: the address and port they answer on, for indexed filters and joins. */
function addressOf(entity: MergedEntity): { address: string | null; port: number | null } {
  if (entity.kind !== "NetworkService" && entity.kind !== "Uri") return { address: null, port: null };
  // An application is a Uri the web probe described (it has a status); a seed URL that never answered has none.
  const probed = entity.kind === "NetworkService" || typeof entity.details.code === "string";
  const address = probed && typeof entity.details.ip_address === "string" ? entity.details.ip_address : null;
  const port = Number(entity.details.port);
  return { address, port: Number.isInteger(port) ? port : null };
}

/** The columns of each results table stored through json-codec.ts. */
const JSON_COLUMNS = {
  entities: ["details", "ancestors", "task_results"],
  findings: ["details"],
} as const;

type JsonColumn = (typeof JSON_COLUMNS)[keyof typeof JSON_COLUMNS][number];

/** A row with its JSON columns as JSON text, before they are encoded. */
type AsText<Row> = { [K in keyof Row]: K extends JsonColumn ? string : Row[K] };

/**
 * The versions one run writes to one table: continuations (same content, seen by the previous run too)
 * only move last_run_id and last_seen; everything else closes the old version and inserts a new one.
 * Written a batch at a time (`flush`), so what is held is one batch, not the run.
 */
class Versions<T extends "entities" | "findings"> {
  #continued = new Map<string, number[]>();
  #closed: number[] = [];
  #inserts: Array<Insertable<Database[T]>> = [];
  #written = 0;
  #analyzeAt = PAGE;
  readonly #trx: Transaction<Database>;
  readonly #table: T;
  readonly #runId: number;
  readonly #previousRunId: number | undefined;

  constructor(trx: Transaction<Database>, table: T, runId: number, previousRunId: number | undefined) {
    this.#trx = trx;
    this.#table = table;
    this.#runId = runId;
    this.#previousRunId = previousRunId;
  }

  /** Records one sighting; true when it starts a new version. */
  see(
    old: LatestVersion | undefined,
    hash: string,
    lastSeen: string,
    row: Omit<
      AsText<Insertable<Database[T]>>,
      "version_run_id" | "last_run_id" | "latest" | "content_hash" | "last_seen"
    >,
  ): boolean {
    if (old && old.last_run_id === this.#previousRunId && old.content_hash === hash) {
      const ids = this.#continued.get(lastSeen);
      if (ids) ids.push(old.id);
      else this.#continued.set(lastSeen, [old.id]);
      return false;
    }
    if (old) this.#closed.push(old.id);
    this.#inserts.push({
      ...row,
      version_run_id: this.#runId,
      last_run_id: this.#runId,
      latest: 1,
      content_hash: hash,
      last_seen: lastSeen,
    } as unknown as Insertable<Database[T]>);
    return true;
  }

  /** New versions written. */
  get written(): number {
    return this.#written;
  }

  /**
   * Writes what was seen since the last flush, once `after` (the last page's writes) is done; answers the
   * new rows' ids with their kind and name (for entities). A new entity (or issue) gets its first
   * version's id as its stable id. The new rows' encoding starts at once, so it runs while the last
   * page's statements do: their sum was the merge's critical path (the merge waited on it for two
   * thirds of a /16's merge on PostgreSQL).
   */
  flush(after: Promise<unknown>): Promise<Array<{ id: number; kind?: string; name?: string }>> {
    // What was seen so far is taken at once: sightings of the next page may arrive while it is written.
    const continued = this.#continued;
    const closed = this.#closed;
    const inserts = this.#inserts;
    this.#continued = new Map();
    this.#closed = [];
    this.#inserts = [];
    this.#written += inserts.length;
    const encoding = this.#encode(inserts as unknown as Array<Record<string, unknown>>);
    return this.#write(after, continued, closed, inserts, encoding);
  }

  async #write(
    after: Promise<unknown>,
    continued: Map<string, number[]>,
    closed: number[],
    inserts: Array<Insertable<Database[T]>>,
    encoding: Promise<void>,
  ): Promise<Array<{ id: number; kind?: string; name?: string }>> {
    // One page's statements at a time, in order (on SQLite the ids below follow the last page's).
    await after;
    // Sightings of one task share their last_seen: one update per task's batch, not per entity.
    for (const [lastSeen, ids] of continued)
      for (let i = 0; i < ids.length; i += CHUNK)
        await this.#update({ last_run_id: this.#runId, last_seen: lastSeen }, ids.slice(i, i + CHUNK));
    for (let i = 0; i < closed.length; i += CHUNK)
      await this.#update({ latest: 0 }, closed.slice(i, i + CHUNK));
    const stable = this.#table === "entities" ? "entity_id" : "issue_id";
    const inserted: Array<{ id: number; kind?: string; name?: string }> = [];
    // Ids are taken before the insert so that a new entity (or issue) gets its first version's id as its
    // stable id in the same row: no second write of every new row.
    const ids = await allocateIds(this.#trx, this.#table, inserts.length);
    await encoding;
    const rows = inserts.map((insert, index) => {
      const row = insert as unknown as { id: number; kind?: string; name?: string } & Record<string, unknown>;
      row.id = ids[index];
      row[stable] ??= row.id;
      inserted.push({ id: row.id, kind: row.kind, name: row.name });
      return insert;
    });
    await insertChunks(this.#trx, this.#table, rows);
    await this.#analyzeAsItGrows();
    return inserted;
  }

  /**
   * PostgreSQL: the table's statistics refreshed each time the merge has doubled what it wrote. The merge
   * looks up previous versions in the table it grows, inside its own transaction, where autovacuum's
   * statistics cannot follow; without them the planner took `name in (…)` as a filter over the index
   * range of the other key columns, reading every version of the kind written so far for each list of
   * names, and a /16's merge grew with the square of its entities. ANALYZE
   * samples a bounded number of rows (its own transaction's new rows among them), and doubling keeps
   * it to a few per merge.
   */
  async #analyzeAsItGrows(): Promise<void> {
    if (this.#written < this.#analyzeAt || !(this.#trx.getExecutor().adapter instanceof PostgresAdapter))
      return;
    this.#analyzeAt = 2 * this.#written;
    await sql`analyze ${sql.table(this.#table)}`.execute(this.#trx);
  }

  /**
   * The new versions' JSON columns, held as text since `see` (a sighting that continues a version is
   * never encoded), encoded as stored, on the encoding thread while this one goes on. It never fails:
   * should the thread fail, the values are encoded on this one.
   */
  async #encode(rows: Array<Record<string, unknown>>): Promise<void> {
    const columns = JSON_COLUMNS[this.#table];
    const encoded = await encodeJsonMany(
      rows.flatMap((row) => columns.map((column) => row[column] as string)),
    );
    let next = 0;
    for (const row of rows) for (const column of columns) row[column] = encoded[next++];
  }

  async #update(values: { last_run_id?: number; last_seen?: string; latest?: number }, ids: number[]) {
    // Both tables have these columns; Kysely cannot see that through the generic table name.
    const table = this.#table as "entities";
    await this.#trx.updateTable(table).set(values).where("id", "in", ids).execute();
    await pace();
  }
}

/** The products and CVEs of new versions of services and applications, for the indexed results. */
async function writeFacts(
  trx: Transaction<Database>,
  collectionId: number,
  inserted: Array<{ id: number; kind?: string; name?: string }>,
  entities: Map<string, MergedEntity>,
): Promise<void> {
  if (entities.size === 0) return;
  const products: Array<Insertable<Database["entity_products"]>> = [];
  const vulns: Array<Insertable<Database["entity_vulns"]>> = [];
  for (const row of inserted) {
    const entity = entities.get(keyOf(row.kind ?? "", row.name ?? ""));
    if (!entity) continue;
    for (const { product, version, label } of productFacts(entity))
      products.push({ collection_id: collectionId, entity_row_id: row.id, product, version, label });
    for (const { cve, product } of vulnerabilityFacts(entity))
      vulns.push({ collection_id: collectionId, entity_row_id: row.id, cve_id: cve, product });
  }
  await insertChunks(trx, "entity_products", products);
  await insertChunks(trx, "entity_vulns", vulns);
}

/**
 * `count` new ids for a table, in a transaction that writes it: PostgreSQL's sequence, or on SQLite (one
 * writer at a time) the ids after the largest one used, which AUTOINCREMENT then records.
 */
async function allocateIds(trx: Transaction<Database>, table: "entities" | "findings", count: number) {
  if (count === 0) return [];
  if (trx.getExecutor().adapter instanceof PostgresAdapter) {
    const result = await sql<{ id: string | number }>`
      select nextval(pg_get_serial_sequence(${table}, 'id')) as id from generate_series(1, ${count})`.execute(
      trx,
    );
    return result.rows.map((row) => Number(row.id));
  }
  const result = await sql<{ top: number | null }>`
    select max(coalesce((select seq from sqlite_sequence where name = ${table}), 0), coalesce((select max(id) from ${sql.table(table)}), 0)) as top`.execute(
    trx,
  );
  const top = Number(result.rows[0]?.top ?? 0);
  return Array.from({ length: count }, (_, index) => top + index + 1);
}

/**
 * What one task found, as the rows its staging inserts: written by `EntitiesRepository.stage`, or with
 * the task's completion, in the same statement or transaction (`RunsRepository.completeTask`).
 */
export interface StagingRows {
  entities: Insertable<StagedEntitiesTable>[];
  findings: Insertable<StagedFindingsTable>[];
  notes: Insertable<Database["run_notes"]>[];
}

/** Paced (`mapPaced`): a zone transfer's task stages tens of thousands of entities. */
export async function stagingRows(
  runId: number,
  collectionId: number,
  work: StagedWork,
): Promise<StagingRows> {
  const seenAt = nowIso();
  return {
    entities: await mapPaced(work.entities, (entity) => ({
      run_id: runId,
      collection_id: collectionId,
      kind: entity.kind,
      name: entity.name,
      details: JSON.stringify(entity.details),
      scoped: entity.scoped ? 1 : 0,
      hidden: entity.hidden ? 1 : 0,
      depth: entity.depth,
      aliases: JSON.stringify(entity.aliases),
      ancestors: JSON.stringify(entity.ancestors),
      task_result: entity.taskResult ? JSON.stringify(entity.taskResult) : null,
      seen_at: seenAt,
    })),
    findings: await mapPaced(work.findings, (finding) => ({
      run_id: runId,
      collection_id: collectionId,
      ...findingColumns(finding),
      details: JSON.stringify(finding.details),
      seen_at: seenAt,
    })),
    notes: work.notes.map((note) => ({
      run_id: runId,
      collection_id: collectionId,
      kind: typeof note === "string" ? (work.noteKind ?? "other") : note.kind,
      message: typeof note === "string" ? note : note.message,
      created_at: seenAt,
    })),
  };
}

export const stagingSize = (rows: StagingRows) =>
  rows.entities.length + rows.findings.length + rows.notes.length;

/** Several tasks' staging rows as one. */
export function joinStaging(list: StagingRows[]): StagingRows {
  return {
    entities: list.flatMap((rows) => rows.entities),
    findings: list.flatMap((rows) => rows.findings),
    notes: list.flatMap((rows) => rows.notes),
  };
}

/** A column of rows as one array parameter, cast to the column's type. */
const column = <Row>(rows: Row[], type: "integer" | "text", pick: (row: Row) => unknown) =>
  sql`${rows.map(pick)}::${sql.raw(type)}[]`;

/**
 * PostgreSQL: the staging inserts as common table expressions for a statement to begin with, one per
 * table with rows (`staged_entities_in`, `staged_findings_in`, `run_notes_in`), each reading its rows
 * from arrays (`unnest`): the same text for any number of rows, so each of the few texts is prepared
 * once per connection (prepared-statements.ts), and no bound on the rows. A table without rows is left
 * out: PostgreSQL opens and locks every table a statement names, with its indexes, rows or none.
 */
export function stagingCtes(rows: StagingRows) {
  const { entities: e, findings: f, notes: n } = rows;
  const ctes = [];
  if (e.length > 0)
    ctes.push(sql`staged_entities_in as (
    insert into staged_entities (run_id, collection_id, kind, name, details, scoped, hidden, depth, aliases, ancestors, task_result, seen_at)
    select * from unnest(${column(e, "integer", (r) => r.run_id)}, ${column(e, "integer", (r) => r.collection_id)},
      ${column(e, "text", (r) => r.kind)}, ${column(e, "text", (r) => r.name)}, ${column(e, "text", (r) => r.details)},
      ${column(e, "integer", (r) => r.scoped)}, ${column(e, "integer", (r) => r.hidden)}, ${column(e, "integer", (r) => r.depth)},
      ${column(e, "text", (r) => r.aliases)}, ${column(e, "text", (r) => r.ancestors)}, ${column(e, "text", (r) => r.task_result ?? null)},
      ${column(e, "text", (r) => r.seen_at)})
    returning id)`);
  if (f.length > 0)
    ctes.push(sql`staged_findings_in as (
    insert into staged_findings (run_id, collection_id, name, entity_kind, entity_name, pretty_name, severity, confidence, category, description, remediation, reference_links, details, scoped, seen_at)
    select * from unnest(${column(f, "integer", (r) => r.run_id)}, ${column(f, "integer", (r) => r.collection_id)},
      ${column(f, "text", (r) => r.name)}, ${column(f, "text", (r) => r.entity_kind)}, ${column(f, "text", (r) => r.entity_name)},
      ${column(f, "text", (r) => r.pretty_name)}, ${column(f, "integer", (r) => r.severity)}, ${column(f, "text", (r) => r.confidence)},
      ${column(f, "text", (r) => r.category)}, ${column(f, "text", (r) => r.description)}, ${column(f, "text", (r) => r.remediation)},
      ${column(f, "text", (r) => r.reference_links)}, ${column(f, "text", (r) => r.details)}, ${column(f, "integer", (r) => r.scoped)},
      ${column(f, "text", (r) => r.seen_at)})
    returning id)`);
  if (n.length > 0)
    ctes.push(sql`run_notes_in as (
    insert into run_notes (run_id, collection_id, kind, message, created_at)
    select * from unnest(${column(n, "integer", (r) => r.run_id)}, ${column(n, "integer", (r) => r.collection_id)},
      ${column(n, "text", (r) => r.kind)}, ${column(n, "text", (r) => r.message)}, ${column(n, "text", (r) => r.created_at)})
    returning id)`);
  return ctes;
}

/** Writes the rows in chunks (inside a transaction, for them to land together). */
export async function insertStaging(db: Kysely<Database>, rows: StagingRows): Promise<void> {
  await insertChunks(db, "staged_entities", rows.entities);
  await insertChunks(db, "staged_findings", rows.findings);
  if (rows.notes.length > 0) await db.insertInto("run_notes").values(rows.notes).execute();
}

/**
 * Rows of a task's staging written per transaction (SQLite) or statement (PostgreSQL) at most: a zone
 * transfer's 65,000 sightings in one SQLite commit held the server's event loop about 100 ms (a commit is
 * one synchronous step), and one PostgreSQL statement of them as long in building its parameters.
 */
export const STAGING_PIECE = 1_000;

/** `rows` in pieces of STAGING_PIECE rows at most, in order; the notes (a few) with the last piece. */
function stagingPieces(rows: StagingRows): StagingRows[] {
  const pieces: StagingRows[] = [];
  for (let i = 0; i < rows.entities.length; i += STAGING_PIECE)
    pieces.push({ entities: rows.entities.slice(i, i + STAGING_PIECE), findings: [], notes: [] });
  for (let i = 0; i < rows.findings.length; i += STAGING_PIECE)
    pieces.push({ entities: [], findings: rows.findings.slice(i, i + STAGING_PIECE), notes: [] });
  if (pieces.length === 0) pieces.push({ entities: [], findings: [], notes: [] });
  pieces[pieces.length - 1].notes = rows.notes;
  return pieces;
}

/**
 * Writes a task's staging rows on their own, without a completion; more than STAGING_PIECE of them in
 * pieces, each its own commit. Staging is append-only sightings, so pieces need not land together: should
 * the writing stop between two, the task is done again and stages them again, and sightings staged twice
 * merge as one (`mergeDetails` unites, provenance is a set).
 */
export async function stageRows(db: Kysely<Database>, rows: StagingRows): Promise<void> {
  if (stagingSize(rows) === 0) return;
  if (stagingSize(rows) > STAGING_PIECE) {
    for (const piece of stagingPieces(rows)) {
      await stageRows(db, piece);
      await pace();
    }
    return;
  }
  // PostgreSQL: a task's entities, findings and notes in one statement, atomic as a statement is: one
  // round trip where a transaction took four or five.
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`with ${sql.join(stagingCtes(rows))} select 1`.execute(db);
    wroteStaging(db, [rows]);
    return;
  }
  // SQLite: most tasks stage a few entities and nothing else, one statement with no transaction around it.
  if (rows.entities.length <= CHUNK && rows.findings.length === 0 && rows.notes.length === 0) {
    await insertChunks(db, "staged_entities", rows.entities);
    return;
  }
  await db.transaction().execute((trx) => insertStaging(trx, rows));
}

/** Staged rows read per page, and entities merged and written per batch. */
const PAGE = 250;
/** Ids of staged rows looked at per read when gathering the run's aliases (a millisecond or two). */
const ALIAS_WINDOW = 2000;

/** The first string after every string that starts with `prefix` (its last character plus one). */
const prefixEnd = (prefix: string) =>
  prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);

export class EntitiesRepository {
  readonly db: Kysely<Database>;
  constructor(db: Kysely<Database>) {
    this.db = db;
  }

  /** Appends what a task found to the run's staging rows (append-only: concurrent tasks never conflict). */
  async stage(runId: number, collectionId: number, work: StagedWork): Promise<void> {
    await this.stageRows(await stagingRows(runId, collectionId, work));
  }

  /** Writes a task's staging rows (`stagingRows`) on their own, without a completion. */
  async stageRows(rows: StagingRows): Promise<void> {
    await stageRows(this.db, rows);
  }

  /**
   * Makes the run's staged findings the collection's results, in one transaction. An entity (or
   * finding) the previous finished run saw with the same content only gets this run as its last run
   * and this run's last_seen; a new one, a changed one, or one returning after a run that missed it
   * starts a new version here (see migration 008), keeping its first_seen, first run and stable id.
   * Names and the addresses they resolve to share an alias group. Then the staging rows go.
   */
  async finishRun(runId: number, collectionId: number): Promise<MergeSummary> {
    const summary = await this.mergeRun(runId, collectionId);
    await this.reclaimStaging();
    return summary;
  }

  /** `finishRun` without giving back the staging rows' space (`reclaimStaging`, which may come later). */
  async mergeRun(runId: number, collectionId: number): Promise<MergeSummary> {
    const summary = await this.#merge(runId, collectionId);
    // PostgreSQL plans from statistics that autovacuum refreshes only after a while; a merge that wrote
    // many versions would otherwise be read with plans made for the empty tables (nested loops over
    // whole collections). SQLite keeps no statistics unless asked and plans these reads well without.
    if (summary.written > ANALYZE_AFTER && this.db.getExecutor().adapter instanceof PostgresAdapter)
      await sql`analyze entities, findings, entity_products, entity_vulns`.execute(this.db);
    return { entities: summary.entities, findings: summary.findings };
  }

  /**
   * The staging rows a merge deleted leave free pages (SQLite) or dead rows (PostgreSQL): gives them back
   * (`oneStep`: see reclaimFreeSpace).
   */
  async reclaimStaging(options: { oneStep?: boolean } = {}): Promise<void> {
    await reclaimFreeSpace(this.db, ["staged_entities", "staged_findings"], options);
  }

  /**
   * The merge streams: the run's staged rows are read in (kind, name) order a page at a time, each
   * entity's sightings merged as they come (lists as sets), and written a batch at a time with the
   * event loop served between batches. What is held for the whole run is the alias graph of the
   * entities that name each other (names and their addresses), not the entities.
   */
  async #merge(runId: number, collectionId: number) {
    // Its commit is tens of megabytes at a large run: the log is copied back on a thread (large-commit.ts).
    return largeTransaction(this.db, async (trx) => {
      // Within the merge's own transaction: a crash after it cannot commit a merge of what it emptied.
      if (await workingTablesLost(trx, runId)) throw new Error(WORKING_TABLES_LOST);
      const previous = await trx
        .selectFrom("collection_results")
        .select("run_id")
        .where("collection_id", "=", collectionId)
        .executeTakeFirst();
      const previousRunId = previous?.run_id;
      const top = await trx
        .selectFrom("entities")
        .select((eb) => eb.fn.max("alias_group").as("top"))
        .where("collection_id", "=", collectionId)
        .executeTakeFirst();
      let nextGroup = Number(top?.top ?? 0) + 1;
      // PostgreSQL plans the paged reads below from statistics autovacuum may not have taken yet (without
      // them a page of staged findings was a bitmap scan of every row after the cursor, then a sort).
      // Within this transaction every statement is planned for its own parameters: the pool sends
      // statements inside a transaction unnamed (prepared-statements.ts).
      if (trx.getExecutor().adapter instanceof PostgresAdapter)
        await sql`analyze staged_entities, staged_findings`.execute(trx);
      // In a collection's first merge (a new collection, most often the largest run it will have) there
      // is no previous version to look up: every entity and issue is new.
      const holds = async (table: "entities" | "findings") =>
        (
          await trx
            .selectFrom(table)
            .select("id")
            .where("collection_id", "=", collectionId)
            .limit(1)
            .execute()
        ).length > 0;
      const [heldEntities, heldFindings] = [await holds("entities"), await holds("findings")];
      const { groups, componentGroup } = await aliasComponents(trx, runId, collectionId);

      const versions = new Versions(trx, "entities", runId, previousRunId);
      let count = 0;
      // One page's writes in flight while the next page is worked on (see `readAhead`).
      let writing: Promise<unknown> = Promise.resolve();
      for await (const [batch, existing] of readAhead(stagedEntityBatches(trx, runId), async (batch) =>
        heldEntities ? latestVersions(trx, collectionId, batch) : new Map<string, LatestVersion>(),
      )) {
        count += batch.length;
        const facts = new Map<string, MergedEntity>();
        for (const entity of batch) {
          const key = keyOf(entity.kind, entity.name);
          const old = existing.get(key);
          let group: number;
          if (groups.has(key)) {
            // A component keeps the smallest group any member already had, so groups are stable across runs.
            const root = groups.find(key);
            group = componentGroup.get(root) ?? nextGroup++;
            componentGroup.set(root, group);
          } else group = old?.alias_group ?? nextGroup++;
          const content = {
            details: JSON.stringify(entity.details),
            scoped: entity.scoped ? 1 : 0,
            hidden: entity.hidden ? 1 : 0,
            alias_group: group,
            ancestors: JSON.stringify(entity.ancestors),
            task_results: JSON.stringify(entity.taskResults),
          };
          // Provenance is left out: which task reached an entity first (a name or another resolving to
          // the same address, say) depends on timing, and is not a change of the entity.
          const hash = contentHash({
            details: entity.details,
            scoped: content.scoped,
            hidden: content.hidden,
            alias_group: content.alias_group,
          });
          const { address, port } = addressOf(entity);
          const isNew = versions.see(old, hash, entity.lastSeen, {
            ...content,
            address,
            port,
            collection_id: collectionId,
            kind: entity.kind,
            name: entity.name,
            first_seen: old?.first_seen ?? entity.firstSeen,
            first_run_id: old?.first_run_id ?? runId,
            entity_id: old?.entity_id ?? null,
          });
          if (isNew && carriesProducts(entity)) facts.set(key, entity);
        }
        const previous = writing;
        writing = versions.flush(previous).then((inserted) => writeFacts(trx, collectionId, inserted, facts));
        writing.catch(() => {}); // awaited on the next page, and after the last
        await previous;
        await yieldToLoop();
      }
      // The findings' endpoints are read from the entities just written.
      await writing;
      // PostgreSQL: the endpoints' look-ups below are planned with the statistics of the table before
      // this merge (for a new collection, an empty one) unless it is analyzed now, and they would grow
      // faster than the run; the look-up below is filtered by run here, not in SQL, for the same reason.
      if (versions.written > ANALYZE_AFTER && trx.getExecutor().adapter instanceof PostgresAdapter)
        await sql`analyze entities`.execute(trx);

      // Findings a page at a time in key order, like the entities (memory: a page, not the run).
      const findingVersions = new Versions(trx, "findings", runId, previousRunId);
      let findingCount = 0;
      for await (const [batch, { existing, endpoints }] of readAhead(
        stagedFindingBatches(trx, runId),
        async (batch) => ({
          existing: heldFindings
            ? await latestFindings(trx, collectionId, batch)
            : new Map<string, LatestVersion>(),
          endpoints: await endpointsOf(trx, collectionId, runId, batch),
        }),
      )) {
        findingCount += batch.length;
        // A check's texts are stored once per collection: the new versions carry their key.
        const texts = new Map<string, FindingTextColumns>();
        for (const finding of batch) {
          const { description, remediation, reference_links, ...columns } = findingColumns(finding);
          const textHash = findingTextHash(description, remediation, reference_links);
          const old = existing.get(keyOf(finding.name, keyOf(finding.entityKind, finding.entityName)));
          const endpoint = endpoints.get(keyOf(finding.entityKind, finding.entityName)) ?? null;
          // A finding whose entity moved to another service is a new version (endpoint left out when
          // null, so findings on names hash as they always have).
          const hash = contentHash({
            ...finding,
            firstSeen: 0,
            lastSeen: 0,
            endpoint: endpoint ?? undefined,
          });
          const isNew = findingVersions.see(old, hash, finding.lastSeen, {
            ...columns,
            details: JSON.stringify(finding.details),
            endpoint,
            text_hash: textHash,
            collection_id: collectionId,
            first_seen: old?.first_seen ?? finding.firstSeen,
            first_run_id: old?.first_run_id ?? runId,
            issue_id: old?.entity_id ?? null,
          });
          if (isNew) texts.set(textHash, { description, remediation, reference_links });
        }
        const previous = writing;
        writing = Promise.all([
          previous.then(() => writeTexts(trx, collectionId, texts)),
          findingVersions.flush(previous),
        ]);
        writing.catch(() => {});
        await previous;
        await yieldToLoop();
      }
      await writing;

      const finishedAt = nowIso();
      await trx
        .insertInto("collection_results")
        .values({ collection_id: collectionId, run_id: runId, finished_at: finishedAt })
        .onConflict((oc) =>
          oc.column("collection_id").doUpdateSet({ run_id: runId, finished_at: finishedAt }),
        )
        .execute();
      await deleteStaging(trx, runId);
      return {
        entities: count,
        findings: findingCount,
        written: versions.written + findingVersions.written,
      };
    });
  }

  /**
   * What a run has staged so far about entities of some kinds, each entity's sightings merged: those named
   * in `names`, or whose name starts with one of `prefixes` (the services of an address: "1.2.3.4:").
   */
  async staged(
    runId: number,
    kinds: string[],
    filter: { names: string[] } | { prefixes: string[] },
  ): Promise<StagedSighting[]> {
    const values = "names" in filter ? filter.names : filter.prefixes;
    if (values.length === 0) return [];
    // In bounded batches: one term per value would outgrow SQLite's expression depth (1,000) and any plan.
    // A prefix is a range of names' bytes ("1.2.3.4:" up to "1.2.3.4;"), not a LIKE: on SQLite a range of
    // the (run_id, kind, name) index (SQLite's LIKE ignores case and so cannot use it); on PostgreSQL, for
    // services, a range of the services' index in "C" order (migration 019), since the name's own
    // collation may order punctuation its own way and LIKE read every staged service of the run. A name
    // matches one prefix at most (they end in ":"), so each entity's rows come in one batch, in the order
    // they were staged.
    const rows: Array<
      Pick<Selectable<StagedEntitiesTable>, "kind" | "name" | "details" | "scoped" | "depth" | "ancestors">
    > = [];
    const batch = "names" in filter ? CHUNK * 5 : CHUNK;
    const postgres = this.db.getExecutor().adapter instanceof PostgresAdapter;
    // The services' index is partial: its predicate must be in the query as a literal to be used.
    const servicesByBytes =
      postgres && "prefixes" in filter && kinds.length === 1 && kinds[0] === "NetworkService";
    for (let i = 0; i < values.length; i += batch) {
      const slice = values.slice(i, i + batch);
      rows.push(
        ...(await this.db
          .selectFrom("staged_entities")
          .select(["kind", "name", "details", "scoped", "depth", "ancestors"])
          .where("run_id", "=", runId)
          .where((eb) => (servicesByBytes ? sql<boolean>`kind = 'NetworkService'` : eb("kind", "in", kinds)))
          .where((eb) =>
            "names" in filter
              ? eb("name", "in", slice)
              : eb.or(
                  slice.map((prefix) =>
                    servicesByBytes
                      ? sql<boolean>`(name collate "C") >= ${prefix} and (name collate "C") < ${prefixEnd(prefix)}`
                      : postgres
                        ? eb("name", "like", `${prefix}%`)
                        : eb.and([eb("name", ">=", prefix), eb("name", "<", prefixEnd(prefix))]),
                  ),
                ),
          )
          .orderBy("id")
          .execute()),
      );
      await pace();
    }
    const merged = new Map<string, StagedSighting>();
    for (const row of rows) {
      const details = JSON.parse(row.details) as Details;
      const key = keyOf(row.kind, row.name);
      const previous = merged.get(key);
      if (!previous) {
        merged.set(key, {
          kind: row.kind,
          name: row.name,
          details,
          scoped: row.scoped === 1,
          depth: row.depth,
          ancestors: JSON.parse(row.ancestors),
        });
        continue;
      }
      previous.details = mergeDetails(previous.details, details);
      previous.scoped ||= row.scoped === 1;
      if (row.depth < previous.depth) {
        previous.depth = row.depth;
        previous.ancestors = JSON.parse(row.ancestors);
      }
    }
    return [...merged.values()];
  }

  /** The run the collection's results come from, if any run has finished. */
  async resultRun(collectionId: number): Promise<{ runId: number; finishedAt: string } | undefined> {
    const row = await this.db
      .selectFrom("collection_results")
      .selectAll()
      .where("collection_id", "=", collectionId)
      .executeTakeFirst();
    return row && { runId: row.run_id, finishedAt: row.finished_at };
  }

  /** How many notes of each kind a run has, most first. */
  async noteCounts(runId: number): Promise<Array<{ kind: string; count: number }>> {
    const rows = await this.db
      .selectFrom("run_notes")
      .select(["kind", (eb) => eb.fn.countAll<number | string | bigint>().as("count")])
      .where("run_id", "=", runId)
      .groupBy("kind")
      .execute();
    return rows
      .map((row) => ({ kind: row.kind, count: Number(row.count) }))
      .sort((a, b) => b.count - a.count || a.kind.localeCompare(b.kind));
  }

  /** Each kind of a run's notes with its count and first `examples` messages (one query per kind). */
  async noteKinds(runId: number, examples = 3): Promise<NoteKindSummary[]> {
    const counts = await this.noteCounts(runId);
    return Promise.all(
      counts.map(async ({ kind, count }) => ({
        kind,
        count,
        examples: (
          await this.db
            .selectFrom("run_notes")
            .select("message")
            .where("run_id", "=", runId)
            .where("kind", "=", kind)
            .orderBy("id")
            .limit(examples)
            .execute()
        ).map((row) => row.message),
      })),
    );
  }

  /** One page of a run's notes, in the order they were written, optionally of one kind. */
  async notePage(
    runId: number,
    page: { kind?: string; limit: number; offset: number },
  ): Promise<Array<{ kind: string; message: string; created_at: string }>> {
    let query = this.db
      .selectFrom("run_notes")
      .select(["kind", "message", "created_at"])
      .where("run_id", "=", runId);
    if (page.kind !== undefined) query = query.where("kind", "=", page.kind);
    return query.orderBy("id").limit(page.limit).offset(page.offset).execute();
  }

  async notes(runId: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom("run_notes")
      .select("message")
      .where("run_id", "=", runId)
      .orderBy("id")
      .execute();
    return rows.map((row) => row.message);
  }
}

/**
 * The key of a finding's texts in finding_texts: 128 bits of SHA-256 over the three, as base64url. The
 * same as migration 015's, which keyed the texts of the findings stored before it.
 */
export function findingTextHash(description: string, remediation: string, referenceLinks: string): string {
  return createHash("sha256")
    .update(JSON.stringify([description, remediation, referenceLinks]))
    .digest("base64url")
    .slice(0, 22);
}

/** Stores the texts the merge's new finding versions name, each once per collection. */
async function writeTexts(
  trx: Transaction<Database>,
  collectionId: number,
  texts: Map<string, FindingTextColumns>,
): Promise<void> {
  const rows = [...texts].map(([hash, text]) => ({ collection_id: collectionId, hash, ...text }));
  for (let i = 0; i < rows.length; i += CHUNK) {
    await trx
      .insertInto("finding_texts")
      .values(rows.slice(i, i + CHUNK))
      .onConflict((oc) => oc.columns(["collection_id", "hash"]).doNothing())
      .execute();
    await pace();
  }
}

/** A stored finding as the repository speaks of it, with its texts; its id is the issue's stable id. */
export function findingOf(
  row: Selectable<FindingsTable>,
  text: FindingTextColumns,
): Omit<FindingRecord, "aliasGroup"> {
  return {
    id: row.issue_id ?? row.id,
    name: row.name,
    entityKind: row.entity_kind,
    entityName: row.entity_name,
    prettyName: row.pretty_name,
    severity: row.severity,
    confidence: row.confidence,
    category: row.category,
    description: text.description,
    remediation: text.remediation,
    references: JSON.parse(text.reference_links),
    details: parseStored(row.details),
    scoped: row.scoped === 1,
    firstSeen: row.first_seen,
    lastSeen: row.last_seen,
  };
}

/** What a staged finding row holds but its details: the finding and its texts. */
function findingColumns(finding: Finding) {
  return {
    name: finding.name,
    entity_kind: finding.entityKind,
    entity_name: finding.entityName,
    pretty_name: finding.prettyName,
    severity: finding.severity,
    confidence: finding.confidence,
    category: finding.category,
    description: finding.description,
    remediation: finding.remediation,
    reference_links: JSON.stringify(finding.references),
    scoped: finding.scoped ? 1 : 0,
  } satisfies Partial<StagedFindingsTable>;
}

/** One entity's sightings being merged, in the order they were staged. */
class Sightings {
  readonly entity: MergedEntity;
  readonly #details = new DetailsMerger();
  readonly #tasks = new Set<string>();

  constructor(row: Selectable<StagedEntitiesTable>) {
    this.entity = {
      kind: row.kind,
      name: row.name,
      details: {},
      scoped: row.scoped === 1,
      hidden: row.hidden === 1,
      depth: row.depth,
      aliases: [],
      ancestors: JSON.parse(row.ancestors),
      taskResults: [],
      firstSeen: row.seen_at,
      lastSeen: row.seen_at,
    };
    this.#see(row);
  }

  add(row: Selectable<StagedEntitiesTable>): void {
    const entity = this.entity;
    // Seen in scope or in plain sight once is enough.
    entity.scoped ||= row.scoped === 1;
    entity.hidden &&= row.hidden === 1;
    if (row.depth < entity.depth) {
      entity.depth = row.depth;
      entity.ancestors = JSON.parse(row.ancestors);
    }
    if (row.seen_at < entity.firstSeen) entity.firstSeen = row.seen_at;
    if (row.seen_at > entity.lastSeen) entity.lastSeen = row.seen_at;
    this.#see(row);
  }

  #see(row: Selectable<StagedEntitiesTable>): void {
    this.#details.add(JSON.parse(row.details));
    if (!row.task_result) return;
    const result = JSON.parse(row.task_result) as TaskResult;
    if (this.#tasks.has(result.name)) return;
    this.#tasks.add(result.name);
    this.entity.taskResults.push(result);
  }

  done(): MergedEntity {
    const entity = this.entity;
    entity.details = this.#details.result();
    // Tasks finish in any order; provenance in a fixed order keeps an unchanged entity's content unchanged.
    entity.taskResults.sort((a, b) => a.depth - b.depth || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return entity;
  }
}

/**
 * A run's staged entities merged, in (kind, name) order, a batch at a time: the rows are read a page at
 * a time in that order (keyset paging over the run's (kind, name, id) index), so the sightings of one
 * entity are adjacent and in the order they were staged.
 */
async function* stagedEntityBatches(
  trx: Transaction<Database>,
  runId: number,
): AsyncGenerator<MergedEntity[]> {
  const groups = adjacentGroups(
    (after: Selectable<StagedEntitiesTable> | undefined) => {
      let query = trx
        .selectFrom("staged_entities")
        .selectAll()
        .where("run_id", "=", runId)
        .orderBy("kind")
        .orderBy("name")
        .orderBy("id")
        .limit(PAGE);
      if (after) {
        const { kind, name, id } = after;
        query = query.where(({ eb, refTuple, tuple }) =>
          eb(refTuple("kind", "name", "id"), ">", tuple(kind, name, id)),
        );
      }
      return query.execute();
    },
    (row) => keyOf(row.kind, row.name),
    (sightings: Sightings | undefined, row) => {
      if (!sightings) return new Sightings(row);
      sightings.add(row);
      return sightings;
    },
  );
  for await (const batch of groups) yield batch.map((sightings) => sightings.done());
}

/**
 * Each batch with what `prepare` looked up for it, one batch ahead: while the caller works on batch N
 * (hashing and compressing it, then starting its writes), batch N+1 is read, folded and looked up. On
 * PostgreSQL the database then reads and writes while this thread computes, where each waited for the
 * other; the merge's statements still go one at a time over its one connection, in order. The look-ups
 * of a batch see none of the writes of the batch before it, which never touch its keys (a key's rows are
 * in one batch). SQLite's statements are synchronous: there it changes only the order of the same work.
 */
async function* readAhead<T, U>(
  batches: AsyncIterator<T>,
  prepare: (batch: T) => Promise<U>,
): AsyncGenerator<[T, U]> {
  const step = async (): Promise<[T, U] | undefined> => {
    const next = await batches.next();
    return next.done ? undefined : [next.value, await prepare(next.value)];
  };
  let next = step();
  for (;;) {
    const current = await next;
    if (!current) return;
    next = step();
    next.catch(() => {}); // awaited on the next turn, where a failure surfaces
    yield current;
  }
}

/**
 * Groups of adjacent rows, read a page at a time: `page` reads the PAGE rows after the last one it was
 * given (keyset paging, in an order that keeps each group's rows together), `key` names a row's group, and
 * `fold` adds a row to its group (undefined: the group's first row). A group may span pages; each batch
 * answers the groups that closed in its page, so memory is a page and a group.
 */
async function* adjacentGroups<Row, Group>(
  page: (after: Row | undefined) => Promise<Row[]>,
  key: (row: Row) => string,
  fold: (group: Group | undefined, row: Row) => Group,
): AsyncGenerator<Group[]> {
  let open: { key: string; group: Group } | undefined;
  let after: Row | undefined;
  for (;;) {
    const rows = await page(after);
    const batch: Group[] = [];
    for (const row of rows) {
      await pace();
      const rowKey = key(row);
      if (open?.key === rowKey) open.group = fold(open.group, row);
      else {
        if (open) batch.push(open.group);
        open = { key: rowKey, group: fold(undefined, row) };
      }
    }
    if (rows.length < PAGE) {
      if (open) batch.push(open.group);
      if (batch.length > 0) yield batch;
      return;
    }
    after = rows[rows.length - 1];
    if (batch.length > 0) yield batch;
  }
}

/** Which of these names of one kind a run staged (each a range of the staging index by run, kind and name). */
export const stagedNames = (db: Kysely<Database>, runId: number, kind: string, names: string[]) =>
  db
    .selectFrom("staged_entities")
    .select(["kind", "name"])
    .distinct()
    .where("run_id", "=", runId)
    .where("kind", "=", kind)
    .where("name", "in", names);

/**
 * The alias groups of a run: entities that name each other (a name and the addresses it resolves to)
 * joined, and each joined component's smallest group from earlier runs. Only the rows that carry
 * aliases are read, and only the joined keys held.
 */
async function aliasComponents(trx: Transaction<Database>, runId: number, collectionId: number) {
  const groups = new Groups();
  const pairs: Array<[string, EntityKey]> = [];
  // The staged rows with aliases, read in windows of ids, each starting at the next id there is: each
  // read looks at a bounded range of the table. (Keyed by id after the last one read and ordered by id,
  // each page read and sorted every staged row of the run, SQLite choosing the run's index: quadratic,
  // and tens of milliseconds of the event loop per page at a /20.) `run_id + 0` keeps the run's index
  // out of it, on both dialects.
  for (let after = 0; ; ) {
    const next = await trx
      .selectFrom("staged_entities")
      .select((eb) => eb.fn.min("id").as("id"))
      .where("id", ">", after)
      .executeTakeFirst();
    if (next?.id == null) break;
    const first = Number(next.id);
    after = first + ALIAS_WINDOW - 1;
    const rows = await trx
      .selectFrom("staged_entities")
      .select(["kind", "name", "aliases"])
      .where(sql`run_id + 0`, "=", runId)
      .where("id", ">=", first)
      .where("id", "<=", after)
      .where("aliases", "!=", "[]")
      .execute();
    for (const row of rows)
      for (const alias of JSON.parse(row.aliases) as EntityKey[])
        pairs.push([keyOf(row.kind, row.name), alias]);
    await pace();
  }
  // An alias joins only an entity the run saw: looked up by kind and names, ranges of the staging index.
  // (By names alone each chunk read every staged row of the run: quadratic in a domain-seeded run, 3 s
  // of the event loop held in a /18's merge on SQLite and most of PostgreSQL's CPU.)
  const targets = new Map<string, Set<string>>();
  for (const [, alias] of pairs) {
    const names = targets.get(alias.kind);
    if (names) names.add(alias.name);
    else targets.set(alias.kind, new Set([alias.name]));
  }
  const seen = new Set<string>();
  for (const [kind, names] of targets) {
    const list = [...names];
    for (let i = 0; i < list.length; i += CHUNK) {
      for (const row of await stagedNames(trx, runId, kind, list.slice(i, i + CHUNK)).execute())
        seen.add(keyOf(row.kind, row.name));
      await pace();
    }
  }
  for (const [key, alias] of pairs) {
    const other = keyOf(alias.kind, alias.name);
    if (seen.has(other)) groups.join(key, other);
  }
  const componentGroup = new Map<string, number>();
  const members = groups.keys();
  for (let i = 0; i < members.length; i += CHUNK) {
    const names = [
      ...new Set(members.slice(i, i + CHUNK).map((key) => key.slice(key.indexOf("\u0000") + 1))),
    ];
    for (const row of await trx
      .selectFrom("entities")
      .select(["kind", "name", "alias_group"])
      .where("collection_id", "=", collectionId)
      .where("latest", "=", 1)
      .where("name", "in", names)
      .execute()) {
      const key = keyOf(row.kind, row.name);
      if (!groups.has(key)) continue;
      const root = groups.find(key);
      componentGroup.set(root, Math.min(componentGroup.get(root) ?? row.alias_group, row.alias_group));
    }
  }
  return { groups, componentGroup };
}

/** The latest versions of a batch of entities in the collection (one indexed look-up per kind and chunk). */
async function latestVersions(
  trx: Transaction<Database>,
  collectionId: number,
  batch: EntityKey[],
): Promise<Map<string, LatestVersion>> {
  const byKind = new Map<string, string[]>();
  for (const { kind, name } of batch) {
    const names = byKind.get(kind);
    if (names) names.push(name);
    else byKind.set(kind, [name]);
  }
  const existing = new Map<string, LatestVersion>();
  for (const [kind, names] of byKind)
    for (let i = 0; i < names.length; i += CHUNK)
      for (const row of await trx
        .selectFrom("entities")
        .select(["id", "kind", "name", "alias_group", "entity_id", "first_seen", "first_run_id"])
        .select(["last_run_id", "content_hash"])
        .where("collection_id", "=", collectionId)
        .where("latest", "=", 1)
        .where("kind", "=", kind)
        .where("name", "in", names.slice(i, i + CHUNK))
        .execute())
        existing.set(keyOf(row.kind, row.name), row);
  await pace();
  return existing;
}

/**
 * Deletes a run's staging rows. SQLite: a page at a time, since one statement over a /16's rows would
 * hold the event loop. PostgreSQL: one statement per table, which runs in the database while the loop
 * goes on; by pages it was about 7,000 round trips of a /16's merge.
 */
async function deleteStaging(db: Kysely<Database>, runId: number): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  for (const table of ["staged_entities", "staged_findings"] as const) {
    if (postgres) {
      await db.deleteFrom(table).where("run_id", "=", runId).execute();
      continue;
    }
    for (;;) {
      const ids = (
        await db
          .selectFrom(table)
          .select("id")
          .where("run_id", "=", runId)
          .limit(5 * PAGE)
          .execute()
      ).map((row) => row.id);
      if (ids.length === 0) break;
      for (let i = 0; i < ids.length; i += CHUNK)
        await db
          .deleteFrom(table)
          .where("id", "in", ids.slice(i, i + CHUNK))
          .execute();
      await yieldToLoop();
    }
  }
}

type MergedFinding = Finding & { firstSeen: string; lastSeen: string };

/** One finding's staged sightings folded, in the order they were staged; the last one's texts win. */
function foldFinding(
  previous: MergedFinding | undefined,
  row: Selectable<StagedFindingsTable>,
): MergedFinding {
  return {
    name: row.name,
    entityKind: row.entity_kind,
    entityName: row.entity_name,
    prettyName: row.pretty_name,
    severity: Math.min(row.severity, previous?.severity ?? row.severity),
    confidence: previous?.confidence === "confirmed" ? "confirmed" : row.confidence,
    category: row.category,
    description: row.description,
    remediation: row.remediation,
    references: JSON.parse(row.reference_links),
    details: mergeDetails(previous?.details ?? {}, JSON.parse(row.details)),
    scoped: (previous?.scoped ?? false) || row.scoped === 1,
    firstSeen: previous?.firstSeen ?? row.seen_at,
    lastSeen: row.seen_at,
  };
}

/**
 * The run's staged findings merged per (check, entity), a page at a time in key order (migration 016's
 * index), so a finding's sightings are adjacent and memory is a page: the whole run's findings in one map
 * took 1.3 GB of a /16's merge.
 */
function stagedFindingBatches(trx: Transaction<Database>, runId: number): AsyncGenerator<MergedFinding[]> {
  return adjacentGroups(
    (after: Selectable<StagedFindingsTable> | undefined) => {
      let query = trx
        .selectFrom("staged_findings")
        .selectAll()
        .where("run_id", "=", runId)
        .orderBy("name")
        .orderBy("entity_kind")
        .orderBy("entity_name")
        .orderBy("id")
        .limit(PAGE);
      if (after) {
        const { name, entity_kind, entity_name, id } = after;
        query = query.where(({ eb, refTuple, tuple }) =>
          eb(
            refTuple("name", "entity_kind", "entity_name", "id"),
            ">",
            tuple(name, entity_kind, entity_name, id),
          ),
        );
      }
      return query.execute();
    },
    (row) => keyOf(row.name, keyOf(row.entity_kind, row.entity_name)),
    foldFinding,
  );
}

/**
 * The latest versions of a batch's findings, looked up by the whole unique key of `findings_latest`: per
 * check and entity kind, the entities' names in bounded lists. A look-up by entity name alone let both
 * planners scan every latest finding of the collection for each list (the merge grew with the square of
 * the findings).
 */
async function latestFindings(
  trx: Transaction<Database>,
  collectionId: number,
  batch: MergedFinding[],
): Promise<Map<string, LatestVersion>> {
  const byCheck = new Map<string, { name: string; kind: string; entities: string[] }>();
  for (const finding of batch) {
    const check = keyOf(finding.name, finding.entityKind);
    const group = byCheck.get(check);
    if (group) group.entities.push(finding.entityName);
    else byCheck.set(check, { name: finding.name, kind: finding.entityKind, entities: [finding.entityName] });
  }
  const existing = new Map<string, LatestVersion>();
  for (const { name, kind, entities } of byCheck.values())
    for (let i = 0; i < entities.length; i += CHUNK)
      for (const row of await trx
        .selectFrom("findings")
        .select(["id", "name", "entity_kind", "entity_name", "issue_id as entity_id", "first_seen"])
        .select(["first_run_id", "last_run_id", "content_hash"])
        .where("collection_id", "=", collectionId)
        .where("name", "=", name)
        .where("entity_kind", "=", kind)
        .where("entity_name", "in", entities.slice(i, i + CHUNK))
        .where("latest", "=", 1)
        .execute())
        existing.set(keyOf(row.name, keyOf(row.entity_kind, row.entity_name)), row);
  await pace();
  return existing;
}

/**
 * The service each finding of a batch on a service or application runs on: its entity's address and
 * port, if this run saw the entity (its latest version is this run's).
 */
async function endpointsOf(
  trx: Transaction<Database>,
  collectionId: number,
  runId: number,
  batch: MergedFinding[],
): Promise<Map<string, string | null>> {
  const endpoints = new Map<string, string | null>();
  for (const kind of ["NetworkService", "Uri"]) {
    const names = [...new Set(batch.filter((f) => f.entityKind === kind).map((f) => f.entityName))];
    for (let i = 0; i < names.length; i += CHUNK)
      for (const row of await trx
        .selectFrom("entities")
        .select(["kind", "name", "address", "port", "last_run_id"])
        .where("collection_id", "=", collectionId)
        .where("latest", "=", 1)
        .where("kind", "=", kind)
        .where("name", "in", names.slice(i, i + CHUNK))
        .execute()) {
        // This run's entities only; filtered here, so that the look-up has one index to take.
        if (row.last_run_id !== runId) continue;
        endpoints.set(
          keyOf(row.kind, row.name),
          row.address !== null && row.port !== null ? endpointName(row.address, row.port) : null,
        );
      }
  }
  return endpoints;
}
