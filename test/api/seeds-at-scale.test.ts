/**
 * Seeds at scale: a seed write counts seeds by query (it never reads them all), `GET
 * /api/collections/{name}` answers `seeds_total` and one page of seeds (limit/offset), and a collection
 * holds at most SIGHTLINE_MAX_SEEDS seeds (a 400 naming the limit, nothing added). On both dialects.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { KyselyPlugin, RootOperationNode } from "kysely";
import { CollectionsRepository } from "../../src/store/collections.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

const MAX = 50;
const seeds = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => ({ type: "Domain", name: `${prefix}${i}.example` }));

for (const { dialect, skip } of await dialects()) {
  describe(`seeds at scale, on ${dialect}`, { skip }, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600, maxSeedsPerCollection: MAX });
      const created = await t.request("POST", "/api/collections", {
        body: { name: "big", seeds: seeds("a", 30) },
      });
      assert.equal(created.status, 200, created.text);
    });
    after(async () => {
      await t?.close();
    });

    test("a collection answers seeds_total and a page of its seeds", async () => {
      const first = await t.request("GET", "/api/collections/big?limit=10");
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.result.seeds_total, 30);
      assert.equal(first.body.result.seed_count, 30);
      assert.deepEqual(
        first.body.result.seeds.map((seed: { name: string }) => seed.name),
        seeds("a", 10).map((s) => s.name),
      );
      const last = await t.request("GET", "/api/collections/big?limit=10&offset=25");
      assert.deepEqual(
        last.body.result.seeds.map((seed: { name: string }) => seed.name),
        seeds("a", 30)
          .slice(25)
          .map((s) => s.name),
      );
      const everything = await t.request("GET", "/api/collections/big");
      assert.equal(everything.body.result.seeds.length, 30, "the default page holds up to 1,000");
      assert.equal((await t.request("GET", "/api/collections/big?limit=0")).status, 400);
      assert.equal((await t.request("GET", "/api/collections/big?limit=10001")).status, 400);
    });

    test("adding beyond the cap: 400 naming SIGHTLINE_MAX_SEEDS, nothing added; up to the cap is fine", async () => {
      const over = await t.request("POST", "/api/collections/big", { body: { seeds: seeds("b", 21) } });
      assert.equal(over.status, 400, over.text);
      assert.match(over.body.message, /SIGHTLINE_MAX_SEEDS/);
      assert.match(over.body.message, /at most 50/);
      assert.equal(over.body.error.details[0].field, "seeds");
      assert.equal(
        (await t.request("GET", "/api/collections/big")).body.result.seeds_total,
        30,
        "nothing added",
      );
      const created = await t.request("POST", "/api/collections", {
        body: { name: "huge", seeds: seeds("c", MAX + 1) },
      });
      assert.equal(created.status, 400, created.text);
      assert.match(created.body.message, /SIGHTLINE_MAX_SEEDS/);
      assert.equal((await t.request("GET", "/api/collections/huge")).status, 404, "not created");
      const fits = await t.request("POST", "/api/collections/big", { body: { seeds: seeds("b", 20) } });
      assert.equal(fits.status, 200, fits.text);
      assert.equal(fits.body.result.seed_count, MAX);
      // Seeds it has already do not count twice.
      const again = await t.request("POST", "/api/collections/big", { body: { seeds: seeds("b", 20) } });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.result.seeds_added, 0);
    });

    test("a seed write counts by query: it never selects the seeds themselves", async () => {
      const statements: string[] = [];
      const spy: KyselyPlugin = {
        transformQuery(args) {
          const node = args.node as RootOperationNode;
          statements.push(node.kind);
          if (node.kind === "SelectQueryNode") {
            const selections = JSON.stringify(node);
            statements.push(
              /"name":"count"|count/i.test(selections) ? "count" : `select ${selections.slice(0, 200)}`,
            );
          }
          return args.node;
        },
        async transformResult(args) {
          return args.result;
        },
      };
      const repository = new CollectionsRepository(t.server.services.store.db.withPlugin(spy), {
        maxSeeds: 1000,
      });
      const row = (await repository.findInAccount(
        (await t.server.services.accounts.findAccount("default"))!.id,
        "big",
      ))!;
      const result = await repository.addSeeds(row.id, [{ type: "Domain", name: "one-more.example" }]);
      assert.equal(result.total, MAX + 1);
      const selects = statements.filter((entry) => entry.startsWith("select "));
      assert.deepEqual(selects, [], `no query reads the seeds: ${statements.join(", ")}`);
      assert.ok(statements.includes("count"));
    });
  });
}
