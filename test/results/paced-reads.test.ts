/**
 * Result reads on SQLite never wait (its statements are synchronous), so a read of thousands of rows —
 * an unpaged list, the third parties a run's finish decides — would hold the server's event loop from
 * its first row to its last. They yield to the loop as `pace` says.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "../../src/core/config.ts";
import { gatherConnections } from "../../src/store/connections.ts";
import { openStore, type Store } from "../../src/store/database.ts";
import { EntitiesRepository } from "../../src/store/entities.ts";
import { migrateToLatest } from "../../src/store/migrate.ts";
import { ResultQueries, type ResultRun } from "../../src/store/result-queries.ts";
import { buildRun, createFixtureCollection } from "../helpers/result-fixtures.ts";
import { createTestStore, type TestStore } from "../helpers/stores.ts";

/** Whether other work of the loop (an immediate queued before `read` began) ran before `read` ended. */
async function letsOthersIn(read: () => Promise<number>): Promise<{ others: boolean; items: number }> {
  let ran = false;
  setImmediate(() => {
    ran = true;
  });
  let ranWhileReading = false;
  const items = await read().then((count) => {
    ranWhileReading = ran;
    return count;
  });
  return { others: ranWhileReading, items };
}

describe("result reads on SQLite yield to the event loop", () => {
  let testStore: TestStore;
  let store: Store;
  let run: ResultRun;

  before(async () => {
    testStore = await createTestStore("sqlite");
    store = openStore(loadConfig({}, testStore.config));
    await migrateToLatest(store);
    const collection = await createFixtureCollection(store.db, "paced");
    await buildRun(store.db, collection, { hosts: 1500 });
    const finished = await new EntitiesRepository(store.db).resultRun(collection.collectionId);
    run = { collectionId: collection.collectionId, ...finished! };
  });
  after(async () => {
    await store?.close();
    await testStore?.drop();
  });

  test("every entity of a run, read in batches", async () => {
    const queries = new ResultQueries(store.db);
    const { others, items } = await letsOthersIn(async () => {
      let count = 0;
      for await (const _ of queries.entities(run, {})) count++;
      return count;
    });
    assert.ok(items > 5000, `read ${items} entities`);
    assert.ok(others, "the loop's other work ran during the read");
  });

  test("the third parties a run's finish decides", async () => {
    const { others } = await letsOthersIn(async () => {
      const connections = await gatherConnections(new ResultQueries(store.db), run, () => true);
      return connections.length;
    });
    assert.ok(others, "the loop's other work ran during the read");
  });
});
