/**
 * What a new user ran into (issue 18), over real HTTP: unknown body fields, names without a letter or
 * digit, runs of empty collections, deleting a collection or one seed, and a server started with Redis
 * but without a shared database.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { spawnSightline } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { waitForRun } from "../runs/helpers.ts";

describe("bodies, names, empty runs and deletion", () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
  });
  after(async () => {
    await t?.close();
  });

  test("an unknown field, at any level of a body, is a 400 naming it, and nothing is saved", async () => {
    const typo = await t.request("POST", "/api/collections", {
      body: { name: "typo", scanrate: "on_demand", seeds: [{ type: "Domain", name: "a.example" }] },
    });
    assert.equal(typo.status, 400, typo.text);
    assert.equal(typo.body.message, "The request body is invalid: scanrate is not a known field.");
    assert.deepEqual(typo.body.error.details, [{ field: "scanrate", message: "is not a known field" }]);
    assert.equal((await t.request("GET", "/api/collections/typo")).status, 404, "nothing was created");

    const nested = await t.request("POST", "/api/collections", {
      body: { name: "typo", seeds: [{ type: "Domain", name: "a.example", note: "x" }] },
    });
    assert.equal(nested.status, 400, nested.text);
    assert.match(nested.body.message, /seeds\.0\.note is not a known field/);

    assert.equal(
      (await t.request("POST", "/api/collections", { body: { name: "typo", scan_rate: "on_demand" } }))
        .status,
      200,
    );
    const adding = await t.request("POST", "/api/collections/typo", {
      body: { seeds: [{ type: "Domain", name: "b.example" }], teamid: 1 },
    });
    assert.equal(adding.status, 400, adding.text);
    assert.match(adding.body.message, /teamid is not a known field/);
    const webhook = await t.request("POST", "/api/collections/typo/webhooks", {
      body: { url: "https://hooks.example/x", event: ["run.finished"] },
    });
    assert.equal(webhook.status, 400, webhook.text);
    assert.match(webhook.body.message, /event is not a known field/);
  });

  test("a collection name must contain a letter or digit", async () => {
    for (const name of [".", "..", "...", "-", "_.-"]) {
      const response = await t.request("POST", "/api/collections", { body: { name } });
      assert.equal(response.status, 400, `${name}: ${response.text}`);
      assert.match(response.body.message, /name must contain a letter or a digit/);
      assert.deepEqual(response.body.error.details, [
        { field: "name", message: "must contain a letter or a digit" },
      ]);
    }
    assert.equal((await t.request("POST", "/api/collections", { body: { name: "a.b-c_1" } })).status, 200);
  });

  test("a run of a collection without seeds is refused with 409 and a sentence", async () => {
    assert.equal((await t.request("POST", "/api/collections", { body: { name: "empty" } })).status, 200);
    const refused = await t.request("POST", "/api/collections/empty/schedule");
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.error.code, "conflict");
    assert.match(refused.body.message, /^Collection "empty" has no seeds, so a run would find nothing/);
    const runs = await t.request("GET", "/api/collections/empty/runs");
    assert.deepEqual(runs.body.result, [], "no run was made");
  });

  test("one seed is deleted by type and value; values with slashes are percent-encoded", async () => {
    const created = await t.request("POST", "/api/collections", {
      body: {
        name: "seeds",
        scan_rate: "on_demand",
        seeds: [
          { type: "Domain", name: "keep.example" },
          { type: "Domain", name: "drop.example" },
          { type: "Uri", name: "https://app.example/login" },
          { type: "NetBlock", name: "192.0.2.0/24" },
        ],
      },
    });
    assert.equal(created.status, 200, created.text);
    const dropped = await t.request("DELETE", "/api/collections/seeds/seeds/Domain/DROP.example.");
    assert.equal(dropped.status, 200, dropped.text);
    assert.deepEqual(dropped.body.result, { name: "seeds", seeds_deleted: 1, seed_count: 3 });
    const uri = encodeURIComponent("https://app.example/login");
    assert.equal((await t.request("DELETE", `/api/collections/seeds/seeds/Uri/${uri}`)).status, 200);
    const block = await t.request("DELETE", `/api/collections/seeds/seeds/NetBlock/192.0.2.0%2F24`);
    assert.equal(block.status, 200, block.text);
    const left = await t.request("GET", "/api/collections/seeds");
    assert.deepEqual(left.body.result.seeds, [{ type: "Domain", name: "keep.example" }]);

    const missing = await t.request("DELETE", "/api/collections/seeds/seeds/Domain/drop.example");
    assert.equal(missing.status, 404, missing.text);
    assert.equal(
      missing.body.message,
      'Collection "seeds" has no Domain seed "drop.example"; list its seeds with GET /api/collections/seeds.',
    );
    const bad = await t.request("DELETE", "/api/collections/seeds/seeds/Host/keep.example");
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.body.message, /^The seed to delete has unknown type "Host"/);
  });

  test("deleting a collection takes its runs and results with it, and is audited", async () => {
    const created = await t.request("POST", "/api/collections", {
      body: { name: "doomed", scan_rate: "on_demand", seeds: [{ type: "Domain", name: "doomed.invalid" }] },
    });
    assert.equal(created.status, 200, created.text);
    const run = await t.request("POST", "/api/collections/doomed/schedule");
    const id = Number(run.body.result.id);
    assert.equal((await waitForRun(t, "doomed", id, "finished", "failed")).status, "finished");
    const domains = await t.request("GET", "/api/collections/doomed/domains");
    assert.ok(domains.body.result.length > 0, "the run left results");

    const deleted = await t.request("DELETE", "/api/collections/doomed");
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body.result, { name: "doomed", runs_deleted: 1, seeds_deleted: 1 });
    assert.equal((await t.request("GET", "/api/collections/doomed")).status, 404);
    assert.equal((await t.request("GET", "/api/collections/doomed/domains")).status, 404);
    assert.ok(!(await t.request("GET", "/api/collections")).body.result.includes("doomed"));
    const db = t.server.services.store.db;
    assert.equal((await db.selectFrom("runs").select("id").where("id", "=", id).execute()).length, 0);
    assert.equal((await db.selectFrom("entities").select("id").execute()).length, 0, "results are gone");
    const audit = await db
      .selectFrom("audit_log")
      .selectAll()
      .where("action", "=", "collection.delete")
      .execute();
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.target, "collection:doomed");

    const again = await t.request("DELETE", "/api/collections/doomed");
    assert.equal(again.status, 404);
    // The name is free again.
    assert.equal((await t.request("POST", "/api/collections", { body: { name: "doomed" } })).status, 200);
  });

  test("a collection with a run in progress is deleted after its run is cancelled", async () => {
    await t.request("POST", "/api/collections", {
      body: { name: "busy", scan_rate: "on_demand", seeds: [{ type: "NetBlock", name: "192.0.2.0/22" }] },
    });
    const id = Number((await t.request("POST", "/api/collections/busy/schedule")).body.result.id);
    await waitForRun(t, "busy", id, "started", "finished");
    const deleted = await t.request("DELETE", "/api/collections/busy");
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal(deleted.body.result.runs_deleted, 1);
  });
});

test("serve refuses REDIS_URL without DATABASE_URL, in the words sightline worker uses", async () => {
  const dir = mkdtempSync(join(tmpdir(), "sightline-redis-only-"));
  const server = spawnSightline(["serve"], {
    REDIS_URL: "redis://127.0.0.1:6379",
    PORT: "0",
    HOST: "127.123.0.1",
    SIGHTLINE_DATA_DIR: dir,
  });
  // Before the check, such a server started and waited for workers forever.
  const code = await Promise.race([server.exited, sleep(20_000).then(() => server.stop(1000))]);
  rmSync(dir, { recursive: true, force: true });
  assert.equal(code, 2, server.output());
  assert.match(
    server.output(),
    /^sightline: REDIS_URL hands runs to sightline worker processes, and a worker must share the server's database: set DATABASE_URL to its PostgreSQL/m,
  );
});

describe("seed hints and severity words", () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
  });
  after(async () => {
    await t?.close();
  });

  test("300.1.1.1 is told about its octet over 255, *.example.com to drop the *.", async () => {
    const octet = await t.request("POST", "/api/collections", {
      body: { name: "hints", seeds: [{ type: "IpAddress", name: "300.1.1.1" }] },
    });
    assert.equal(octet.status, 400, octet.text);
    assert.match(
      octet.body.message,
      /"300\.1\.1\.1" is not a valid IpAddress: it looks like an IPv4 address, but 300 is over 255/,
    );
    const wildcard = await t.request("POST", "/api/collections", {
      body: { name: "hints", seeds: [{ type: "Domain", name: "*.example.com" }] },
    });
    assert.equal(wildcard.status, 400, wildcard.text);
    assert.match(wildcard.body.message, /drop the "\*\." and seed example\.com/);
  });

  test("?severity=critical is accepted as well as 1", async () => {
    assert.equal((await t.request("POST", "/api/collections", { body: { name: "sev" } })).status, 200);
    for (const query of ["critical", "1", "critical,high", "1,high"]) {
      const response = await t.request("GET", `/api/collections/sev/issues?severity=${query}`);
      assert.equal(response.status, 200, `${query}: ${response.text}`);
    }
    const bad = await t.request("GET", "/api/collections/sev/issues?severity=urgent");
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /severities 1–5 or their words/);
  });
});
