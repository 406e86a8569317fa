import { createHash } from "node:crypto";
import { sql } from "kysely";
import { cascade, type DialectMigration, type MigrationDb } from "./helpers.ts";

/**
 * A check's texts stored once per collection. Every finding of a check carries the same description,
 * remediation and references (a scan of 128 web servers had 152 identical "missing X-Frame-Options"
 * findings, each with its own copy: a third of the findings table). They move to `finding_texts`, keyed
 * by a hash of the three, and each finding version keeps the key (`text_hash`). Keyed per collection, so
 * a collection's texts go with it and nothing is shared between accounts.
 *
 * Existing rows are moved a page at a time (by id), then the three columns are dropped.
 */

/**
 * The key of a finding's texts: 128 bits of SHA-256 over the three, as base64url (22 characters). The
 * merge computes the same (entities.ts `findingTextHash`), so later versions share the moved rows' keys.
 */
function textHash(description: string, remediation: string, referenceLinks: string): string {
  return createHash("sha256")
    .update(JSON.stringify([description, remediation, referenceLinks]))
    .digest("base64url")
    .slice(0, 22);
}

const PAGE = 1000;

async function moveTexts(db: MigrationDb): Promise<void> {
  for (let after = 0; ; ) {
    const rows: Array<{
      id: number;
      collection_id: number;
      description: string;
      remediation: string;
      reference_links: string;
    }> = await db
      .selectFrom("findings")
      .select(["id", "collection_id", "description", "remediation", "reference_links"])
      .where("id", ">", after)
      .orderBy("id")
      .limit(PAGE)
      .execute();
    if (rows.length === 0) return;
    after = rows[rows.length - 1].id;
    const texts = new Map<string, Record<string, unknown>>();
    const idsByHash = new Map<string, number[]>();
    for (const row of rows) {
      const hash = textHash(row.description, row.remediation, row.reference_links);
      texts.set(`${row.collection_id} ${hash}`, {
        collection_id: row.collection_id,
        hash,
        description: row.description,
        remediation: row.remediation,
        reference_links: row.reference_links,
      });
      const ids = idsByHash.get(hash);
      if (ids) ids.push(row.id);
      else idsByHash.set(hash, [row.id]);
    }
    const values = [...texts.values()];
    for (let i = 0; i < values.length; i += 100)
      await db
        .insertInto("finding_texts")
        .values(values.slice(i, i + 100))
        .onConflict((oc) => oc.columns(["collection_id", "hash"]).doNothing())
        .execute();
    for (const [hash, ids] of idsByHash)
      await db.updateTable("findings").set({ text_hash: hash }).where("id", "in", ids).execute();
  }
}

export const findingTexts: DialectMigration = {
  async up(db, dialect) {
    const table = db.schema
      .createTable("finding_texts")
      .addColumn("collection_id", "integer", cascade("collections.id"))
      .addColumn("hash", "text", (c) => c.notNull())
      .addColumn("description", "text", (c) => c.notNull())
      .addColumn("remediation", "text", (c) => c.notNull())
      .addColumn("reference_links", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint("finding_texts_key", ["collection_id", "hash"]);
    // On SQLite the rows live in the key's own B-tree: one look-up per finding read, no second index.
    await (dialect === "sqlite" ? table.modifyEnd(sql`without rowid`) : table).execute();
    await db.schema.alterTable("findings").addColumn("text_hash", "text").execute();
    await moveTexts(db);
    for (const column of ["description", "remediation", "reference_links"])
      await db.schema.alterTable("findings").dropColumn(column).execute();
  },
};
