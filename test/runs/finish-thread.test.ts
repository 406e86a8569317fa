/**
 * A run large enough to save its results on a thread of its own (here: any run, `finishThreadFrom: 0`)
 * finishes through the real coordinator like any other: its applications and third parties are served
 * over the API, and a second run's unchanged results keep their first sighting.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { RunWork } from "../../src/core/run-work.ts";
import { DiscoveryEngine } from "../../src/discovery/engine.ts";
import type { DiscoveryModule } from "../../src/discovery/module.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { createCollection, force, waitForRun } from "./helpers.ts";

const THIRD_PARTY = "https://cdn.elsewhere-cdn.net/lib.js";

/** Finds a web application under each seed domain, with a script from a third party. */
const webOfDomain: DiscoveryModule = {
  name: "web-of-domain",
  consumes: ["Domain"],
  produces: ["DnsRecord", "Uri"],
  async run(entity, context) {
    const host = `www.${entity.name}`;
    context.emit({ kind: "DnsRecord", name: host });
    context.emit({
      kind: "Uri",
      name: `https://${host}:443`,
      details: {
        code: "200",
        title: "Welcome",
        ip_address: entity.name === "corp.example" ? "192.0.2.10" : "192.0.2.11",
        port: 443,
        scripts: [`https://${host}/app.js`, THIRD_PARTY],
      },
    });
  },
};

for (const { dialect, skip } of await dialects()) {
  describe(`a run whose results are saved on a thread, on ${dialect}`, { skip }, () => {
    let t: TestServer;
    /** How many tasks each finish was told its run had (it chooses the thread by that). */
    const finishedWith: Array<number | undefined> = [];

    before(async () => {
      t = await startTestServer(
        dialect,
        { schedulerIntervalSeconds: 86_400 },
        {
          runWork: (services): RunWork => {
            const engine = new DiscoveryEngine({
              config: services.config,
              collections: services.collections,
              entities: services.entities,
              modules: [webOfDomain],
              finishThreadFrom: 0,
            });
            return {
              plan: (run) => engine.plan(run),
              execute: (task, run, signal) => engine.execute(task, run, signal),
              finish: (run) => {
                finishedWith.push(run.tasks);
                return engine.finish(run);
              },
            };
          },
        },
      );
    });
    after(async () => {
      await t?.close();
    });

    test("finishes, and its applications and third parties are served", async () => {
      await createCollection(t, "threaded", ["corp.example", "shop.example"]);
      const first = await force(t, "threaded");
      const run = await waitForRun(t, "threaded", first, "finished", "failed");
      assert.equal(run.status, "finished", JSON.stringify(run));
      // Two seeds' tasks: the finish knows the run's size, not the count when it started (none).
      assert.equal(run.tasks_total, 2);
      assert.deepEqual(finishedWith, [2]);
      const applications = await t.request("GET", "/api/collections/threaded/applications");
      assert.equal(applications.status, 200, applications.text);
      assert.deepEqual(
        applications.body.result.map((application: { name: string }) => application.name).sort(),
        ["https://www.corp.example:443", "https://www.shop.example:443"],
      );
      const connections = await t.request("GET", "/api/collections/threaded/connections");
      assert.equal(connections.status, 200, connections.text);
      assert.deepEqual(
        connections.body.result.map((connection: { name: string; count: number }) => [
          connection.name,
          connection.count,
        ]),
        [["elsewhere-cdn.net", 2]],
      );

      // A second run sees the same: nothing is new, the first sighting is kept.
      const firstSeen = applications.body.result[0].first_seen;
      const second = await force(t, "threaded");
      await waitForRun(t, "threaded", second, "finished", "failed").then((run) =>
        assert.equal(run.status, "finished", JSON.stringify(run)),
      );
      const again = await t.request("GET", "/api/collections/threaded/applications");
      assert.equal(again.body.result[0].first_seen, firstSeen);
      const recent = await t.request("GET", "/api/collections/threaded/recent");
      assert.equal(recent.status, 200, recent.text);
      assert.deepEqual(recent.body.result, []);
    });
  });
}
