/**
 * Reads of the latest finished run's entities and findings, for tests to check what a run stored. The
 * service reads results through src/store/result-queries.ts; these simpler reads stay out of it.
 */
import {
  EntitiesRepository,
  type EntityRecord,
  type FindingRecord,
  findingOf,
  toRecord,
} from "../../src/store/entities.ts";

export class EntitiesReader extends EntitiesRepository {
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
      .innerJoin("finding_texts", (join) =>
        join
          .onRef("finding_texts.collection_id", "=", "findings.collection_id")
          .onRef("finding_texts.hash", "=", "findings.text_hash"),
      )
      .selectAll("findings")
      .select([
        "entities.alias_group",
        "finding_texts.description",
        "finding_texts.remediation",
        "finding_texts.reference_links",
      ])
      .where("findings.collection_id", "=", collectionId)
      .where("findings.last_run_id", "=", result.runId)
      .orderBy("findings.severity")
      .orderBy("findings.name")
      .orderBy("findings.entity_name")
      .orderBy("findings.id");
    if (page.limit !== undefined) query = query.limit(page.limit).offset(page.offset ?? 0);
    const rows = await query.execute();
    return rows.map((row) => ({ ...findingOf(row, row), aliasGroup: row.alias_group ?? 0 }));
  }
}
