/**
 * A run's results saved on a thread of its own (store/run-results.ts) are the results saved on this
 * thread: the same entities, findings and third parties. Meanwhile this thread's other writes wait for
 * it (SQLite has one writer) and none fails; the log is copied back and the writer's checkpoints come
 * back afterwards, and the staging rows' space is given back; an error on the thread is the save's error.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type Kysely, sql } from "kysely";
import type { Seed } from "../../src/core/seeds.ts";
import { AccountsRepository } from "../../src/store/accounts.ts";
import { RunConnectionsRepository } from "../../src/store/connections.ts";
import { openStore, type Store } from "../../src/store/database.ts";
import { EntitiesRepository } from "../../src/store/entities.ts";
import { whenCheckpointed } from "../../src/store/large-commit.ts";
import { migrateToLatest } from "../../src/store/migrate.ts";
import {
  type RunResultsRequest,
  saveRunResults,
  saveRunResultsOnThread,
} from "../../src/store/run-results.ts";
import type { Database } from "../../src/store/schema.ts";
import { buildRun, createFixtureCollection, THIRD_PARTY_SCRIPT } from "../helpers/result-fixtures.ts";
import { createTestStore, dialects, type TestStore } from "../helpers/stores.ts";

const HOSTS = 120;
const SEEDS: Seed[] = [{ type: "Domain", name: "corp.example" }];

const request = (runId: number, collectionId: number): RunResultsRequest => ({
  runId,
  collectionId,
  seeds: SEEDS,
  scanAllow: [],
  scanDeny: [],
});

/** What a collection's results are, without what differs between two collections (ids, times). */
async function resultsOf(db: Kysely<Database>, collectionId: number, runId: number) {
  const entities = await db
    .selectFrom("entities")
    .select(["kind", "name", "content_hash", "alias_group"])
    .where("collection_id", "=", collectionId)
    .where("latest", "=", 1)
    .orderBy("kind")
    .orderBy("name")
    .execute();
  const findings = await db
    .selectFrom("findings")
    .select(["name", "entity_kind", "entity_name", "endpoint", "content_hash"])
    .where("collection_id", "=", collectionId)
    .where("latest", "=", 1)
    .orderBy("name")
    .orderBy("entity_kind")
    .orderBy("entity_name")
    .execute();
  const connections = await new RunConnectionsRepository(db).of(runId);
  return { entities, findings, connections };
}

for (const { dialect, skip } of await dialects()) {
  describe(`a run's results saved on a thread, on ${dialect}`, { skip }, () => {
    let testStore: TestStore;
    let store: Store;

    before(async () => {
      testStore = await createTestStore(dialect);
      store = openStore(testStore.config);
      await migrateToLatest(store);
    });
    after(async () => {
      await whenCheckpointed();
      await store?.close();
      await testStore?.drop();
    });

    const onThread = (runId: number, collectionId: number) =>
      saveRunResultsOnThread(store.db, request(runId, collectionId), testStore.config.databaseUrl);

    test("are the results saved here: entities, findings and third parties", async () => {
      const here = await createFixtureCollection(store.db, "here");
      const there = await createFixtureCollection(store.db, "there");
      const hereRun = await buildRun(store.db, here, {
        hosts: HOSTS,
        save: (runId, collectionId) => saveRunResults(store.db, request(runId, collectionId)),
      });
      const thereRun = await buildRun(store.db, there, { hosts: HOSTS, save: onThread });
      const expected = await resultsOf(store.db, here.collectionId, hereRun);
      const saved = await resultsOf(store.db, there.collectionId, thereRun);
      assert.ok(expected.entities.length > HOSTS * 4, `${expected.entities.length} entities`);
      assert.ok(expected.findings.length > 0);
      assert.ok(expected.connections?.some((connection) => THIRD_PARTY_SCRIPT.includes(connection.name)));
      assert.deepEqual(saved, expected);
      // The staging rows went with the merge.
      const staged = await store.db
        .selectFrom("staged_entities")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("run_id", "=", thereRun)
        .executeTakeFirstOrThrow();
      assert.equal(Number(staged.n), 0);
    });

    test("this thread's writes meanwhile succeed; on SQLite they wait for it", async () => {
      const collection = await createFixtureCollection(store.db, "busy");
      const order: string[] = [];
      await buildRun(store.db, collection, {
        hosts: HOSTS,
        save: async (runId, collectionId) => {
          const saving = onThread(runId, collectionId).then(() => order.push("saved"));
          // Issued once the thread holds the writer (SQLite): the save's first step is this thread's.
          await new Promise((resolve) => setImmediate(resolve));
          const writing = new AccountsRepository(store.db)
            .createAccount("meanwhile", "active")
            .then(() => order.push("written"));
          await Promise.all([saving, writing]);
        },
      });
      assert.equal(order.length, 2);
      if (dialect === "sqlite") assert.deepEqual(order, ["saved", "written"]);
    });

    test("an error on the thread is the save's error", async () => {
      // No such collection: the results' row refers to it.
      await assert.rejects(onThread(987_654, 987_654), /foreign key/i);
    });

    if (dialect === "sqlite")
      test("the log is copied back and the writer checkpoints again afterwards; the staging space is given back", async () => {
        const collection = await createFixtureCollection(store.db, "settled");
        await buildRun(store.db, collection, { hosts: HOSTS, save: onThread });
        // The thread gave back the pages the merge's deleted staging rows left.
        const free = await sql<{ freelist_count: number }>`pragma freelist_count`.execute(store.db);
        assert.equal(Number(free.rows[0]?.freelist_count), 0);
        await whenCheckpointed();
        const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(
          store.db,
        );
        assert.equal(Number(rows[0]?.wal_autocheckpoint), 1000);
        const log = await sql<{ log: number; checkpointed: number }>`pragma wal_checkpoint(PASSIVE)`.execute(
          store.db,
        );
        assert.equal(Number(log.rows[0]?.log), Number(log.rows[0]?.checkpointed));
        // The entities repository reads the saved run like any other.
        const finished = await new EntitiesRepository(store.db).resultRun(collection.collectionId);
        assert.ok(finished);
      });
  });
}
