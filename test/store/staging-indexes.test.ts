/**
 * The staging tables keep one index each for what reads them (migration 018 dropped the ones that were a
 * prefix of another), and a run's rows are still found through an index, not by reading the table.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import type { Services } from "../../src/store/services.ts";
import { servicesWithCollection } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

for (const { dialect, skip } of await dialects()) {
  describe(`staging indexes on ${dialect}`, { skip }, () => {
    let services: Services;
    let close: (() => Promise<void>) | undefined;
    before(async () => {
      ({ services, close } = await servicesWithCollection(dialect));
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
        dialect === "sqlite" ? ["staged_entities_run_kind_name"] : ["staged_entities_run_kind_name_id"],
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
  });
}
