/** Collection management over real HTTP, on SQLite and PostgreSQL. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { buildInfo } from "../../src/core/build-info.ts";
import { type Keys, startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

function assertError(
  response: {
    status: number;
    body: { success: boolean; message: string; result: unknown; error: { code: string } };
  },
  status: number,
  pattern: RegExp,
) {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.success, false);
  assert.equal(response.body.result, null);
  assert.equal(typeof response.body.error.code, "string");
  assert.match(response.body.message, pattern);
}

for (const { dialect, skip } of await dialects()) {
  describe(`collections API on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let stranger: Keys & { userId: number; teamId: number };

    before(async () => {
      t = await startTestServer(dialect);
      // A second account-less user in another team of the same account.
      const { accounts } = t.server.services;
      const account = (await accounts.findAccount("default"))!;
      const team = await accounts.createTeam(account.id, "red");
      const user = await accounts.createUser(account.id, "mallory", team.id);
      const key = await accounts.issueKey(user.id);
      stranger = { accessKey: key.accessKey, secretKey: key.secretKey, userId: user.id, teamId: team.id };
    });
    after(async () => t?.close());

    test("health answers without keys", async () => {
      const response = await t.request("GET", "/healthz", { keys: null });
      assert.equal(response.status, 200);
      // Public: no dialect or address in it; the release and commit, as --version and /metrics say them.
      const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
      assert.deepEqual(response.body, {
        status: "ok",
        checks: { database: { ok: true } },
        version,
        commit: buildInfo().commit,
      });
      assert.match(response.body.commit, /^([0-9a-f]{7,40}|unknown)$/);
    });

    test("create, list, add seeds, delete seeds — all in the envelope", async () => {
      const created = await t.request("POST", "/api/collections", {
        body: {
          name: "acme",
          seeds: [
            { type: "Domain", name: "Acme.Example." },
            { type: "IpAddress", name: "192.0.2.10" },
            { type: "Nameserver", name: "ns1.acme.example" },
            { type: "DnsRecord", name: "www.acme.example" },
          ],
        },
      });
      assert.equal(created.status, 200, created.text);
      assert.equal(created.body.success, true);
      assert.equal(created.body.message, "success");
      assert.equal(created.body.result.name, "acme");
      assert.equal(created.body.result.seed_count, 4);
      assert.deepEqual(created.body.result.seeds[0], { type: "Domain", name: "acme.example" });
      assert.match(created.body.result.created_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);

      const list = await t.request("GET", "/api/collections");
      assert.deepEqual(list.body, { success: true, message: "success", result: ["acme"] });

      const added = await t.request("POST", "/api/collections/acme", {
        body: {
          name: "acme",
          seeds: [
            { type: "Domain", name: "acme.example" },
            { type: "NetBlock", name: "198.51.100.7/24" },
          ],
        },
      });
      assert.equal(added.status, 200, added.text);
      assert.deepEqual(added.body.result, { name: "acme", seeds_added: 1, seed_count: 5 });

      const again = await t.request("POST", "/api/collections/acme", {
        body: { seeds: [{ type: "Domain", name: "ACME.example" }] },
      });
      assert.equal(again.body.result.seeds_added, 0, "a repeated seed is a no-op");

      const read = await t.request("GET", "/api/collections/acme");
      assert.ok(read.body.result.seeds.some((s: { name: string }) => s.name === "198.51.100.0/24"));

      const deleted = await t.request("DELETE", "/api/collections/acme/seeds");
      assert.equal(deleted.status, 200);
      assert.deepEqual(deleted.body, {
        success: true,
        message: "success",
        result: { name: "acme", seeds_deleted: 5, seed_count: 0 },
      });
    });

    test("IDN domains are stored as punycode and IPv6 compressed", async () => {
      const created = await t.request("POST", "/api/collections", {
        body: {
          name: "idn",
          seeds: [
            { type: "Domain", name: "bücher.example" },
            { type: "IpAddress", name: "2001:0db8:0:0::1" },
          ],
        },
      });
      assert.equal(created.status, 200, created.text);
      assert.deepEqual(
        created.body.result.seeds.map((s: { name: string }) => s.name),
        ["xn--bcher-kva.example", "2001:db8::1"],
      );
    });

    test("team_id as string or number; a team not yours is 403", async () => {
      const teamId = (await t.server.services.accounts.findTeam("default"))!.id;
      const asString = await t.request("POST", "/api/collections", {
        body: { name: "by-string", team_id: String(teamId) },
      });
      assert.equal(asString.status, 200, asString.text);
      assert.equal(asString.body.result.team_id, teamId);
      const asNumber = await t.request("POST", "/api/collections", {
        body: { name: "by-number", team_id: teamId },
      });
      assert.equal(asNumber.body.result.team_id, teamId);
      assertError(
        await t.request("POST", "/api/collections", { body: { name: "theirs", team_id: stranger.teamId } }),
        403,
        /not a member of team/,
      );
      assertError(
        await t.request("POST", "/api/collections", { body: { name: "nonsense", team_id: "abc" } }),
        400,
        /team_id/,
      );
      const names = (await t.request("GET", "/api/collections")).body.result;
      assert.ok(
        !names.includes("theirs") && !names.includes("nonsense"),
        "nothing written by a rejected request",
      );
    });

    test("another team's user cannot see the collection until joining the team", async () => {
      await t.request("POST", "/api/collections", {
        body: { name: "private", seeds: [{ type: "Domain", name: "private.example" }] },
      });
      const list = await t.request("GET", "/api/collections", { keys: stranger });
      assert.deepEqual(list.body.result, []);
      for (const [method, path, body] of [
        ["GET", "/api/collections/private", undefined],
        ["POST", "/api/collections/private", { seeds: [] }],
        ["DELETE", "/api/collections/private/seeds", undefined],
      ] as const) {
        assertError(
          await t.request(method, path, { keys: stranger, body }),
          404,
          /No collection named "private"/,
        );
      }
      const { accounts } = t.server.services;
      await accounts.addMember((await accounts.findTeam("default"))!.id, stranger.userId);
      const joined = await t.request("GET", "/api/collections", { keys: stranger });
      assert.ok(joined.body.result.includes("private"));
      await accounts.removeMember((await accounts.findTeam("default"))!.id, stranger.userId);
    });

    test("a taken name is 409 and changes nothing", async () => {
      await t.request("POST", "/api/collections", {
        body: { name: "dup", seeds: [{ type: "Domain", name: "one.example" }] },
      });
      const second = await t.request("POST", "/api/collections", {
        body: { name: "dup", seeds: [{ type: "Domain", name: "two.example" }] },
      });
      assertError(second, 409, /^This name cannot be used; choose another\.$/);
      const read = await t.request("GET", "/api/collections/dup");
      assert.deepEqual(read.body.result.seeds, [{ type: "Domain", name: "one.example" }]);
    });

    describe("bad input: a 4xx envelope naming the problem, nothing written", () => {
      test("authentication", async () => {
        assertError(await t.request("GET", "/api/collections", { keys: null }), 401, /SERVICE_ACCESS_KEY/);
        assertError(
          await t.request("GET", "/api/collections", {
            keys: { accessKey: t.admin.accessKey, secretKey: "wrong" },
          }),
          401,
          /not valid/,
        );
        assertError(
          await t.request("GET", "/api/collections", { keys: { accessKey: "SLNOPE", secretKey: "wrong" } }),
          401,
          /not valid/,
        );
        const { accounts } = t.server.services;
        const user = (await accounts.findUser("admin"))!;
        const key = await accounts.issueKey(user.id);
        const keys = { accessKey: key.accessKey, secretKey: key.secretKey };
        assert.equal((await t.request("GET", "/api/collections", { keys })).status, 200);
        await accounts.revokeKey(key.accessKey);
        assertError(await t.request("GET", "/api/collections", { keys }), 401, /revoked/);
      });

      const cases: Array<
        [string, { body?: unknown; raw?: string; headers?: Record<string, string> }, number, RegExp]
      > = [
        ["invalid JSON", { raw: '{"name": "x",' }, 400, /not valid JSON/],
        [
          "JSON sent as text/plain",
          { raw: '{"name": "x8"}', headers: { "content-type": "text/plain; charset=utf-8" } },
          415,
          /sent as "text\/plain"; send it as JSON with Content-Type: application\/json/,
        ],
        ["missing name", { body: { seeds: [] } }, 400, /name is required/],
        ["bad name characters", { body: { name: "Bad Name!" } }, 400, /name has characters outside/],
        ["name too long", { body: { name: "a".repeat(65) } }, 400, /name/],
        [
          "unknown seed type",
          { body: { name: "x1", seeds: [{ type: "Host", name: "a.example" }] } },
          400,
          /unknown type "Host"/,
        ],
        [
          "malformed domain",
          { body: { name: "x2", seeds: [{ type: "Domain", name: "-bad-.example" }] } },
          400,
          /not a valid Domain/,
        ],
        [
          "malformed IP",
          { body: { name: "x3", seeds: [{ type: "IpAddress", name: "300.1.1.1" }] } },
          400,
          /not a valid IpAddress/,
        ],
        [
          "malformed CIDR",
          { body: { name: "x4", seeds: [{ type: "NetBlock", name: "10.0.0.0/33" }] } },
          400,
          /not a valid NetBlock/,
        ],
        ["seeds not an array", { body: { name: "x5", seeds: "example.com" } }, 400, /seeds must be an array/],
        [
          "one good seed and one bad",
          {
            body: {
              name: "x6",
              seeds: [
                { type: "Domain", name: "ok.example" },
                { type: "Domain", name: "" },
              ],
            },
          },
          400,
          /seed 1/,
        ],
        [
          "over-limit body",
          {
            raw: JSON.stringify({
              name: "x7",
              seeds: Array.from({ length: 40000 }, (_, i) => ({ type: "Domain", name: `host-${i}.example` })),
            }),
          },
          413,
          /too large/,
        ],
      ];
      for (const [label, options, status, pattern] of cases) {
        test(label, async () => {
          assertError(await t.request("POST", "/api/collections", options), status, pattern);
        });
      }

      test("none of the rejected collections exists", async () => {
        const names = (await t.request("GET", "/api/collections")).body.result as string[];
        assert.deepEqual(
          names.filter((n) => /^x\d$/.test(n)),
          [],
        );
      });

      test("a different name in the body of add-seeds", async () => {
        await t.request("POST", "/api/collections", { body: { name: "named" } });
        assertError(
          await t.request("POST", "/api/collections/named", { body: { name: "other" } }),
          400,
          /must match/,
        );
      });

      test("details name each bad field", async () => {
        const response = await t.request("POST", "/api/collections", {
          body: {
            name: "x8",
            seeds: [
              { type: "Domain", name: "fine.example" },
              { type: "IpAddress", name: "nope" },
              { type: "Nope", name: "a" },
            ],
          },
        });
        assert.equal(response.status, 400);
        assert.deepEqual(
          response.body.error.details.map((d: { field: string }) => d.field),
          ["seeds.1", "seeds.2"],
        );
      });

      test("unknown routes answer the envelope too", async () => {
        assertError(await t.request("GET", "/api/nothing-here"), 404, /no GET \/api\/nothing-here endpoint/i);
      });
    });

    test("OpenAPI 3.1 document and reference page", async () => {
      const doc = await t.request("GET", "/api/openapi.json", { keys: null });
      assert.equal(doc.status, 200);
      assert.equal(doc.body.openapi, "3.1.0");
      const create = doc.body.paths["/api/collections/"]?.post ?? doc.body.paths["/api/collections"]?.post;
      assert.ok(create, "create collection is documented");
      for (const status of ["200", "400", "401", "403", "409", "413"])
        assert.ok(create.responses[status], `documents ${status}`);
      const page = await fetch(`${t.url}/docs/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<html/i);
    });
  });
}
