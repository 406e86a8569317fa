/**
 * The result cache over real HTTP on SQLite and PostgreSQL: repeated requests answer the same bytes in
 * every format and encoding, a small body kept in memory from its key's second request (a page read once
 * is not kept), a newly finished run and a change of what a list reads at request time
 * (seeds, the vulnerability database, a collection made again under its name) change the answer, ETags
 * answer 304, the size bound evicts, and a removed, truncated or half-written file is never served.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, rmSync, statSync, truncateSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Scope } from "../../src/core/scope.ts";
import { RunConnectionsRepository } from "../../src/store/connections.ts";
import { ResultQueries } from "../../src/store/result-queries.ts";
import { sample } from "../helpers/metrics.ts";
import type { FixtureCollection } from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { apiCollection, rawGet, runIn } from "./helpers.ts";

const HOSTS = 300;
const ENCODINGS = ["identity", "gzip", "br"];

/** Every file under the server's cache folder, with its size. */
function cacheFiles(t: TestServer): Array<{ path: string; size: number }> {
  const root = join(t.config.dataDir, "result-cache");
  const files = [];
  if (!existsSync(root)) return [];
  for (const folder of readdirSync(root))
    for (const name of readdirSync(join(root, folder))) {
      const path = join(root, folder, name);
      files.push({ path, size: statSync(path).size });
    }
  return files;
}

const cacheState = (response: { headers: Record<string, string | string[] | undefined> }) =>
  response.headers["x-cache"];

for (const { dialect, skip } of await dialects()) {
  describe(`result cache on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let acme: FixtureCollection;
    let firstRun: number;

    before(async () => {
      t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600 });
      acme = await apiCollection(t, "acme");
      firstRun = await runIn(t, acme, { hosts: HOSTS });
      await runIn(t, await apiCollection(t, "large"), { hosts: 2000 });
    });
    after(async () => {
      await t?.close();
    });

    test("repeated requests answer the same bytes and headers, in every format and encoding", async () => {
      for (const list of ["hosts", "applications", "issues", "domains", "connections"])
        for (const format of ["json", "csv", "ndjson"])
          for (const encoding of ENCODINGS) {
            const path = `/api/collections/acme/${list}?format=${format}`;
            const headers = { "Accept-Encoding": encoding };
            const first = await rawGet(t, path, headers);
            const kept = await rawGet(t, path, headers);
            const second = await rawGet(t, path, headers);
            assert.equal(first.status, 200);
            assert.equal(cacheState(first), "MISS", `${path} ${encoding}`);
            assert.equal(cacheState(kept), "MISS", `${path} ${encoding}: kept from the second request`);
            assert.deepEqual(kept.body, first.body, `${path} ${encoding}: the same bytes read again`);
            assert.equal(cacheState(second), "HIT", `${path} ${encoding}`);
            assert.deepEqual(second.body, first.body, `${path} ${encoding}: the same bytes`);
            for (const name of [
              "content-type",
              "content-encoding",
              "content-disposition",
              "vary",
              "x-total-count",
            ])
              assert.equal(second.headers[name], first.headers[name], `${path} ${encoding}: ${name}`);
            assert.match(String(second.headers.etag), /^"[A-Za-z0-9_-]+"$/, "a strong ETag");
          }
    });

    test("different filters, pages and formats never answer each other's bytes", async () => {
      const paths = [
        "hosts",
        "hosts?limit=10",
        "hosts?limit=10&offset=10",
        "hosts?offset=10&limit=10",
        "hosts?port=22",
        "hosts?q=10.0.0.1",
        "hosts?scoped=false",
        "hosts?hidden=true",
        "hosts?format=ndjson",
        "hosts?format=csv&limit=10",
        "applications?port=443",
        "applications?product=nginx",
        "applications?limit=5&offset=3",
        "issues?severity=1,2",
        "issues?severity=3",
        "issues?limit=5",
        "recent",
        "netblocks",
        "products",
        "products?limit=2",
        "domains?q=h1",
      ].map((path) => `/api/collections/acme/${path}`);
      const cold = [];
      for (const path of paths) cold.push(await rawGet(t, path, {}));
      for (const path of paths) await rawGet(t, path, {});
      for (const [i, path] of paths.entries()) {
        const warm = await rawGet(t, path, {});
        assert.equal(cacheState(warm), "HIT", path);
        assert.deepEqual(warm.body, cold[i].body, `${path}: its own bytes`);
        assert.equal(warm.headers.link, cold[i].headers.link, `${path}: its own Link`);
        assert.equal(warm.headers["x-total-count"], cold[i].headers["x-total-count"], path);
      }
      assert.equal(new Set(cold.slice(0, 3).map((r) => r.body.toString())).size, 3, "pages differ");
      assert.deepEqual(cold[2].body, cold[3].body, "the order of query parameters does not matter");
    });

    test("a page read once is not kept in memory; read again, it is", async () => {
      const memory = async () =>
        sample(
          (await t.request("GET", "/metrics", { keys: null })).text,
          'sightline_result_cache_bytes{tier="memory"}',
        ) ?? 0;
      const path = "/api/collections/acme/hosts?limit=7&offset=3";
      const before = await memory();
      const once = await rawGet(t, path, {});
      assert.equal(cacheState(once), "MISS");
      assert.equal(await memory(), before, "nothing kept of a page read once");
      const twice = await rawGet(t, path, {});
      assert.equal(cacheState(twice), "MISS");
      assert.equal(await memory(), before + twice.body.length, "the second reading is kept");
      const thrice = await rawGet(t, path, {});
      assert.equal(cacheState(thrice), "HIT");
      assert.deepEqual(thrice.body, once.body);
    });

    test("If-None-Match with the ETag answers 304 without a body; another ETag the body", async () => {
      const path = "/api/collections/acme/issues?limit=20";
      await rawGet(t, path, { "Accept-Encoding": "gzip" });
      await rawGet(t, path, { "Accept-Encoding": "gzip" });
      const cached = await rawGet(t, path, { "Accept-Encoding": "gzip" });
      const etag = String(cached.headers.etag);
      for (const header of [etag, `W/${etag}`, `"other", ${etag}`]) {
        const again = await rawGet(t, path, { "Accept-Encoding": "gzip", "If-None-Match": header });
        assert.equal(again.status, 304, header);
        assert.equal(again.body.length, 0);
        assert.equal(again.headers.etag, etag);
      }
      const other = await rawGet(t, path, { "Accept-Encoding": "gzip", "If-None-Match": '"other"' });
      assert.equal(other.status, 200);
      assert.deepEqual(other.body, cached.body);
      const identity = await rawGet(t, path, {});
      assert.notEqual(identity.headers.etag, etag, "each encoding has its own ETag");
      const fresh = await rawGet(t, path, { "If-None-Match": etag });
      assert.equal(fresh.status, 200, "another encoding's ETag does not match");
      const scrape = (await t.request("GET", "/metrics", { keys: null })).text;
      for (const outcome of ["hit", "miss", "not_modified"])
        assert.ok(
          (sample(scrape, `sightline_result_cache_answers_total{outcome="${outcome}"}`) ?? 0) > 0,
          `${outcome} answers are counted`,
        );
      assert.ok((sample(scrape, 'sightline_result_cache_bytes{tier="memory"}') ?? 0) > 0);
    });

    test("a new finished run changes the answer without a restart; run_id reads stay the same", async () => {
      const latest = "/api/collections/acme/hosts";
      const pinned = `/api/collections/acme/hosts?run_id=${firstRun}`;
      const before = await rawGet(t, latest, {});
      const beforePinned = await rawGet(t, pinned, {});
      await rawGet(t, pinned, {});
      await rawGet(t, latest, {});
      assert.equal(cacheState(await rawGet(t, latest, {})), "HIT");
      const secondRun = await runIn(t, acme, { hosts: HOSTS, present: (host) => host % 3 !== 0 });
      const now = await rawGet(t, latest, {});
      assert.equal(cacheState(now), "MISS");
      assert.notDeepEqual(now.body, before.body);
      assert.ok(Number(now.headers["x-total-count"]) < Number(before.headers["x-total-count"]));
      const pinnedAgain = await rawGet(t, pinned, {});
      assert.equal(cacheState(pinnedAgain), "HIT");
      assert.deepEqual(pinnedAgain.body, beforePinned.body);
      const second = await rawGet(t, `/api/collections/acme/hosts?run_id=${secondRun}`, {});
      assert.deepEqual(second.body, now.body, "the latest run read by its id: the same answer");
    });

    test("adding or deleting seeds changes the connections answer at once", async () => {
      const path = "/api/collections/acme/connections";
      const names = async () => {
        const response = await rawGet(t, path, {});
        return (JSON.parse(response.body.toString()).result as Array<{ name: string }>).map((c) => c.name);
      };
      assert.ok((await names()).includes("example-cdn.net"), "a third party before");
      assert.ok((await names()).includes("example-cdn.net"), "cached");
      const added = await t.request("POST", "/api/collections/acme", {
        body: { seeds: [{ type: "Domain", name: "example-cdn.net" }] },
      });
      assert.equal(added.status, 200, added.text);
      assert.ok(!(await names()).includes("example-cdn.net"), "a seed is not a third party");
      const deleted = await t.request("DELETE", "/api/collections/acme/seeds");
      assert.equal(deleted.status, 200, deleted.text);
      const after = await rawGet(t, path, {});
      assert.equal(cacheState(after), "MISS", "deleting seeds is a change too");
    });

    test("a run's connections, decided at its finish with its own scope, stay what that run saw", async () => {
      const decided = await apiCollection(t, "decided");
      await runIn(t, decided, { hosts: 8 });
      const { store, collections } = t.server.services;
      const run = (await new ResultQueries(store.db).run({ id: decided.collectionId, name: "decided" }))!;
      const scope = new Scope(await collections.seeds(decided.collectionId), { scanAllow: [], scanDeny: [] });
      // As the discovery engine's finish does (src/discovery/engine.ts).
      await new RunConnectionsRepository(store.db).decide(run, (host) => scope.coversName(host));
      const names = async (query = "") => {
        const response = await rawGet(t, `/api/collections/decided/connections${query}`, {});
        assert.equal(response.status, 200);
        return (JSON.parse(response.body.toString()).result as Array<{ name: string }>).map((c) => c.name);
      };
      assert.ok((await names()).includes("example-cdn.net"));
      const added = await t.request("POST", "/api/collections/decided", {
        body: { seeds: [{ type: "Domain", name: "example-cdn.net" }] },
      });
      assert.equal(added.status, 200, added.text);
      assert.ok((await names()).includes("example-cdn.net"), "today's seeds do not rewrite what the run saw");
      assert.ok((await names(`?run_id=${run.runId}`)).includes("example-cdn.net"), "the same by run_id");
    });

    test("the vulnerabilities list follows the vulnerability database", async () => {
      const path = "/api/collections/acme/vulnerabilities";
      const before = JSON.parse((await rawGet(t, path, {})).body.toString()).result as Array<{ cve: string }>;
      assert.ok(before.length > 0);
      const gone = before[0].cve;
      await t.server.services.store.db.deleteFrom("vuln_cves").where("cve_id", "=", gone).execute();
      const after = JSON.parse((await rawGet(t, path, {})).body.toString()).result as Array<{ cve: string }>;
      assert.ok(!after.some((item) => item.cve === gone), `${gone} is no longer listed`);
    });

    test("a collection deleted and made again under its name answers its own results", async () => {
      const other = await apiCollection(t, "again");
      await runIn(t, other, { hosts: 20 });
      const path = "/api/collections/again/hosts";
      const old = await rawGet(t, path, {});
      await rawGet(t, path, {});
      assert.equal(cacheState(await rawGet(t, path, {})), "HIT");
      await t.server.services.store.db
        .deleteFrom("collections")
        .where("id", "=", other.collectionId)
        .execute();
      assert.equal((await rawGet(t, path, {})).status, 404);
      const made = await apiCollection(t, "again");
      assert.notEqual(made.collectionId, other.collectionId, "ids are not reused");
      assert.equal(
        (await rawGet(t, path, {})).body.toString(),
        '{"success":true,"message":"success","result":{}}',
      );
      await runIn(t, made, { hosts: 5 });
      const fresh = await rawGet(t, path, {});
      assert.equal(cacheState(fresh), "MISS");
      assert.equal(Object.keys(JSON.parse(fresh.body.toString()).result).length, 5);
      assert.notDeepEqual(fresh.body, old.body);
    });

    test("an aborted first response keeps nothing, and the next request reads the whole answer", async () => {
      const path = "/api/collections/large/applications?format=ndjson";
      await new Promise<void>((resolve) => {
        const request = httpRequest(
          new URL(path, t.url),
          { headers: { SERVICE_ACCESS_KEY: t.admin.accessKey, SERVICE_SECRET_KEY: t.admin.secretKey } },
          (response) => {
            // The client goes away as the first bytes arrive, long before the megabytes are written.
            response.once("data", () => request.destroy());
          },
        );
        request.on("error", () => {});
        request.on("close", () => resolve());
        request.end();
      });
      // Removing the temporary file follows the abort; wait for it (the test's own time limit bounds this).
      while (cacheFiles(t).some((file) => file.path.endsWith(".tmp"))) await sleep(20);
      const next = await rawGet(t, path, {});
      assert.equal(cacheState(next), "MISS", "nothing was kept of the aborted response");
      const again = await rawGet(t, path, {});
      assert.equal(cacheState(again), "HIT");
      assert.deepEqual(again.body, next.body);
      const lines = next.body.toString().trimEnd().split("\n");
      assert.equal(lines.length, Number(next.headers["x-total-count"]), "every item");
      assert.ok(next.body.length > 4_000_000, `a body of ${next.body.length} bytes`);
    });

    test("a cached answer still asks for a live key and a member of the team, at once", async () => {
      const { accounts } = t.server.services;
      const account = (await accounts.findAccount("default"))!;
      const team = (await accounts.findTeam("default"))!;
      const user = await accounts.createUser(account.id, "reader", team.id);
      const key = await accounts.issueKey(user.id);
      const keys = { accessKey: key.accessKey, secretKey: key.secretKey };
      const path = "/api/collections/acme/hosts?limit=5";
      assert.equal((await t.request("GET", path, { keys })).status, 200);
      assert.equal((await t.request("GET", path, { keys })).status, 200);
      assert.equal((await t.request("GET", path, { keys })).headers.get("x-cache"), "HIT");
      const wrong = await t.request("GET", path, { keys: { ...keys, secretKey: "not-the-secret" } });
      assert.equal(wrong.status, 401, "a remembered key still checks its secret");
      await accounts.removeMember(team.id, user.id);
      assert.equal((await t.request("GET", path, { keys })).status, 404, "no longer a member");
      await accounts.addMember(team.id, user.id);
      assert.equal((await t.request("GET", path, { keys })).status, 200);
      await accounts.revokeKey(key.accessKey);
      assert.equal((await t.request("GET", path, { keys })).status, 401, "revoked");
    });

    test("concurrent first requests of one key all answer whole bodies, and one is kept", async () => {
      const path = "/api/collections/acme/applications?format=ndjson";
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => rawGet(t, path, { "Accept-Encoding": "br" })),
      );
      for (const answer of answers) assert.deepEqual(answer.body, answers[0].body);
      const kept = await rawGet(t, path, { "Accept-Encoding": "br" });
      assert.equal(cacheState(kept), "HIT");
      assert.deepEqual(kept.body, answers[0].body);
      assert.ok(!cacheFiles(t).some((file) => file.path.endsWith(".tmp")), "no temporary file left");
    });
  });

  describe(`result cache files on ${dialect}`, { skip }, () => {
    let t: TestServer;

    before(async () => {
      // Everything on disk, and room for about two unpaged host lists.
      t = await startTestServer(dialect, {
        schedulerIntervalSeconds: 3600,
        resultCacheMemoryBytes: 0,
        resultCacheBytes: 400_000,
      });
      await runIn(t, await apiCollection(t, "acme"), { hosts: 600 });
    });
    after(async () => {
      await t?.close();
    });

    test("the size bound evicts the least recently used", async () => {
      const paths = ["hosts", "hosts?format=ndjson", "hosts?format=csv"].map(
        (p) => `/api/collections/acme/${p}`,
      );
      const sizes = [];
      for (const path of paths) sizes.push((await rawGet(t, path, {})).body.length);
      assert.ok(sizes[0] > 150_000 && sizes[0] < 400_000, `a host list of ${sizes[0]} bytes`);
      const held = cacheFiles(t).reduce((sum, file) => sum + file.size, 0);
      assert.ok(held <= 400_000, `${held} bytes on disk`);
      assert.equal(cacheState(await rawGet(t, paths[2], {})), "HIT", "the newest is kept");
      assert.equal(cacheState(await rawGet(t, paths[0], {})), "MISS", "the oldest was evicted");
      const tooLarge = await rawGet(t, "/api/collections/acme/applications", {});
      assert.ok(tooLarge.body.length > 400_000);
      assert.equal(
        cacheState(await rawGet(t, "/api/collections/acme/applications", {})),
        "MISS",
        "larger than the bound: not kept",
      );
      while (cacheFiles(t).some((file) => file.path.endsWith(".tmp"))) await sleep(20);
      assert.ok(cacheFiles(t).reduce((sum, file) => sum + file.size, 0) <= 400_000);
    });

    test("a file answered by the framework has the first answer's headers, the client's request id, and is counted", async () => {
      const path = "/api/collections/acme/hosts?limit=400&offset=10";
      const route = 'route="/api/collections/:collection_name/hosts",status="200"';
      const counted = async () =>
        sample(
          (await t.request("GET", "/metrics", { keys: null })).text,
          `sightline_http_requests_total{method="GET",${route}}`,
        ) ?? 0;
      const first = await rawGet(t, path, {});
      assert.equal(cacheState(first), "MISS");
      const before = await counted();
      const second = await rawGet(t, path, { "X-Request-Id": "file-hit-7" });
      assert.equal(cacheState(second), "HIT");
      assert.deepEqual(second.body, first.body);
      assert.equal(second.headers["x-request-id"], "file-hit-7");
      assert.equal(second.headers["content-length"], String(first.body.length));
      for (const name of ["content-type", "vary", "x-total-count", "link"])
        assert.equal(second.headers[name], first.headers[name], name);
      assert.match(String(second.headers.etag), /^"[A-Za-z0-9_-]+"$/);
      assert.equal(await counted(), before + 1, "counted once in the request metrics");
    });

    test("HEAD of a URL kept in a file answers its headers and no body", async () => {
      const path = "/api/collections/acme/hosts?limit=300";
      const first = await rawGet(t, path, {});
      const head = await new Promise<{ status: number; headers: Record<string, unknown>; bytes: number }>(
        (resolve, reject) => {
          const request = httpRequest(
            new URL(path, t.url),
            {
              method: "HEAD",
              headers: { SERVICE_ACCESS_KEY: t.admin.accessKey, SERVICE_SECRET_KEY: t.admin.secretKey },
            },
            (response) => {
              let bytes = 0;
              response.on("data", (part: Buffer) => {
                bytes += part.length;
              });
              response.on("end", () =>
                resolve({ status: response.statusCode ?? 0, headers: response.headers, bytes }),
              );
            },
          );
          request.on("error", reject);
          request.end();
        },
      );
      assert.equal(head.status, 200);
      assert.equal(head.headers["x-cache"], "HIT");
      assert.equal(head.headers["content-length"], String(first.body.length));
      assert.equal(head.bytes, 0);
      // The kept-alive connection is not left with body bytes in it: the next answer is whole.
      assert.deepEqual((await rawGet(t, path, {})).body, first.body);
    });

    test("a removed or truncated file is read again from the database", async () => {
      const path = "/api/collections/acme/issues";
      const first = await rawGet(t, path, {});
      assert.equal(cacheState(await rawGet(t, path, {})), "HIT");
      for (const file of cacheFiles(t)) rmSync(file.path);
      const removed = await rawGet(t, path, {});
      assert.equal(cacheState(removed), "MISS");
      assert.deepEqual(removed.body, first.body);
      assert.equal(cacheState(await rawGet(t, path, {})), "HIT");
      for (const file of cacheFiles(t)) truncateSync(file.path, Math.floor(file.size / 2));
      const truncated = await rawGet(t, path, {});
      assert.equal(cacheState(truncated), "MISS");
      assert.deepEqual(truncated.body, first.body);
    });
  });

  describe(`result cache turned off on ${dialect}`, { skip }, () => {
    test("SIGHTLINE_RESULT_CACHE_BYTES=0 reads every answer and keeps no file", async () => {
      const t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600, resultCacheBytes: 0 });
      try {
        await runIn(t, await apiCollection(t, "acme"), { hosts: 20 });
        const first = await rawGet(t, "/api/collections/acme/hosts", {});
        const second = await rawGet(t, "/api/collections/acme/hosts", {});
        assert.equal(cacheState(second), undefined);
        assert.deepEqual(second.body, first.body);
        assert.deepEqual(cacheFiles(t), []);
        // The ETag is made from what the answer is a function of, not from kept bytes: with the cache off a
        // repeat is still answered 304, decided before any row is read — rows taken away behind the
        // server's back change the answer of a plain GET, not the 304.
        assert.match(String(first.headers.etag), /^"[A-Za-z0-9_-]+"$/, "a strong ETag on the first answer");
        assert.equal(second.headers.etag, first.headers.etag);
        const db = t.server.services.store.db;
        await db.deleteFrom("entity_products").execute();
        await db.deleteFrom("entity_vulns").execute();
        await db.deleteFrom("entities").execute();
        const notModified = await rawGet(t, "/api/collections/acme/hosts", {
          "If-None-Match": String(first.headers.etag),
        });
        assert.equal(notModified.status, 304);
        assert.equal(notModified.body.length, 0);
        assert.equal(notModified.headers.etag, first.headers.etag);
        const read = await rawGet(t, "/api/collections/acme/hosts", {});
        assert.equal(read.status, 200);
        assert.deepEqual(JSON.parse(read.body.toString()).result, {}, "a plain GET reads the rows");
      } finally {
        await t.close();
      }
    });
  });
}
