/**
 * The final merge's look-ups of previous versions on PostgreSQL. The merge grows the tables it looks up
 * in, inside its own transaction, where statistics cannot follow: without them the planner took
 * `name in (…)` as a filter over the other key columns' range, reading every row of the kind written so
 * far for each list of 100 names, and a /16's merge grew with the square of its entities. The merge now refreshes the statistics as it grows; each ANALYZE holds its table's lock to
 * the end of the merge's transaction, so two merges at once queue there (and must never deadlock).
 * SQLite's planner keeps the list in the index without statistics.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { loadConfig } from "../../src/core/config.ts";
import { openStore, type Store } from "../../src/store/database.ts";
import { EntitiesRepository, type StagedEntity } from "../../src/store/entities.ts";
import { migrateToLatest } from "../../src/store/migrate.ts";
import { createFixtureCollection } from "../helpers/result-fixtures.ts";
import { createTestStore, dialects, type TestStore } from "../helpers/stores.ts";

const ENTITIES = 6000;
const postgres = (await dialects()).find((run) => run.dialect === "postgres")!;

const address = (i: number) => `10.7.${i >> 8}.${i & 255}`;
const staged = (i: number): StagedEntity => ({
  kind: "IpAddress",
  name: address(i),
  details: { ip_address: address(i) },
  scoped: true,
  hidden: false,
  depth: 1,
  aliases: [],
  ancestors: [],
});
const finding = (i: number) => ({
  name: "open_thing",
  entityKind: "IpAddress",
  entityName: address(i),
  prettyName: "Open thing",
  severity: 3,
  confidence: "confirmed",
  category: "exposure",
  description: "d",
  remediation: "r",
  references: [],
  details: {},
  scoped: true,
});

describe("the merge's look-ups on PostgreSQL", { skip: postgres.skip }, () => {
  let testStore: TestStore;
  let store: Store | undefined;

  before(async () => {
    testStore = await createTestStore("postgres");
  });
  after(async () => {
    await store?.close();
    await testStore?.drop();
  });

  test(`a merge of ${ENTITIES} new entities and issues reads fewer than ${ENTITIES} rows looking them up`, async () => {
    store = openStore(loadConfig({}, testStore.config));
    await migrateToLatest(store);
    const { collectionId } = await createFixtureCollection(store.db, "lookups");
    const entities = new EntitiesRepository(store.db);
    const stage = async (runId: number, from: number, count: number) => {
      for (let i = from; i < from + count; i += 100) {
        const slice = Array.from({ length: Math.min(100, from + count - i) }, (_, j) => i + j);
        await entities.stage(runId, collectionId, {
          entities: slice.map(staged),
          findings: slice.map(finding),
          notes: [],
        });
      }
    };
    // A first run leaves one entity and issue (a first merge looks nothing up: all is new), then a run
    // of many new ones looks each up in tables without statistics for them.
    await stage(1, 0, 1);
    await entities.finishRun(1, collectionId);
    await stage(2, 1, ENTITIES);
    assert.deepEqual(await entities.finishRun(2, collectionId), { entities: ENTITIES, findings: ENTITIES });
    // A backend's counters reach the statistics when it exits: close the store's connections, then read.
    await store.close();
    store = undefined;
    const client = new pg.Client({ connectionString: testStore.config.databaseUrl });
    await client.connect();
    try {
      const read = async () => {
        await client.query("select pg_stat_clear_snapshot()");
        // Rows read through any of a table's indexes.
        const { rows } = await client.query<{ name: string; scans: string; entries: string }>(
          `select relname as name, idx_scan as scans, idx_tup_fetch as entries from pg_stat_user_tables
            where relname in ('entities', 'findings')`,
        );
        return new Map(
          rows.map((row) => [row.name, { scans: Number(row.scans), entries: Number(row.entries) }]),
        );
      };
      // The second merge (one transaction, one backend) looks up findings in lists of 100: once its
      // counters have arrived, those scans are there.
      let counts = await read();
      for (let tries = 0; tries < 100 && (counts.get("findings")?.scans ?? 0) < ENTITIES / 100; tries++) {
        await sleep(100);
        counts = await read();
      }
      for (const table of ["entities", "findings"]) {
        const { entries } = counts.get(table) ?? { scans: 0, entries: 0 };
        // Every key is new. Filtering each list of 100 names over the kind's range read about
        // ENTITIES² / 200 rows (180,000 here): what grew with the square of a run.
        assert.ok(
          entries < ENTITIES,
          `${table}: ${entries} rows read through its indexes for ${ENTITIES} new keys`,
        );
      }
    } finally {
      await client.end();
    }
  });
  test("two collections' merges at once both finish: their statistics locks queue, and never deadlock", async () => {
    store = openStore(loadConfig({}, testStore.config));
    const entities = new EntitiesRepository(store.db);
    const merges = await Promise.all(
      ["first", "second"].map(async (name, index) => {
        const { collectionId } = await createFixtureCollection(store!.db, `together-${name}`);
        const runId = 10 + index;
        for (let i = 0; i < 1000; i += 100)
          await entities.stage(runId, collectionId, {
            entities: Array.from({ length: 100 }, (_, j) => staged(i + j)),
            findings: Array.from({ length: 100 }, (_, j) => finding(i + j)),
            notes: [],
          });
        return entities.finishRun(runId, collectionId);
      }),
    );
    assert.deepEqual(merges, [
      { entities: 1000, findings: 1000 },
      { entities: 1000, findings: 1000 },
    ]);
  });
});
