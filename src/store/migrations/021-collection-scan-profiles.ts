import { type DialectMigration, hasColumn } from "./helpers.ts";

/**
 * A collection's scan profile (its preset and the settings it overrides, as JSON text; null: the
 * server's settings), which each of its runs applies when it is created.
 */
export const collectionScanProfiles: DialectMigration = {
  async up(db) {
    if (await hasColumn(db, "collections", "scan_profile")) return;
    await db.schema.alterTable("collections").addColumn("scan_profile", "text").execute();
  },
};
