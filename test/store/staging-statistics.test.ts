/**
 * PostgreSQL: a run's working tables are analyzed as the run writes them, so the look-ups tasks make of
 * them are planned for the tables as they are, not as they were empty, with autovacuum off too (as on CI's
 * server). Without statistics, the prepared look-up of a name's staged sightings took `kind in (…)` as a
 * filter over the run's whole range of the index: every look-up read every row the run had staged.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import type { Services } from "../../src/store/services.ts";
import { stagingAnalyzed } from "../../src/store/staging-statistics.ts";
import { stagedEntity } from "../helpers/result-fixtures.ts";
import { servicesWithCollection } from "../helpers/server.ts";
import { POSTGRES_URL, serviceSkipReason } from "../helpers/services.ts";

const skip = await serviceSkipReason("PostgreSQL", POSTGRES_URL);

describe("statistics of a run's staging on postgres", { skip }, () => {
  let services: Services;
  let collectionId: number;
  let close: (() => Promise<void>) | undefined;
  before(async () => {
    ({ services, collectionId, close } = await servicesWithCollection("postgres"));
    for (const table of ["staged_entities", "staged_findings", "run_tasks"])
      await sql`alter table ${sql.table(table)} set (autovacuum_enabled = false)`.execute(services.store.db);
  });
  after(() => close?.());

  /** The plan PostgreSQL keeps for the name look-up of `EntitiesRepository.staged`, made once for any parameters. */
  const genericPlan = () =>
    services.store.db.connection().execute(async (connection) => {
      await sql`set plan_cache_mode = force_generic_plan`.execute(connection);
      await sql`prepare staged_names (integer, text, text, text, text) as
        select kind, name, details, scoped, depth, ancestors from staged_entities
        where run_id = $1 and kind in ($2, $3, $4) and name in ($5) order by id`.execute(connection);
      try {
        const { rows } = await sql<{ "QUERY PLAN": string }>`explain (costs off)
          execute staged_names (7, 'DnsRecord', 'Domain', 'Nameserver', 'host-42.example.test')`.execute(
          connection,
        );
        return rows.map((row) => row["QUERY PLAN"]).join("\n");
      } finally {
        await sql`deallocate staged_names`.execute(connection);
        await sql`reset plan_cache_mode`.execute(connection);
      }
    });

  test("staging a run analyzes its tables as they grow, and the name look-up keys on kind and name", async () => {
    const kinds = ["DnsRecord", "IpAddress", "NetworkService", "Uri"];
    for (let batch = 0; batch < 20; batch++)
      await services.entities.stage(7, collectionId, {
        entities: Array.from({ length: 500 }, (_, i) => {
          const host = batch * 500 + i;
          return stagedEntity(kinds[host % kinds.length], `host-${host >> 2}.example.test`);
        }),
        findings: [],
        notes: [],
      });
    await stagingAnalyzed(services.store.db);

    const { rows } = await sql<{ reltuples: number }>`
      select reltuples from pg_class where relname = 'staged_entities'`.execute(services.store.db);
    // -1 (never analyzed) without it: autovacuum is off for these tables.
    assert.ok(rows[0].reltuples >= 4_000, `staged_entities analyzed at ${rows[0].reltuples} rows`);
    const plan = await genericPlan();
    assert.match(plan, /Index Cond: .*kind = ANY/, plan);
    assert.doesNotMatch(plan, /Filter: \(kind = ANY/, plan);
  });
});
