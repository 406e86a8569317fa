/**
 * Repeat answers written before the framework (src/api/cached-answers.ts) over real HTTP on SQLite and
 * PostgreSQL: from the third request of a URL on, the answer comes from there, with the bytes and
 * headers Fastify answered (memory and file tier, 304, Link, the client's request id), counted in
 * /metrics; and whatever it cannot vouch for — a new run, seeds changed, a key that changed, a request
 * with a body — goes to Fastify, which answers as before. A client that goes away mid-body costs nothing.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { sample } from "../helpers/metrics.ts";
import type { FixtureCollection } from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { apiCollection, rawGet, runIn } from "./helpers.ts";

/** How many files this process has open (Linux), or undefined. */
const openDescriptors = () => (existsSync("/proc/self/fd") ? readdirSync("/proc/self/fd").length : undefined);

/** Headers that differ between two answers of the same thing. */
const PER_ANSWER = new Set(["date", "x-request-id", "keep-alive", "connection"]);

/** The headers of an answer without those that differ from one answer of the same thing to the next. */
const lasting = (headers: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !PER_ANSWER.has(name)));

for (const { dialect, skip } of await dialects()) {
  describe(`cached answers before the framework on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let acme: FixtureCollection;

    /** How many answers were written before the framework so far. */
    const direct = async () =>
      sample(
        (await t.request("GET", "/metrics", { keys: null })).text,
        "sightline_result_cache_direct_answers_total",
      ) ?? 0;

    /**
     * A GET answered before the framework. A key is remembered for PRINCIPAL_REUSE_MS from when it was
     * read, which a slow step of the test may outlast: then the framework answers and reads the key
     * again, and the next try is answered early.
     */
    const early = async (path: string, headers: Record<string, string> = {}) => {
      for (let attempt = 0; attempt < 3; attempt++) {
        const before = await direct();
        const answer = await rawGet(t, path, headers);
        if ((await direct()) > before) return answer;
      }
      assert.fail(`${path} was never answered before the framework`);
    };

    before(async () => {
      t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600 });
      acme = await apiCollection(t, "acme");
      await runIn(t, acme, { hosts: 300 });
      await runIn(t, await apiCollection(t, "large"), { hosts: 2000 });
    });
    after(async () => {
      await t?.close();
    });

    test("a URL's third request is answered there with Fastify's bytes and headers", async () => {
      for (const [path, encoding] of [
        ["/api/collections/acme/hosts?limit=10&offset=20", "identity"],
        ["/api/collections/acme/issues?format=csv", "gzip"],
        // Several megabytes: kept in a file, written in reused chunks.
        ["/api/collections/large/applications", "identity"],
      ]) {
        const headers = { "Accept-Encoding": encoding };
        const miss = await rawGet(t, path, headers);
        const framework = await rawGet(t, path, headers);
        const answer = await early(path, headers);
        assert.equal(answer.status, 200);
        assert.equal(answer.headers["x-cache"], "HIT");
        assert.deepEqual(answer.body, miss.body, `${path}: the same bytes`);
        assert.deepEqual(lasting(answer.headers), lasting(framework.headers), `${path}: headers`);
      }
      const large = await rawGet(t, "/api/collections/large/applications", {});
      assert.ok(large.body.length > 4_000_000, `a body of ${large.body.length} bytes, from a file`);
    });

    test("the Link, the client's request id, 304 and the metrics hold there too", async () => {
      const path = "/api/collections/acme/hosts?offset=5&limit=7";
      await rawGet(t, path, {});
      const framework = await rawGet(t, path, {});
      const answer = await early(path, { "X-Request-Id": "client-id-42" });
      assert.equal(answer.headers.link, '</api/collections/acme/hosts?offset=12&limit=7>; rel="next"');
      assert.equal(answer.headers.link, framework.headers.link);
      assert.equal(answer.headers["x-request-id"], "client-id-42");
      const notModified = await early(path, { "If-None-Match": String(answer.headers.etag) });
      assert.equal(notModified.status, 304);
      assert.equal(notModified.body.length, 0);
      assert.equal(notModified.headers["content-type"], undefined);
      const scrape = (await t.request("GET", "/metrics", { keys: null })).text;
      const route = 'route="/api/collections/:collection_name/hosts"';
      assert.ok(
        (sample(scrape, `sightline_http_requests_total{method="GET",${route},status="304"}`) ?? 0) >= 1,
      );
    });

    test("a new run, changed seeds or a changed key go to the framework at once", async () => {
      const path = "/api/collections/acme/hosts";
      for (let i = 0; i < 3; i++) await rawGet(t, path, {});
      const before = await rawGet(t, path, {});
      assert.equal(before.headers["x-cache"], "HIT");
      await runIn(t, acme, { hosts: 300, present: (host) => host % 2 === 0 });
      const after = await rawGet(t, path, {});
      assert.equal(after.headers["x-cache"], "MISS", "the new run is read, not the old answer");
      assert.ok(Number(after.headers["x-total-count"]) < Number(before.headers["x-total-count"]));

      const page = "/api/collections/acme/applications?limit=3";
      for (let i = 0; i < 3; i++) await rawGet(t, page, {});
      const added = await t.request("POST", "/api/collections/acme", {
        body: { seeds: [{ type: "Domain", name: "example-cdn.net" }] },
      });
      assert.equal(added.status, 200, added.text);
      assert.equal((await rawGet(t, page, {})).headers["x-cache"], "MISS", "the collection changed");

      const wrong = await t.request("GET", path, {
        keys: { accessKey: t.admin.accessKey, secretKey: "not-the-secret" },
      });
      assert.equal(wrong.status, 401, "a wrong secret is the framework's to refuse");
      const encoded = await rawGet(t, path, { "Content-Encoding": "gzip" });
      assert.equal(encoded.status, 415, "a request that says it has an encoded body too");
    });

    test("a client that goes away in the middle of a file answer costs nothing", async () => {
      const path = "/api/collections/large/applications?format=ndjson";
      const whole = await rawGet(t, path, {});
      await early(path);
      const before = await direct();
      const descriptors = openDescriptors();
      for (let i = 0; i < 5; i++)
        await new Promise<void>((resolve) => {
          const request = httpRequest(
            new URL(path, t.url),
            { headers: { SERVICE_ACCESS_KEY: t.admin.accessKey, SERVICE_SECRET_KEY: t.admin.secretKey } },
            (response) => response.once("data", () => request.destroy()),
          );
          request.on("error", () => {});
          request.on("close", () => resolve());
          request.end();
        });
      assert.ok((await direct()) > before, "aborted answers were written before the framework");
      // The server runs in this process: its cached files' descriptors are closed once their reads end.
      if (descriptors !== undefined) {
        while (openDescriptors()! > descriptors + 1) await sleep(20); // the test's time limit bounds this
        assert.ok(openDescriptors()! <= descriptors + 1, "no descriptor left open");
      }
      const again = await rawGet(t, path, {});
      assert.deepEqual(again.body, whole.body, "the next answer is whole");
    });
  });

  describe(`cached answers behind a trusted proxy on ${dialect}`, { skip }, () => {
    test("the early answer logs the client's address from X-Forwarded-For, as Fastify does", async () => {
      const lines: string[] = [];
      const t = await startTestServer(
        dialect,
        { schedulerIntervalSeconds: 3600, trustProxy: ["127.0.0.1/32"] },
        { logger: { level: "info", stream: { write: (line) => lines.push(line) } } },
      );
      try {
        await runIn(t, await apiCollection(t, "acme"), { hosts: 20 });
        const path = "/api/collections/acme/hosts?limit=5";
        const forwarded = (id: string) => ({ "X-Forwarded-For": "203.0.113.9", "X-Request-Id": id });
        await rawGet(t, path, forwarded("proxied-1"));
        await rawGet(t, path, forwarded("proxied-2"));
        await rawGet(t, path, forwarded("proxied-3"));
        const incoming = (id: string) =>
          lines
            .map((line) => JSON.parse(line))
            .find((entry) => entry.reqId === id && entry.msg === "incoming request");
        assert.equal(incoming("proxied-2")?.req?.remoteAddress, "203.0.113.9", "Fastify's line");
        assert.equal(incoming("proxied-3")?.req?.remoteAddress, "203.0.113.9", "the early answer's line");
      } finally {
        await t.close();
      }
    });
  });
}
