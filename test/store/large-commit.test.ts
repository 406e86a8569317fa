/**
 * A large transaction's commit leaves its write-ahead log to a thread (SQLite), instead of copying it
 * back on the event loop; the writer's checkpoints come back afterwards, and the log still starts over
 * while small writes go on meanwhile. PostgreSQL: a plain transaction.
 */
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type Kysely, sql } from "kysely";
import { openStore, type Store } from "../../src/store/database.ts";
import { largeTransaction, whenCheckpointed } from "../../src/store/large-commit.ts";
import type { Database } from "../../src/store/schema.ts";
import { createTestStore, dialects, type TestStore } from "../helpers/stores.ts";

/** About 8 MB of rows: 2,000 pages of 4 KB, twice an automatic checkpoint's worth. */
const insertLarge = (db: Kysely<Database>, round: number) =>
  largeTransaction(db, async (trx) => {
    for (let i = 0; i < 2000; i++)
      await sql`insert into scratch (round, body) values (${round}, ${"x".repeat(4000)})`.execute(trx);
    return round;
  });

const insertSmall = (db: Kysely<Database>) =>
  sql`insert into scratch (round, body) values (0, 'small')`.execute(db);

const autocheckpoint = async (db: Kysely<Database>) =>
  Number(
    (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db)).rows[0]
      ?.wal_autocheckpoint,
  );

for (const { dialect, skip } of await dialects()) {
  describe(`a large transaction on ${dialect}`, { skip }, () => {
    let testStore: TestStore;
    let store: Store;

    before(async () => {
      testStore = await createTestStore(dialect);
      store = openStore(testStore.config);
      const body = dialect === "sqlite" ? "blob" : "text";
      await sql`${sql.raw(`create table scratch (round integer not null, body ${body} not null)`)}`.execute(
        store.db,
      );
    });
    after(async () => {
      await whenCheckpointed();
      await store?.close();
      await testStore?.drop();
    });

    test("commits its rows and answers what its body answered", async () => {
      assert.equal(await insertLarge(store.db, 1), 1);
      const { rows } = await sql<{ n: number }>`select count(*) as n from scratch where round = 1`.execute(
        store.db,
      );
      assert.equal(Number(rows[0]?.n), 2000);
      await assert.rejects(
        largeTransaction(store.db, async (trx) => {
          await sql`insert into scratch (round, body) values (9, 'lost')`.execute(trx);
          throw new Error("changed my mind");
        }),
        /changed my mind/,
      );
      const lost = await sql<{ n: number }>`select count(*) as n from scratch where round = 9`.execute(
        store.db,
      );
      assert.equal(Number(lost.rows[0]?.n), 0, "a failed body rolls back");
    });

    if (dialect !== "sqlite") return;
    const file = () => join(testStore.config.dataDir, "sightline.db");

    test("its commit leaves the log to the thread, and the writer's checkpoints come back", async () => {
      await whenCheckpointed();
      await insertSmall(store.db);
      const before = statSync(file()).size;
      await insertLarge(store.db, 2);
      // With the writer's checkpoint on, this commit would have copied its 8 MB into the file already.
      assert.equal(statSync(file()).size, before, "the database file is as it was when the commit returns");
      await whenCheckpointed();
      assert.ok(statSync(file()).size >= before + 7_000_000, "the thread copied the log back");
      assert.equal(await autocheckpoint(store.db), 1000);
    });

    test("what the writer adds while the thread copies is copied too: the log has started over when it is done", async () => {
      await whenCheckpointed();
      await insertLarge(store.db, 5);
      let copied = false;
      const settled = whenCheckpointed().then(() => {
        copied = true;
      });
      // A run's writes meanwhile, a few milliseconds apart.
      for (let writes = 0; !copied && writes < 10_000; writes++) {
        await insertSmall(store.db);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await settled;
      // Left with the frames written during the copy, the writer's next commit would copy them and sync
      // the file on its thread; a log that started over holds only what came after.
      const { rows } = await sql<{ log: number }>`pragma wal_checkpoint(PASSIVE)`.execute(store.db);
      const frames = Number(rows[0]?.log);
      assert.ok(frames < 1000, `the log holds ${frames} frames once the thread is done`);
    });

    test("the log starts over although small writes go on while the thread copies", async () => {
      await whenCheckpointed();
      // The writer's next commits copy what the thread left and start the log over.
      for (let i = 0; i < 2; i++) await insertSmall(store.db);
      await insertLarge(store.db, 3);
      let copied = false;
      const settled = whenCheckpointed().then(() => {
        copied = true;
      });
      for (let writes = 0; !copied && writes < 100_000; writes++) {
        await insertSmall(store.db);
        await new Promise((resolve) => setImmediate(resolve));
      }
      await settled;
      for (let i = 0; i < 5; i++) await insertSmall(store.db);
      await insertLarge(store.db, 4);
      await whenCheckpointed();
      for (let i = 0; i < 5; i++) await insertSmall(store.db);
      // The frames in the log now: a log that never started over would still hold both large transactions.
      const { rows } = await sql<{ log: number }>`pragma wal_checkpoint(PASSIVE)`.execute(store.db);
      const frames = Number(rows[0]?.log);
      assert.ok(frames < 2000, `the log holds ${frames} frames after two large commits of 2,000 pages`);
    });
  });
}
