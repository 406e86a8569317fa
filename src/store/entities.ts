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
import { nowIso } from "../core/formats.ts";
import { carriesProducts, productFacts, vulnerabilityFacts } from "../results/web-entities.ts";
import { changingCollections } from "./collection-changes.ts";
import type { Database, EntitiesTable, FindingsTable } from "./schema.ts";

export type Details = Record<string, unknown>;

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
  notes: string[];
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

/** Rows per INSERT: well under both dialects' bound-parameter limits. */
const CHUNK = 200;

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
    // Kysely cannot relate a generic table to its row type; the signature above does.
    await db
      .insertInto(table)
      .values(rows.slice(i, i + CHUNK) as never)
      .execute();
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
  find(key: string): string {
    let root = key;
    while (this.#parent.has(root) && this.#parent.get(root) !== root) root = this.#parent.get(root)!;
    this.#parent.set(key, root);
    return root;
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
    details: JSON.parse(row.details),
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
    ancestors: JSON.parse(row.ancestors),
    taskResults: JSON.parse(row.task_results),
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

/** JSON with object keys sorted: the same content hashes the same whatever order it was merged in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .filter((key) => (value as Details)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Details)[key])}`)
      .join(",")}}`;
  return JSON.stringify(value) ?? "null";
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

/**
 * The versions one run writes to one table: continuations (same content, seen by the previous run too)
 * only move last_run_id and last_seen; everything else closes the old version and inserts a new one.
 */
class Versions<T extends "entities" | "findings"> {
  readonly #continued = new Map<string, number[]>();
  readonly #closed: number[] = [];
  readonly #inserts: Array<Insertable<Database[T]>> = [];
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
      Insertable<Database[T]>,
      "version_run_id" | "last_run_id" | "latest" | "content_hash" | "last_seen"
    >,
  ): boolean {
    if (old && old.last_run_id === this.#previousRunId && old.content_hash === hash) {
      this.#continued.set(lastSeen, [...(this.#continued.get(lastSeen) ?? []), old.id]);
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
    return this.#inserts.length;
  }

  async write(): Promise<void> {
    // Sightings of one task share their last_seen: one update per task's batch, not per entity.
    for (const [lastSeen, ids] of this.#continued)
      for (let i = 0; i < ids.length; i += CHUNK)
        await this.#update({ last_run_id: this.#runId, last_seen: lastSeen }, ids.slice(i, i + CHUNK));
    for (let i = 0; i < this.#closed.length; i += CHUNK)
      await this.#update({ latest: 0 }, this.#closed.slice(i, i + CHUNK));
    await insertChunks(this.#trx, this.#table, this.#inserts);
  }

  async #update(values: { last_run_id?: number; last_seen?: string; latest?: number }, ids: number[]) {
    // Both tables have these columns; Kysely cannot see that through the generic table name.
    const table = this.#table as "entities";
    await this.#trx.updateTable(table).set(values).where("id", "in", ids).execute();
  }
}

/** The products and CVEs of the new versions of services and applications, for the indexed results. */
async function writeFacts(
  trx: Transaction<Database>,
  collectionId: number,
  runId: number,
  entities: Map<string, MergedEntity>,
): Promise<void> {
  if (entities.size === 0) return;
  const rows = await trx
    .selectFrom("entities")
    .select(["id", "kind", "name"])
    .where("collection_id", "=", collectionId)
    .where("version_run_id", "=", runId)
    .where("kind", "in", ["Uri", "NetworkService"])
    .execute();
  const products: Array<Insertable<Database["entity_products"]>> = [];
  const vulns: Array<Insertable<Database["entity_vulns"]>> = [];
  for (const row of rows) {
    const entity = entities.get(keyOf(row.kind, row.name));
    if (!entity) continue;
    for (const { product, version, label } of productFacts(entity))
      products.push({ collection_id: collectionId, entity_row_id: row.id, product, version, label });
    for (const { cve, product } of vulnerabilityFacts(entity))
      vulns.push({ collection_id: collectionId, entity_row_id: row.id, cve_id: cve, product });
  }
  await insertChunks(trx, "entity_products", products);
  await insertChunks(trx, "entity_vulns", vulns);
}

export class EntitiesRepository {
  readonly db: Kysely<Database>;
  constructor(db: Kysely<Database>) {
    this.db = db;
  }

  /** Appends what a task found to the run's staging rows (append-only: concurrent tasks never conflict). */
  async stage(runId: number, collectionId: number, work: StagedWork): Promise<void> {
    const seenAt = nowIso();
    await this.db.transaction().execute(async (trx) => {
      await insertChunks(
        trx,
        "staged_entities",
        work.entities.map((entity) => ({
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
      );
      await insertChunks(
        trx,
        "staged_findings",
        work.findings.map((finding) => ({
          run_id: runId,
          collection_id: collectionId,
          ...findingColumns(finding),
          seen_at: seenAt,
        })),
      );
      if (work.notes.length > 0) {
        await trx
          .insertInto("run_notes")
          .values(
            work.notes.map((message) => ({
              run_id: runId,
              collection_id: collectionId,
              message,
              created_at: seenAt,
            })),
          )
          .execute();
      }
    });
  }

  /**
   * Makes the run's staged findings the collection's results, in one transaction. An entity (or
   * finding) the previous finished run saw with the same content only gets this run as its last run
   * and this run's last_seen; a new one, a changed one, or one returning after a run that missed it
   * starts a new version here (see migration 008), keeping its first_seen, first run and stable id.
   * Names and the addresses they resolve to share an alias group. Then the staging rows go.
   */
  async finishRun(runId: number, collectionId: number): Promise<{ entities: number; findings: number }> {
    // The latest finished run changes with the merge: readers that keep it a moment read it again.
    const summary = await changingCollections(() => this.#merge(runId, collectionId));
    // PostgreSQL plans from statistics that autovacuum refreshes only after a while; a merge that wrote
    // many versions would otherwise be read with plans made for the empty tables (nested loops over
    // whole collections). SQLite keeps no statistics unless asked and plans these reads well without.
    if (summary.written > ANALYZE_AFTER && this.db.getExecutor().adapter instanceof PostgresAdapter)
      await sql`analyze entities, findings, entity_products, entity_vulns`.execute(this.db);
    return { entities: summary.entities, findings: summary.findings };
  }

  async #merge(runId: number, collectionId: number) {
    return this.db.transaction().execute(async (trx) => {
      const previous = await trx
        .selectFrom("collection_results")
        .select("run_id")
        .where("collection_id", "=", collectionId)
        .executeTakeFirst();
      const previousRunId = previous?.run_id;
      const merged = await mergeStagedEntities(trx, runId);
      const existing = new Map<string, LatestVersion>();
      for (const row of await trx
        .selectFrom("entities")
        .select(["id", "kind", "name", "alias_group", "entity_id", "first_seen", "first_run_id"])
        .select(["last_run_id", "content_hash"])
        .where("collection_id", "=", collectionId)
        .where("latest", "=", 1)
        .execute()) {
        existing.set(keyOf(row.kind, row.name), row);
      }
      const top = await trx
        .selectFrom("entities")
        .select((eb) => eb.fn.max("alias_group").as("top"))
        .where("collection_id", "=", collectionId)
        .executeTakeFirst();
      let nextGroup = Number(top?.top ?? 0) + 1;

      const groups = new Groups();
      for (const [key, entity] of merged) {
        groups.find(key);
        for (const alias of entity.aliases) {
          const other = keyOf(alias.kind, alias.name);
          if (merged.has(other)) groups.join(key, other);
        }
      }
      // A component keeps the smallest group any member already had, so groups are stable across runs.
      const componentGroup = new Map<string, number>();
      for (const key of merged.keys()) {
        const old = existing.get(key)?.alias_group;
        const root = groups.find(key);
        if (old !== undefined) componentGroup.set(root, Math.min(componentGroup.get(root) ?? old, old));
      }
      for (const key of merged.keys()) {
        const root = groups.find(key);
        if (!componentGroup.has(root)) componentGroup.set(root, nextGroup++);
      }

      const versions = new Versions(trx, "entities", runId, previousRunId);
      const facts = new Map<string, MergedEntity>();
      for (const [key, entity] of merged) {
        const content = {
          details: JSON.stringify(entity.details),
          scoped: entity.scoped ? 1 : 0,
          hidden: entity.hidden ? 1 : 0,
          alias_group: componentGroup.get(groups.find(key))!,
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
        const old = existing.get(key);
        const isNew = versions.see(old, hash, entity.lastSeen, {
          ...content,
          ...addressOf(entity),
          collection_id: collectionId,
          kind: entity.kind,
          name: entity.name,
          first_seen: old?.first_seen ?? entity.firstSeen,
          first_run_id: old?.first_run_id ?? runId,
          entity_id: old?.entity_id ?? null,
        });
        if (isNew && carriesProducts(entity)) facts.set(keyOf(entity.kind, entity.name), entity);
      }
      await versions.write();
      await trx
        .updateTable("entities")
        .set((eb) => ({ entity_id: eb.ref("id") }))
        .where("collection_id", "=", collectionId)
        .where("entity_id", "is", null)
        .execute();
      await writeFacts(trx, collectionId, runId, facts);

      const findings = await mergeStagedFindings(trx, runId);
      const existingFindings = new Map<string, LatestVersion>();
      for (const row of await trx
        .selectFrom("findings")
        .select(["id", "name", "entity_kind", "entity_name", "issue_id as entity_id", "first_seen"])
        .select(["first_run_id", "last_run_id", "content_hash"])
        .where("collection_id", "=", collectionId)
        .where("latest", "=", 1)
        .execute()) {
        existingFindings.set(keyOf(row.name, keyOf(row.entity_kind, row.entity_name)), row);
      }
      const findingVersions = new Versions(trx, "findings", runId, previousRunId);
      for (const [key, finding] of findings) {
        const columns = findingColumns(finding);
        const old = existingFindings.get(key);
        findingVersions.see(old, contentHash({ ...finding, firstSeen: 0, lastSeen: 0 }), finding.lastSeen, {
          ...columns,
          collection_id: collectionId,
          first_seen: old?.first_seen ?? finding.firstSeen,
          first_run_id: old?.first_run_id ?? runId,
          issue_id: old?.entity_id ?? null,
        });
      }
      await findingVersions.write();
      await trx
        .updateTable("findings")
        .set((eb) => ({ issue_id: eb.ref("id") }))
        .where("collection_id", "=", collectionId)
        .where("issue_id", "is", null)
        .execute();

      const finishedAt = nowIso();
      await trx
        .insertInto("collection_results")
        .values({ collection_id: collectionId, run_id: runId, finished_at: finishedAt })
        .onConflict((oc) =>
          oc.column("collection_id").doUpdateSet({ run_id: runId, finished_at: finishedAt }),
        )
        .execute();
      await trx.deleteFrom("staged_entities").where("run_id", "=", runId).execute();
      await trx.deleteFrom("staged_findings").where("run_id", "=", runId).execute();
      return {
        entities: merged.size,
        findings: findings.size,
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
    const rows = await this.db
      .selectFrom("staged_entities")
      .select(["kind", "name", "details", "scoped", "depth", "ancestors"])
      .where("run_id", "=", runId)
      .where("kind", "in", kinds)
      .where((eb) =>
        "names" in filter
          ? eb("name", "in", filter.names)
          : // Prefixes are addresses (digits, dots, colons, brackets): no LIKE wildcard to escape.
            eb.or(filter.prefixes.map((prefix) => eb("name", "like", `${prefix}%`))),
      )
      .orderBy("id")
      .execute();
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

  /** Drops a run's staging rows (a failed or cancelled run); its notes stay. */
  async discardStaging(runId: number): Promise<void> {
    await this.db.deleteFrom("staged_entities").where("run_id", "=", runId).execute();
    await this.db.deleteFrom("staged_findings").where("run_id", "=", runId).execute();
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

  /**
   * The entities of the latest finished run, optionally of some kinds, in a stable order. Paged by
   * `limit`/`offset` so a view can stream a large result.
   */
  async current(
    collectionId: number,
    options: {
      kinds?: string[];
      firstSeenInRun?: boolean;
      /** `kind` (default): kind, then name; `name`: name, then kind, so one name's entities are adjacent. */
      order?: "kind" | "name";
      /** Only these names (a page of `currentNames`). */
      names?: string[];
      limit?: number;
      offset?: number;
    } = {},
  ): Promise<EntityRecord[]> {
    const result = await this.resultRun(collectionId);
    if (!result) return [];
    let query = this.db
      .selectFrom("entities")
      .selectAll()
      .where("collection_id", "=", collectionId)
      .where("last_run_id", "=", result.runId);
    if (options.kinds) query = query.where("kind", "in", options.kinds);
    if (options.firstSeenInRun) query = query.where("first_run_id", "=", result.runId);
    if (options.names) {
      if (options.names.length === 0) return [];
      query = query.where("name", "in", options.names);
    }
    query =
      options.order === "name"
        ? query.orderBy("name").orderBy("kind")
        : query.orderBy("kind").orderBy("name");
    if (options.limit !== undefined) query = query.limit(options.limit).offset(options.offset ?? 0);
    const rows = await query.execute();
    return rows.map(toRecord);
  }

  /** A page of the distinct names of the latest finished run's entities of some kinds, in name order. */
  async currentNames(
    collectionId: number,
    kinds: string[],
    page: { limit?: number; offset?: number } = {},
  ): Promise<string[]> {
    const result = await this.resultRun(collectionId);
    if (!result) return [];
    let query = this.db
      .selectFrom("entities")
      .select("name")
      .distinct()
      .where("collection_id", "=", collectionId)
      .where("last_run_id", "=", result.runId)
      .where("kind", "in", kinds)
      .orderBy("name");
    if (page.limit !== undefined) query = query.limit(page.limit).offset(page.offset ?? 0);
    return (await query.execute()).map((row) => row.name);
  }

  /** How many entities (or distinct names) `current` would answer without paging. */
  async countCurrent(
    collectionId: number,
    options: { kinds?: string[]; firstSeenInRun?: boolean; distinctNames?: boolean } = {},
  ): Promise<number> {
    const result = await this.resultRun(collectionId);
    if (!result) return 0;
    let query = this.db
      .selectFrom("entities")
      .select((eb) =>
        (options.distinctNames
          ? eb.fn.count<number | string>("name").distinct()
          : eb.fn.countAll<number | string>()
        ).as("count"),
      )
      .where("collection_id", "=", collectionId)
      .where("last_run_id", "=", result.runId);
    if (options.kinds) query = query.where("kind", "in", options.kinds);
    if (options.firstSeenInRun) query = query.where("first_run_id", "=", result.runId);
    const row = await query.executeTakeFirstOrThrow();
    return Number(row.count);
  }

  /** How many findings `currentFindings` would answer without paging. */
  async countCurrentFindings(collectionId: number): Promise<number> {
    const result = await this.resultRun(collectionId);
    if (!result) return 0;
    const row = await this.db
      .selectFrom("findings")
      .select((eb) => eb.fn.countAll<number | string>().as("count"))
      .where("collection_id", "=", collectionId)
      .where("last_run_id", "=", result.runId)
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  /** The findings of the latest finished run, with the alias group of the entity they are on, most severe first. */
  async currentFindings(
    collectionId: number,
    page: { limit?: number; offset?: number } = {},
  ): Promise<FindingRecord[]> {
    const result = await this.resultRun(collectionId);
    if (!result) return [];
    let query = this.db
      .selectFrom("findings")
      .leftJoin("entities", (join) =>
        join
          .onRef("entities.collection_id", "=", "findings.collection_id")
          .onRef("entities.kind", "=", "findings.entity_kind")
          .onRef("entities.name", "=", "findings.entity_name")
          .on("entities.last_run_id", "=", result.runId),
      )
      .selectAll("findings")
      .select("entities.alias_group")
      .where("findings.collection_id", "=", collectionId)
      .where("findings.last_run_id", "=", result.runId)
      .orderBy("findings.severity")
      .orderBy("findings.name")
      .orderBy("findings.entity_name")
      .orderBy("findings.id");
    if (page.limit !== undefined) query = query.limit(page.limit).offset(page.offset ?? 0);
    const rows = await query.execute();
    return rows.map((row) => ({ ...findingOf(row), aliasGroup: row.alias_group ?? 0 }));
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

/** A stored finding as the repository speaks of it; its id is the issue's stable id. */
export function findingOf(row: Selectable<FindingsTable>): Omit<FindingRecord, "aliasGroup"> {
  return {
    id: row.issue_id ?? row.id,
    name: row.name,
    entityKind: row.entity_kind,
    entityName: row.entity_name,
    prettyName: row.pretty_name,
    severity: row.severity,
    confidence: row.confidence,
    category: row.category,
    description: row.description,
    remediation: row.remediation,
    references: JSON.parse(row.reference_links),
    details: JSON.parse(row.details),
    scoped: row.scoped === 1,
    firstSeen: row.first_seen,
    lastSeen: row.last_seen,
  };
}

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
    details: JSON.stringify(finding.details),
    scoped: finding.scoped ? 1 : 0,
  } satisfies Partial<FindingsTable>;
}

/** Reads a run's staged entity rows in pages and merges the sightings of each entity. */
async function mergeStagedEntities(trx: Transaction<Database>, runId: number) {
  const merged = new Map<string, MergedEntity>();
  for (let lastId = 0; ; ) {
    const rows = await trx
      .selectFrom("staged_entities")
      .selectAll()
      .where("run_id", "=", runId)
      .where("id", ">", lastId)
      .orderBy("id")
      .limit(1000)
      .execute();
    if (rows.length === 0) break;
    lastId = rows[rows.length - 1].id;
    for (const row of rows) {
      const key = keyOf(row.kind, row.name);
      const sighting = {
        details: JSON.parse(row.details) as Details,
        aliases: JSON.parse(row.aliases) as EntityKey[],
        ancestors: JSON.parse(row.ancestors) as Ancestor[],
        taskResult: row.task_result ? (JSON.parse(row.task_result) as TaskResult) : undefined,
      };
      const entity = merged.get(key);
      if (!entity) {
        merged.set(key, {
          kind: row.kind,
          name: row.name,
          details: sighting.details,
          scoped: row.scoped === 1,
          hidden: row.hidden === 1,
          depth: row.depth,
          aliases: sighting.aliases,
          ancestors: sighting.ancestors,
          taskResults: sighting.taskResult ? [sighting.taskResult] : [],
          firstSeen: row.seen_at,
          lastSeen: row.seen_at,
        });
        continue;
      }
      entity.details = mergeDetails(entity.details, sighting.details);
      // Seen in scope or in plain sight once is enough.
      entity.scoped ||= row.scoped === 1;
      entity.hidden &&= row.hidden === 1;
      entity.aliases.push(...sighting.aliases);
      if (row.depth < entity.depth) {
        entity.depth = row.depth;
        entity.ancestors = sighting.ancestors;
      }
      const result = sighting.taskResult;
      if (result && !entity.taskResults.some((r) => r.name === result.name)) entity.taskResults.push(result);
      if (row.seen_at < entity.firstSeen) entity.firstSeen = row.seen_at;
      if (row.seen_at > entity.lastSeen) entity.lastSeen = row.seen_at;
    }
  }
  // Tasks finish in any order; provenance in a fixed order keeps an unchanged entity's content unchanged.
  for (const entity of merged.values())
    entity.taskResults.sort((a, b) => a.depth - b.depth || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return merged;
}

async function mergeStagedFindings(trx: Transaction<Database>, runId: number) {
  const merged = new Map<string, Finding & { firstSeen: string; lastSeen: string }>();
  const rows = await trx
    .selectFrom("staged_findings")
    .selectAll()
    .where("run_id", "=", runId)
    .orderBy("id")
    .execute();
  for (const row of rows) {
    const key = keyOf(row.name, keyOf(row.entity_kind, row.entity_name));
    const previous = merged.get(key);
    merged.set(key, {
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
    });
  }
  return merged;
}
