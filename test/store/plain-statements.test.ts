/**
 * The hot statements sent as plain texts (src/store/plain-statements.ts) write what the query builder
 * wrote, on both dialects: a multi-row insert takes rows of one shape, rows of different shapes (or with
 * a value missing) are left to the builder, and a text is made once per shape, in the dialect's
 * parameter syntax.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { plainInsert, plainQuery } from "../../src/store/plain-statements.ts";
import type { Services } from "../../src/store/services.ts";
import { servicesWithCollection } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

for (const { dialect, skip } of await dialects()) {
  describe(`plain statements on ${dialect}`, { skip }, () => {
    let services: Services;
    let collectionId: number;
    let close: (() => Promise<void>) | undefined;
    before(async () => {
      ({ services, collectionId, close } = await servicesWithCollection(dialect));
    });
    after(() => close?.());

    const note = (message: string) => ({
      run_id: 41,
      collection_id: collectionId,
      kind: "other",
      message,
      created_at: "2026-11-28 05:00:00 UTC",
    });

    test("a multi-row insert of rows of one shape, its text in the dialect's syntax", async () => {
      const { db } = services.store;
      const insert = plainInsert(db, "run_notes", [note("first"), note("second")]);
      assert.ok(insert);
      assert.match(
        insert.sql,
        dialect === "postgres" ? /\(\$6, \$7, \$8, \$9, \$10\)$/ : /\(\?, \?, \?, \?, \?\)$/,
      );
      assert.equal(insert.parameters.length, 10);
      await db.executeQuery(insert);
      const rows = await db
        .selectFrom("run_notes")
        .select(["message", "kind"])
        .where("run_id", "=", 41)
        .orderBy("id")
        .execute();
      assert.deepEqual(
        rows.map((row) => ({ ...row })),
        [
          { message: "first", kind: "other" },
          { message: "second", kind: "other" },
        ],
      );
      assert.equal(plainInsert(db, "run_notes", [note("third"), note("fourth")])?.sql, insert.sql);
    });

    test("rows of different shapes, or a value missing, are left to the builder", () => {
      const { db } = services.store;
      const { kind: _, ...withoutKind } = note("b");
      assert.equal(plainInsert(db, "run_notes", [note("a"), withoutKind]), undefined);
      assert.equal(plainInsert(db, "run_notes", [note("a"), { ...note("b"), kind: undefined }]), undefined);
      const { message, ...rest } = note("c");
      const reordered = { message, ...rest };
      assert.equal(plainInsert(db, "run_notes", [note("a"), reordered]), undefined);
      assert.equal(plainInsert(db, "run_notes", []), undefined);
    });

    test("a query's text is made once per key and numbered as the dialect wants", async () => {
      const { db } = services.store;
      let made = 0;
      const make = (p: () => string) => {
        made++;
        return `select ${p()} + ${p()} as sum`;
      };
      const first = plainQuery(db, "test sum", [2, 3], make);
      const second = plainQuery(db, "test sum", [4, 5], make);
      assert.equal(made, 1);
      assert.equal(first.sql, dialect === "postgres" ? "select $1 + $2 as sum" : "select ? + ? as sum");
      assert.deepEqual(second.parameters, [4, 5]);
    });
  });
}
