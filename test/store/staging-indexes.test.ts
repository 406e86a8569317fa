/**
 * The staging tables keep one index each for what reads them (migration 018 dropped the ones that were a
 * prefix of another), and a run's rows are still found through an index, not by reading the table; on
 * PostgreSQL a run's services also have one by their name's bytes (019), so an address's services are a
 * range of it whatever the database's collation.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CompiledQuery, Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { EntitiesRepository, stagedNames } from "../../src/store/entities.ts";
import type { Database } from "../../src/store/schema.ts";
import type { Services } from "../../src/store/services.ts";
import { stagedEntity } from "../helpers/result-fixtures.ts";
import { servicesWithCollection } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

for (const { dialect, skip } of await dialects()) {
  describe(`staging indexes on ${dialect}`, { skip }, () => {
    let services: Services;
    let collectionId: number;
    let close: (() => Promise<void>) | undefined;
    before(async () => {
      ({ services, collectionId, close } = await servicesWithCollection(dialect));
    });
    after(() => close?.());

    const indexes = async (table: string) => {
      const { rows } =
        dialect === "sqlite"
          ? await sql<{
              name: string;
            }>`select name from pragma_index_list(${table}) where origin = 'c'`.execute(services.store.db)
          : await sql<{ name: string }>`select indexname as name from pg_indexes
              where tablename = ${table} and indexname not like '%_pkey'`.execute(services.store.db);
      return rows.map((row) => row.name).sort();
    };

    test("one index per staging table, none a prefix of another", async () => {
      assert.deepEqual(
        await indexes("staged_entities"),
        dialect === "sqlite"
          ? ["staged_entities_run_kind_name"]
          : ["staged_entities_run_kind_name_id", "staged_entities_services"],
      );
      assert.deepEqual(await indexes("staged_findings"), ["staged_findings_run_key"]);
    });

    test("a run's staged rows are read through an index", async () => {
      const explain =
        dialect === "sqlite"
          ? sql`explain query plan select id from staged_entities where run_id = 1 limit 10`
          : sql`explain (costs off) select id from staged_entities where run_id = 1 limit 10`;
      const { rows } = await (dialect === "postgres"
        ? services.store.db.transaction().execute(async (trx) => {
            await sql`set local enable_seqscan = off`.execute(trx);
            return explain.execute(trx);
          })
        : explain.execute(services.store.db));
      const plan = JSON.stringify(rows);
      assert.match(plan, /staged_entities_run_kind_name/, plan);
    });

    test("the merge's look-up of staged names is a range of run, kind and name", async () => {
      const { db } = services.store;
      const query = stagedNames(db, 7, "IpAddress", ["10.0.0.1", "10.0.0.2"]).compile();
      const explain = CompiledQuery.raw(
        `${dialect === "sqlite" ? "explain query plan" : "explain (costs off)"} ${query.sql}`,
        [...query.parameters],
      );
      const { rows } =
        dialect === "postgres"
          ? await db.transaction().execute(async (trx) => {
              await sql`set local enable_seqscan = off`.execute(trx);
              return trx.executeQuery(explain);
            })
          : await db.executeQuery(explain);
      const plan = JSON.stringify(rows);
      // By name alone, the index gives the run's rows and each is read: quadratic over a merge's names.
      assert.match(
        plan,
        dialect === "sqlite"
          ? /run_id=\? AND kind=\? AND name=\?/
          : /Index Cond: \(\(run_id = \d+\) AND \(kind = /,
        plan,
      );
    });

    test("an address's staged services are found by a range of an index, and only its own", async () => {
      const runId = 7;
      const service = (name: string) => stagedEntity("NetworkService", name);
      const names = Array.from({ length: 200 }, (_, i) => `10.0.${i >> 4}.${i & 15}:${i % 2 ? 22 : 80}/tcp`);
      await services.entities.stage(runId, collectionId, {
        entities: [...names, "10.0.0.10:443/tcp", "[2001:db8::1]:80/tcp"].map(service),
        findings: [],
        notes: [],
      });
      // A logging database over the same one, to see the statement the look-up sends.
      let sent: CompiledQuery | undefined;
      const logged =
        dialect === "postgres"
          ? new Kysely<Database>({
              dialect: new PostgresDialect({
                pool: new pg.Pool({ connectionString: services.config.databaseUrl, max: 1 }),
              }),
              log: (event) => {
                if (event.level === "query" && /from "staged_entities"/.test(event.query.sql))
                  sent = event.query;
              },
            })
          : services.store.db;
      try {
        const found = await new EntitiesRepository(logged).staged(runId, ["NetworkService"], {
          prefixes: ["10.0.0.1:", "[2001:db8::1]:"],
        });
        assert.deepEqual(found.map((entity) => entity.name).sort(), [
          "10.0.0.1:22/tcp",
          "[2001:db8::1]:80/tcp",
        ]);
        if (dialect === "postgres") {
          const query = sent;
          assert.ok(query, "the look-up's statement was seen");
          const { rows } = await logged.transaction().execute(async (trx) => {
            await sql`set local enable_seqscan = off`.execute(trx);
            return trx.executeQuery(
              CompiledQuery.raw(`explain (costs off) ${query.sql}`, [...query.parameters]),
            );
          });
          const plan = JSON.stringify(rows);
          assert.match(plan, /staged_entities_services/, plan);
          assert.doesNotMatch(plan, /~~/, `a LIKE reads every service of the run: ${plan}`);
        }
      } finally {
        if (logged !== services.store.db) await logged.destroy();
      }
    });
  });
}
