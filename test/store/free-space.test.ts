/**
 * A finished run leaves no free space behind: the staging rows its merge deletes go back to the file
 * system (SQLite: incremental auto-vacuum in short steps that serve the event loop between them) or are
 * vacuumed (PostgreSQL). A SQLite database created before incremental auto-vacuum keeps working, and
 * converts with `PRAGMA auto_vacuum = INCREMENTAL; VACUUM;`. Both dialects.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { reclaimFreeSpace } from "../../src/store/free-space.ts";
import { openServices, type Services } from "../../src/store/services.ts";
import { testServerConfig } from "../helpers/server.ts";
import { createTestStore, dialects, type TestStore } from "../helpers/stores.ts";
import { countTurns } from "../helpers/turns.ts";

/** A scan's worth of sightings: enough staging rows to fill a few thousand pages. */
async function stageAndFinish(services: Services, collectionId: number, hosts: number) {
  const run = (await services.runs.create(collectionId, "forced", 1))!;
  assert.ok(await services.runs.start(run.id, [], new Date(Date.now() + 3_600_000).toISOString()));
  for (let i = 0; i < hosts; i += 100) {
    const entities = Array.from({ length: Math.min(100, hosts - i) }, (_, j) => ({
      kind: "IpAddress",
      name: `10.0.${(i + j) >> 8}.${(i + j) & 255}`,
      details: { note: "x".repeat(600), index: i + j },
      scoped: true,
      hidden: false,
      depth: 0,
      aliases: [],
      ancestors: [],
    }));
    // Each host is seen twice, as a scan sees it from two tasks.
    await services.entities.stage(run.id, collectionId, { entities, findings: [], notes: [] });
    await services.entities.stage(run.id, collectionId, { entities, findings: [], notes: [] });
  }
  assert.ok(await services.runs.claimFinish(run.id));
  await services.entities.finishRun(run.id, collectionId);
  assert.ok(await services.runs.markFinished(run.id));
  return run.id;
}

async function newCollection(services: Services, name: string) {
  const account = await services.accounts.createAccount(name, "active");
  const team = await services.accounts.createTeam(account.id, "red");
  return (await services.collections.create(account.id, team.id, name, [], "on_demand"))!.id;
}

const pragma = async (services: Services, name: string) => {
  const { rows } = await sql<Record<string, number>>`${sql.raw(`pragma ${name}`)}`.execute(services.store.db);
  return Number(rows[0]?.[name]);
};

for (const { dialect, skip } of await dialects()) {
  describe(`space a run's staging leaves on ${dialect}`, { skip }, () => {
    let store: TestStore;
    let services: Services;

    before(async () => {
      store = await createTestStore(dialect);
      services = await openServices(testServerConfig(store));
    });
    after(async () => {
      await services?.store.close();
      await store?.drop();
    });

    test("after a finished run the staging tables hold no space beyond a bound", async () => {
      const collectionId = await newCollection(services, "acme");
      await stageAndFinish(services, collectionId, 3000);
      const { count } = (await services.store.db
        .selectFrom("entities")
        .select((eb) => eb.fn.countAll<number>().as("count"))
        .executeTakeFirstOrThrow()) as { count: number };
      assert.equal(Number(count), 3000);
      if (dialect === "sqlite") {
        assert.equal(await pragma(services, "auto_vacuum"), 2, "a new database uses incremental auto-vacuum");
        const free = await pragma(services, "freelist_count");
        assert.ok(free <= 8, `${free} free pages are left after the run`);
      } else {
        // Emptied, the staging tables are truncated: their indexes go too (a VACUUM keeps an index's pages).
        const { rows } = await sql<{ bytes: string }>`
          select pg_total_relation_size('staged_entities') + pg_total_relation_size('staged_findings') as bytes`.execute(
          services.store.db,
        );
        // What is left is a page or two per index: its metapage and, the tables being unlogged (migration
        // 020), its init fork (what the index is reset to after a crash).
        const bytes = Number(rows[0].bytes);
        assert.ok(
          bytes <= 16 * 8192,
          `the staging tables and their indexes still take ${bytes} bytes after the run`,
        );
      }
    });

    test("another run's staging is kept whole while a run finishes", async () => {
      const other = await newCollection(services, "other");
      const active = (await services.runs.create(other, "forced", 1))!;
      const entity = (name: string) => ({
        kind: "DnsRecord",
        name,
        details: {},
        scoped: true,
        hidden: false,
        depth: 0,
        aliases: [],
        ancestors: [],
      });
      await services.entities.stage(active.id, other, {
        entities: [entity("a.other.test"), entity("b.other.test")],
        findings: [],
        notes: [],
      });
      await stageAndFinish(services, await newCollection(services, "third"), 500);
      const staged = await services.store.db
        .selectFrom("staged_entities")
        .select("name")
        .where("run_id", "=", active.id)
        .orderBy("name")
        .execute();
      assert.deepEqual(
        staged.map((row) => row.name),
        ["a.other.test", "b.other.test"],
      );
    });
  });
}

describe("incremental vacuum on SQLite", () => {
  let store: TestStore;
  before(async () => {
    store = await createTestStore("sqlite");
  });
  after(async () => {
    await store?.drop();
  });

  test("frees pages in several short steps, serving the event loop between them", async () => {
    const services = await openServices(testServerConfig(store));
    try {
      const db = services.store.db;
      await sql`create table filler (text text)`.execute(db);
      for (let i = 0; i < 100; i++)
        await sql`insert into filler (text) select ${"y".repeat(2000)} from (select 1 union all select 2 union all select 3 union all select 4 union all select 5) a, (select 1 union all select 2 union all select 3 union all select 4 union all select 5) b`.execute(
          db,
        );
      await sql`delete from filler`.execute(db);
      const free = await pragma(services, "freelist_count");
      assert.ok(free >= 1000, `${free} pages free before`);
      const turns = countTurns();
      const reclaimed = await reclaimFreeSpace(db, []);
      turns.stop();
      assert.equal(await pragma(services, "freelist_count"), 0);
      assert.ok(reclaimed.pages >= free, `${reclaimed.pages} of ${free} pages reclaimed`);
      assert.ok(reclaimed.steps > 1, `in ${reclaimed.steps} steps`);
      assert.ok(
        turns.count >= reclaimed.steps - 1,
        `the loop ran ${turns.count} times in ${reclaimed.steps} steps`,
      );
    } finally {
      await services.store.close();
    }
  });

  test("in one step when asked (a thread of the store's own, where nobody waits between steps)", async () => {
    const services = await openServices(testServerConfig(store));
    try {
      const db = services.store.db;
      await sql`create table filler_once (text text)`.execute(db);
      await sql`insert into filler_once (text) select ${"z".repeat(2000)} from (select 1 union all select 2 union all select 3 union all select 4 union all select 5) a, (select 1 union all select 2 union all select 3 union all select 4 union all select 5) b`.execute(
        db,
      );
      await sql`delete from filler_once`.execute(db);
      const free = await pragma(services, "freelist_count");
      assert.ok(free >= 10, `${free} pages free before`);
      assert.deepEqual(await reclaimFreeSpace(db, [], { oneStep: true }), { pages: free, steps: 1 });
      assert.equal(await pragma(services, "freelist_count"), 0);
      assert.deepEqual(await reclaimFreeSpace(db, [], { oneStep: true }), { pages: 0, steps: 0 });
    } finally {
      await services.store.close();
    }
  });

  test("a database created without auto-vacuum keeps working, and converts with VACUUM", async () => {
    const old = await createTestStore("sqlite");
    try {
      // As an older Sightline left it: tables created with auto_vacuum = 0.
      const file = join(old.config.dataDir, "sightline.db");
      const raw = new DatabaseSync(file);
      raw.exec("create table earlier (id integer primary key)");
      raw.close();
      let services = await openServices(testServerConfig(old));
      let collectionId: number;
      try {
        assert.equal(await pragma(services, "auto_vacuum"), 0);
        collectionId = await newCollection(services, "legacy");
        await stageAndFinish(services, collectionId, 1000);
        assert.ok((await pragma(services, "freelist_count")) > 0, "the free pages stay, for later rows");
        assert.deepEqual(await reclaimFreeSpace(services.store.db, []), { pages: 0, steps: 0 });
      } finally {
        await services.store.close();
      }
      // The conversion docs/operations.md gives, with the server stopped.
      const convert = new DatabaseSync(file);
      convert.exec("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;");
      convert.close();
      services = await openServices(testServerConfig(old));
      try {
        assert.equal(await pragma(services, "auto_vacuum"), 2);
        assert.equal(await pragma(services, "freelist_count"), 0);
        await stageAndFinish(services, collectionId, 1000);
        assert.ok((await pragma(services, "freelist_count")) <= 8);
      } finally {
        await services.store.close();
      }
    } finally {
      await old.drop();
    }
  });
});
