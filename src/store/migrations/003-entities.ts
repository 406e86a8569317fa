import type { CreateTableBuilder } from "kysely";
import { cascade, type DialectMigration, type MigrationDb, withId } from "./helpers.ts";

/**
 * Discovery results: entities and findings per collection (the merged results), the per-run staging
 * rows a run writes while it works, the run's notes, and which run the results come from. Generic on
 * purpose: every entity kind (hosts, names, services, certificates, applications, products, …) is an
 * `entities` row with JSON `details`, every weakness a `findings` row, so later capabilities add kinds,
 * not tables.
 */
export const findingColumns = (table: ReturnType<MigrationDb["schema"]["createTable"]>) =>
  table
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("entity_kind", "text", (c) => c.notNull())
    .addColumn("entity_name", "text", (c) => c.notNull())
    .addColumn("pretty_name", "text", (c) => c.notNull())
    .addColumn("severity", "integer", (c) => c.notNull())
    .addColumn("confidence", "text", (c) => c.notNull())
    .addColumn("category", "text", (c) => c.notNull())
    .addColumn("description", "text", (c) => c.notNull())
    .addColumn("remediation", "text", (c) => c.notNull())
    .addColumn("reference_links", "text", (c) => c.notNull())
    .addColumn("details", "text", (c) => c.notNull())
    .addColumn("scoped", "integer", (c) => c.notNull());

/** What an entity sighting says, alike in the results and in a run's staging. */
export const entityColumns = (table: ReturnType<MigrationDb["schema"]["createTable"]>) =>
  table
    .addColumn("collection_id", "integer", cascade("collections.id"))
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("details", "text", (c) => c.notNull())
    .addColumn("scoped", "integer", (c) => c.notNull())
    .addColumn("hidden", "integer", (c) => c.notNull())
    .addColumn("ancestors", "text", (c) => c.notNull());

/** What the results keep about an entity beyond a sighting: alias group, provenance, when and which runs. */
export const entityResultColumns = <T extends string, C extends string>(table: CreateTableBuilder<T, C>) =>
  table
    .addColumn("alias_group", "integer", (c) => c.notNull())
    .addColumn("task_results", "text", (c) => c.notNull())
    .addColumn("first_seen", "text", (c) => c.notNull())
    .addColumn("last_seen", "text", (c) => c.notNull())
    .addColumn("first_run_id", "integer", (c) => c.notNull())
    .addColumn("last_run_id", "integer", (c) => c.notNull());

/** What the results keep about a finding beyond what it says: its collection, when and which runs. */
export const findingResultColumns = <T extends string, C extends string>(table: CreateTableBuilder<T, C>) =>
  table
    .addColumn("collection_id", "integer", cascade("collections.id"))
    .addColumn("first_seen", "text", (c) => c.notNull())
    .addColumn("last_seen", "text", (c) => c.notNull())
    .addColumn("first_run_id", "integer", (c) => c.notNull())
    .addColumn("last_run_id", "integer", (c) => c.notNull());

export const entities: DialectMigration = {
  async up(db, dialect) {
    await entityResultColumns(entityColumns(withId(db.schema.createTable("entities"), dialect)))
      .addUniqueConstraint("entities_collection_kind_name", ["collection_id", "kind", "name"])
      .execute();
    await db.schema
      .createIndex("entities_collection_run")
      .on("entities")
      .columns(["collection_id", "last_run_id", "kind"])
      .execute();

    await findingResultColumns(findingColumns(withId(db.schema.createTable("findings"), dialect)))
      .addUniqueConstraint("findings_collection_issue", [
        "collection_id",
        "name",
        "entity_kind",
        "entity_name",
      ])
      .execute();
    await db.schema
      .createIndex("findings_collection_run")
      .on("findings")
      .columns(["collection_id", "last_run_id"])
      .execute();

    // Staging rows are appended by concurrent tasks (never updated), so workers never contend on a row.
    await entityColumns(withId(db.schema.createTable("staged_entities"), dialect))
      .addColumn("run_id", "integer", (c) => c.notNull())
      .addColumn("depth", "integer", (c) => c.notNull())
      .addColumn("aliases", "text", (c) => c.notNull())
      .addColumn("task_result", "text")
      .addColumn("seen_at", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("staged_entities_run").on("staged_entities").column("run_id").execute();

    await findingColumns(withId(db.schema.createTable("staged_findings"), dialect))
      .addColumn("run_id", "integer", (c) => c.notNull())
      .addColumn("collection_id", "integer", cascade("collections.id"))
      .addColumn("seen_at", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("staged_findings_run").on("staged_findings").column("run_id").execute();

    await withId(db.schema.createTable("run_notes"), dialect)
      .addColumn("run_id", "integer", (c) => c.notNull())
      .addColumn("collection_id", "integer", cascade("collections.id"))
      .addColumn("message", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("run_notes_run").on("run_notes").column("run_id").execute();

    await db.schema
      .createTable("collection_results")
      .addColumn("collection_id", "integer", (c) =>
        c.primaryKey().references("collections.id").onDelete("cascade"),
      )
      .addColumn("run_id", "integer", (c) => c.notNull())
      .addColumn("finished_at", "text", (c) => c.notNull())
      .execute();
  },
};
