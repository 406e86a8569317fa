import { sql } from "kysely";
import { entityColumns, entityResultColumns, findingColumns, findingResultColumns } from "./003-entities.ts";
import { cascade, type DialectMigration, type MigrationDb, withId } from "./helpers.ts";

/**
 * Results as of every finished run, with storage that grows with what changes rather than with
 * runs × entities. An `entities` (or `findings`) row becomes one *version* of an entity: its content
 * holds from `version_run_id` to `last_run_id`, the finished runs in between all saw it unchanged. A run
 * that sees an entity unchanged only moves `last_run_id`; a change, or a return after a run that did not
 * see it, starts a new version. So "as of run N" is `version_run_id <= N AND last_run_id >= N`, one
 * indexed range over one table on both dialects, and the newest version of each entity has `latest = 1`.
 *
 * `entity_id` / `issue_id` is the id of the first version, stable across versions. `address` and `port`
 * (services and applications) and the products and CVEs of a version (`entity_products`,
 * `entity_vulns`) are kept in columns and tables of their own, so filters and the product and
 * vulnerability results are indexed queries rather than scans of JSON.
 *
 * The unique key of both tables changes, which SQLite can only do by rebuilding the table; both
 * dialects rebuild the same way. Rows from before this migration become one version valid at their
 * last run: history starts with the runs finished before the upgrade's latest one unknown.
 */
const ENTITY_COLUMNS = [
  "id",
  "collection_id",
  "kind",
  "name",
  "details",
  "scoped",
  "hidden",
  "ancestors",
  "alias_group",
  "task_results",
  "first_seen",
  "last_seen",
  "first_run_id",
  "last_run_id",
];
const FINDING_COLUMNS = [
  "id",
  "collection_id",
  "name",
  "entity_kind",
  "entity_name",
  "pretty_name",
  "severity",
  "confidence",
  "category",
  "description",
  "remediation",
  "reference_links",
  "details",
  "scoped",
  "first_seen",
  "last_seen",
  "first_run_id",
  "last_run_id",
];

/** Copies `table` into `next` (ids kept), then puts `next` in its place. */
async function replaceTable(
  db: MigrationDb,
  dialect: "sqlite" | "postgres",
  table: string,
  next: string,
  columns: string[],
  stable: "entity_id" | "issue_id",
) {
  const list = sql.raw(columns.join(", "));
  await sql`insert into ${sql.table(next)} (${list}, version_run_id, ${sql.raw(stable)}, latest, content_hash)
    select ${list}, last_run_id, id, 1, '' from ${sql.table(table)}`.execute(db);
  await db.schema.dropTable(table).execute();
  await db.schema.alterTable(next).renameTo(table).execute();
  if (dialect === "postgres") {
    // Rows kept their ids; the new table's sequence must continue after them.
    await sql`select setval(pg_get_serial_sequence(${table}, 'id'), coalesce((select max(id) from ${sql.table(table)}), 0) + 1, false)`.execute(
      db,
    );
  }
}

export const resultHistory: DialectMigration = {
  async up(db, dialect) {
    await entityResultColumns(entityColumns(withId(db.schema.createTable("entities_next"), dialect)))
      .addColumn("version_run_id", "integer", (c) => c.notNull())
      .addColumn("entity_id", "integer")
      .addColumn("latest", "integer", (c) => c.notNull())
      .addColumn("content_hash", "text", (c) => c.notNull())
      .addColumn("address", "text")
      .addColumn("port", "integer")
      .addUniqueConstraint("entities_version", ["collection_id", "kind", "name", "version_run_id"])
      .execute();
    await replaceTable(db, dialect, "entities", "entities_next", ENTITY_COLUMNS, "entity_id");

    await findingResultColumns(findingColumns(withId(db.schema.createTable("findings_next"), dialect)))
      .addColumn("version_run_id", "integer", (c) => c.notNull())
      .addColumn("issue_id", "integer")
      .addColumn("latest", "integer", (c) => c.notNull())
      .addColumn("content_hash", "text", (c) => c.notNull())
      .addUniqueConstraint("findings_version", [
        "collection_id",
        "name",
        "entity_kind",
        "entity_name",
        "version_run_id",
      ])
      .execute();
    await replaceTable(db, dialect, "findings", "findings_next", FINDING_COLUMNS, "issue_id");

    // Reads go through the unique keys (collection, kind, name, version) in key order; no index leads
    // with last_run_id, which SQLite's planner would pick and then sort every batch.
    const latestOnly = sql<boolean>`latest = 1`;
    await db.schema
      .createIndex("entities_latest")
      .on("entities")
      .columns(["collection_id", "kind", "name"])
      .unique()
      .where(latestOnly)
      .execute();
    // As-of reads in key order with the run span in the index: deciding whether a row belongs to run N
    // (and skipping it for an offset) reads the index alone, not the row with its JSON.
    await db.schema
      .createIndex("entities_as_of")
      .on("entities")
      // address: the applications list keeps only probed Uris (an address) without reading rows either.
      .columns(["collection_id", "kind", "name", "version_run_id", "last_run_id", "address"])
      .execute();
    // Domains are read in name order across their three kinds; recent by the run that first saw them.
    await db.schema
      .createIndex("entities_by_name")
      .on("entities")
      .columns(["collection_id", "name", "kind", "version_run_id", "last_run_id"])
      .execute();
    await db.schema
      .createIndex("entities_first_run")
      .on("entities")
      .columns(["collection_id", "first_run_id", "kind", "name"])
      .execute();
    await db.schema
      .createIndex("entities_address")
      .on("entities")
      .columns(["collection_id", "address", "kind"])
      .execute();

    await db.schema
      .createIndex("findings_latest")
      .on("findings")
      .columns(["collection_id", "name", "entity_kind", "entity_name"])
      .unique()
      .where(latestOnly)
      .execute();
    await db.schema
      .createIndex("findings_by_severity")
      .on("findings")
      .columns([
        "collection_id",
        "severity",
        "name",
        "entity_kind",
        "entity_name",
        "version_run_id",
        "last_run_id",
      ])
      .execute();

    await withId(db.schema.createTable("entity_products"), dialect)
      .addColumn("collection_id", "integer", cascade("collections.id"))
      .addColumn("entity_row_id", "integer", cascade("entities.id"))
      .addColumn("product", "text", (c) => c.notNull())
      .addColumn("version", "text", (c) => c.notNull())
      .addColumn("label", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("entity_products_row")
      .on("entity_products")
      .columns(["entity_row_id"])
      .execute();
    await db.schema
      .createIndex("entity_products_label")
      .on("entity_products")
      .columns(["collection_id", "label"])
      .execute();

    await withId(db.schema.createTable("entity_vulns"), dialect)
      .addColumn("collection_id", "integer", cascade("collections.id"))
      .addColumn("entity_row_id", "integer", cascade("entities.id"))
      .addColumn("cve_id", "text", (c) => c.notNull())
      .addColumn("product", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("entity_vulns_row").on("entity_vulns").columns(["entity_row_id"]).execute();
    await db.schema
      .createIndex("entity_vulns_cve")
      .on("entity_vulns")
      .columns(["collection_id", "cve_id"])
      .execute();
  },
};
