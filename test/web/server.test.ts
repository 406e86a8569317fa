/** The API process serves the built dashboard at / and its own paths, and nothing else of the disk. */

import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { buildApp } from "../../src/api/app.ts";
import { WEB_ROOT } from "../../src/api/web.ts";
import { MetricsRegistry } from "../../src/app/metrics.ts";
import { loadConfig } from "../../src/core/config.ts";
import { openServices } from "../../src/store/services.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { createTestStore } from "../helpers/stores.ts";
import { ensureDashboardBuilt } from "./browser.ts";

describe("dashboard files from the API process", () => {
  let t: TestServer;
  before(async () => {
    await ensureDashboardBuilt();
    t = await startTestServer("sqlite");
  });
  after(async () => t?.close());

  const get = (path: string, init: RequestInit = {}) => fetch(`${t.url}${path}`, init);
  /** The JSON envelope of an answer. */
  const envelope = async (response: Response) =>
    (await response.json()) as { success: boolean; message: string; error: { code: string } };

  test("/ and the dashboard's own paths answer index.html, uncached, with a strict CSP", async () => {
    for (const path of [
      "/",
      "/collections",
      "/collections/acme/issues",
      "/collections/a%20b/runs?created=3",
    ]) {
      const response = await get(path);
      assert.equal(response.status, 200, path);
      assert.match(response.headers.get("content-type") ?? "", /^text\/html/);
      assert.equal(response.headers.get("cache-control"), "no-cache");
      assert.match(response.headers.get("content-security-policy") ?? "", /script-src 'self';/);
      assert.equal(response.headers.get("x-content-type-options"), "nosniff");
      assert.match(await response.text(), /<div id="app"><\/div>/);
    }
    const head = await get("/", { method: "HEAD" });
    assert.equal(head.status, 200);
  });

  test("hashed bundles are served with a long cache; other files without", async () => {
    const bundle = readdirSync(join(WEB_ROOT, "assets")).find((name) => name.endsWith(".js"))!;
    const js = await get(`/assets/${bundle}`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get("content-type") ?? "", /javascript/);
    assert.match(js.headers.get("cache-control") ?? "", /max-age=31536000.*immutable/);
    const icon = await get("/favicon.svg");
    assert.equal(icon.status, 200);
    assert.match(icon.headers.get("content-type") ?? "", /image\/svg\+xml/);
    assert.doesNotMatch(icon.headers.get("cache-control") ?? "", /immutable/);
  });

  test("the API, its reference and the health check keep their own answers", async () => {
    for (const path of ["/api/nothing-here", "/%61pi/collections/x/nothing", "/api/collections/x/runs//"]) {
      const anonymous = await get(path);
      assert.equal(anonymous.status, 401, `${path} asks for keys before saying anything else`);
      assert.equal((await envelope(anonymous)).error.code, "unauthorized");
    }
    const missing = await get("/api/nothing-here", {
      headers: { SERVICE_ACCESS_KEY: t.admin.accessKey, SERVICE_SECRET_KEY: t.admin.secretKey },
    });
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), {
      success: false,
      message: "There is no GET /api/nothing-here endpoint.",
      result: null,
      error: { code: "not_found" },
    });
    assert.equal((await get("/api/collections")).status, 401, "the API still wants its keys");
    const docs = await get("/docs/");
    assert.equal(docs.status, 200);
    assert.doesNotMatch(await docs.text(), /<div id="app">/);
    assert.equal(((await (await get("/healthz")).json()) as { status: string }).status, "ok");
    for (const path of ["/healthz/x", "/%68ealthz/x", "/metrics/x"]) {
      const response = await get(path);
      assert.equal(response.status, 404, path);
      assert.equal((await envelope(response)).error.code, "not_found", path);
    }
    const post = await get("/", { method: "POST" });
    assert.equal(post.status, 404);
    assert.match((await envelope(post)).message, /There is no POST \/ endpoint/);
  });

  test("paths that climb out of the build folder get the app, never a file from the disk", async () => {
    for (const path of [
      "/..%2fpackage.json",
      "/%2e%2e/%2e%2e/package.json",
      "/assets/..%2f..%2f..%2fpackage.json",
      "/%00",
    ]) {
      const response = await get(path);
      const text = await response.text();
      assert.doesNotMatch(text, /"name": "sightline"/, path);
      assert.equal(response.status, 200, path);
      assert.match(text, /<div id="app">/, path);
    }
  });
});

describe("a server whose dashboard was not built", () => {
  test("says so at / in a sentence, and the API works regardless", async () => {
    const store = await createTestStore("sqlite");
    const empty = mkdtempSync(join(tmpdir(), "sightline-web-"));
    const services = await openServices(loadConfig({}, { ...store.config, logLevel: "silent" }));
    const app = await buildApp(services, { webRoot: empty, metrics: new MetricsRegistry() });
    try {
      for (const url of ["/", "/collections/acme"]) {
        const response = await app.inject({ method: "GET", url });
        assert.equal(response.statusCode, 503);
        assert.match(response.headers["content-type"] as string, /^text\/html/);
        assert.match(response.body, /The dashboard has not been built/);
        assert.match(response.body, /npm run build:web/);
      }
      assert.equal((await app.inject({ method: "GET", url: "/api/collections" })).statusCode, 401);
    } finally {
      await app.close();
      await services.store.close();
      await store.drop();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
