/**
 * The database going away and coming back: a TCP proxy the test controls sits between a running server and
 * PostgreSQL. Cut, /healthz answers 503 `degraded` (the reason only in the server log, once per outage:
 * the endpoint is public and polled) and API requests answer 503 with a sentence; restored, the service recovers by itself, without a
 * restart.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type RunningServer, startServer } from "../../src/app/server.ts";
import { buildInfo } from "../../src/core/build-info.ts";
import { openStore } from "../../src/store/database.ts";
import { migrateToLatest } from "../../src/store/migrate.ts";
import { BOOTSTRAP_KEYS, testServerConfig } from "../helpers/server.ts";
import { POSTGRES_URL, serviceSkipReason } from "../helpers/services.ts";
import { createTestStore, type TestStore } from "../helpers/stores.ts";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.ts";
import { assertErrorEnvelope } from "./surface.ts";

const skip = await serviceSkipReason("PostgreSQL", POSTGRES_URL);

describe("PostgreSQL unreachable, then back", { skip }, () => {
  let store: TestStore;
  let proxy: TcpProxy;
  let server: RunningServer;
  const logLines: string[] = [];

  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        SERVICE_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
        SERVICE_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
        ...(body ? { "content-type": "application/json" } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, body: JSON.parse(text) };
  };

  before(async () => {
    store = await createTestStore("postgres");
    const direct = openStore(store.config);
    await migrateToLatest(direct);
    await direct.close();
    proxy = await startTcpProxy(store.config.databaseUrl);
    const proxied = new URL(store.config.databaseUrl); // keeps the user name the proxy's own URL leaves out
    proxied.port = String(proxy.port);
    server = await startServer(testServerConfig(store, { databaseUrl: proxied.toString() }), {
      logger: { level: "info", stream: { write: (line: string) => void logLines.push(line) } },
    });
  });
  after(async () => {
    await server?.close();
    await proxy?.close();
    await store?.drop();
  });

  test("healthy through the proxy", async () => {
    assert.equal((await call("GET", "/healthz")).status, 200);
    assert.equal((await call("POST", "/api/collections", { name: "before" })).status, 200);
  });

  test("cut: /healthz is 503 degraded, the reason only in the log; the API answers 503 with a sentence", async () => {
    await proxy.cut();
    // This check arrives while the pooled connections are dying: a client checked out at that moment once
    // emitted an unhandled 'error' and took the whole process down.
    const health = await call("GET", "/healthz");
    assert.equal(health.status, 503);
    const { version, commit } = buildInfo();
    assert.deepEqual(health.body, {
      status: "degraded",
      checks: { database: { ok: false } },
      version,
      commit,
    });
    // The public answer names no host, port, database or driver error; the operator's log does.
    const database = new URL(store.config.databaseUrl).pathname.slice(1);
    for (const internal of [String(proxy.port), database, "unreachable", "ECONNR", "postgres"])
      assert.ok(!health.text.includes(internal), `/healthz does not show ${internal}`);
    const logged = logLines.map((line) => JSON.parse(line)).find((line) => line.check === "database");
    assert.ok(logged, "the failed check is logged");
    assert.equal(logged.msg, "health check database failed");
    assert.match(logged.detail, /^database unreachable: \S/);
    // Polled on through the outage, the failure is not logged again at warn level.
    for (let i = 0; i < 3; i++) assert.equal((await call("GET", "/healthz")).status, 503);
    const warnings = logLines.map((line) => JSON.parse(line)).filter((line) => line.check === "database");
    assert.equal(warnings.length, 1, "one warning for the outage, not one per poll");

    for (const [method, path, body] of [
      ["GET", "/api/collections", undefined],
      ["GET", "/api/collections/before", undefined],
      ["POST", "/api/collections", { name: "during", seeds: [{ type: "Domain", name: "during.example" }] }],
    ] as const) {
      const response = await call(method, path, body);
      assert.equal(response.status, 503, `${method} ${path}: ${response.text}`);
      assertErrorEnvelope(response, `${method} ${path}`);
      assert.equal(response.body.error.code, "service_unavailable");
      assert.match(response.body.message, /cannot reach its database/);
      assert.ok(Number(response.headers.get("retry-after")) > 0, "Retry-After tells clients when to retry");
    }
    // Metrics do not need the database.
    assert.equal((await fetch(`${server.url}/metrics`)).status, 200);
  });

  test("restored: the service recovers by itself", async () => {
    await proxy.restore();
    // Wait for recovery without a deadline of our own: the test runner's timeout bounds it.
    let health = await call("GET", "/healthz");
    while (health.status !== 200) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      health = await call("GET", "/healthz");
    }
    assert.equal(health.body.status, "ok");
    const recovered = logLines.map((line) => JSON.parse(line)).filter((line) => line.check === "database");
    assert.deepEqual(
      recovered.map((line) => line.msg),
      ["health check database failed", "health check database recovered"],
    );
    const list = await call("GET", "/api/collections");
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.result, ["before"], "the request refused during the outage wrote nothing");
    assert.equal((await call("POST", "/api/collections", { name: "after" })).status, 200);
  });
});
