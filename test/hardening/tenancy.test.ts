/**
 * Foreign keys cannot reach other teams' data: a user of another team in the same account, and a user of
 * another account, walk every route under /api/collections/{collection_name} (enumerated from the OpenAPI
 * document, so routes added later are walked too) against a collection that is not theirs. Each answer is
 * 404, as for a collection that does not exist, and the store is unchanged.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type Keys, startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import {
  assertErrorEnvelope,
  enumerateRoutes,
  fillPath,
  instantRuns,
  QUIET_SCHEDULER,
  type RouteSpec,
  storeSnapshot,
} from "./surface.ts";

const VICTIM = "crown";
const BODY = { seeds: [{ type: "Domain", name: "evil.example" }], scan_rate: "weekly" };

for (const { dialect, skip } of await dialects()) {
  describe(`other teams and accounts cannot reach a collection, on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let routes: RouteSpec[];
    let snapshot: () => Promise<string>;
    const strangers: Record<string, Keys> = {};
    let victimTeamId: number;

    before(async () => {
      // Every route is called without keys below: more failures than the limiter lets by (it has tests of its own).
      t = await startTestServer(
        dialect,
        { ...QUIET_SCHEDULER, authFailureLimit: 1_000_000 },
        { runWork: instantRuns },
      );
      const { accounts } = t.server.services;
      const created = await t.request("POST", "/api/collections", {
        body: { name: VICTIM, seeds: [{ type: "Domain", name: "crown.example" }] },
      });
      assert.equal(created.status, 200, created.text);
      victimTeamId = created.body.result.team_id;

      const home = (await accounts.findAccount("default"))!;
      const red = await accounts.createTeam(home.id, "red");
      const mallory = await accounts.createUser(home.id, "mallory", red.id);
      strangers["another team of the same account"] = await accounts.issueKey(mallory.id);

      const globex = await accounts.createAccount("globex", "active");
      const blue = await accounts.createTeam(globex.id, "blue");
      const eve = await accounts.createUser(globex.id, "eve", blue.id, true);
      strangers["an administrator of another account"] = await accounts.issueKey(eve.id);

      routes = (await enumerateRoutes(t)).filter((route) =>
        route.template.startsWith("/api/collections/{collection_name}"),
      );
      snapshot = storeSnapshot(t.server.services);
    });
    after(async () => t?.close());

    test("the walk covers the collection routes", () => {
      const covered = routes.map((route) => `${route.method} ${route.template}`);
      for (const expected of [
        "GET /api/collections/{collection_name}",
        "POST /api/collections/{collection_name}",
        "DELETE /api/collections/{collection_name}/seeds",
      ])
        assert.ok(covered.includes(expected), `${expected} is walked`);
    });

    for (const who of ["another team of the same account", "an administrator of another account"]) {
      test(`${who}: 404 on every route, nothing changed`, async () => {
        const keys = strangers[who];
        const before = await snapshot();
        for (const route of routes) {
          const path = fillPath(route, { collection_name: VICTIM });
          const response = await t.request(route.method, path, {
            keys,
            body: route.takesBody ? BODY : undefined,
          });
          const context = `${route.method} ${path} as ${who}`;
          assert.equal(response.status, 404, `${context}: ${response.text}`);
          assertErrorEnvelope(response, context);
          assert.equal(response.body.error.code, "not_found", context);
          // The same answer as for a collection that does not exist: existence is not revealed.
          const missing = await t.request(route.method, fillPath(route, { collection_name: "no-such-one" }), {
            keys,
            body: route.takesBody ? BODY : undefined,
          });
          assert.equal(missing.status, 404, context);
          assert.equal(
            response.body.message.replace(VICTIM, "?"),
            missing.body.message.replace("no-such-one", "?"),
            `${context}: same sentence as for a missing collection`,
          );
        }
        assert.equal(await snapshot(), before, `${who} changed the store`);

        const list = await t.request("GET", "/api/collections", { keys });
        assert.ok(!list.body.result.includes(VICTIM), `${who} does not list it`);
        const intoTheirTeam = await t.request("POST", "/api/collections", {
          keys,
          body: { name: "planted", team_id: victimTeamId },
        });
        assert.equal(intoTheirTeam.status, 403, `${who} cannot create in the victim's team`);
        assert.equal(await snapshot(), before, `${who} changed the store`);
      });
    }

    test("the same name in another account is another collection", async () => {
      const eve = strangers["an administrator of another account"];
      const own = await t.request("POST", "/api/collections", {
        keys: eve,
        body: { name: VICTIM, seeds: [{ type: "Domain", name: "eve.example" }] },
      });
      assert.equal(own.status, 200, own.text);
      const added = await t.request("POST", `/api/collections/${VICTIM}`, { keys: eve, body: BODY });
      assert.equal(added.status, 200, added.text);
      const deleted = await t.request("DELETE", `/api/collections/${VICTIM}/seeds`, { keys: eve });
      assert.equal(deleted.status, 200);
      const victim = await t.request("GET", `/api/collections/${VICTIM}`);
      assert.deepEqual(victim.body.result.seeds, [{ type: "Domain", name: "crown.example" }]);
      assert.equal(victim.body.result.scan_rate, "auto");
    });

    test("without keys every /api route answers 401", async () => {
      const all = await enumerateRoutes(t);
      for (const route of all.filter((r) => r.authenticated)) {
        const response = await t.request(route.method, fillPath(route, { collection_name: VICTIM }), {
          keys: null,
          body: route.takesBody ? BODY : undefined,
        });
        assert.equal(response.status, 401, `${route.method} ${route.template}`);
        assertErrorEnvelope(response, route.template);
      }
    });
  });
}
