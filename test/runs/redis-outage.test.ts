/** Redis going away for a while in distributed mode: the API stays up, says so, and loses no run. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type RunningWorker, startWorker } from "../../src/app/worker.ts";
import { buildInfo } from "../../src/core/build-info.ts";
import { loadConfig } from "../../src/core/config.ts";
import { startTestServer } from "../helpers/server.ts";
import { POSTGRES_URL, REDIS_URL, serviceSkipReason } from "../helpers/services.ts";
import { startTcpProxy } from "../helpers/tcp-proxy.ts";
import { TestWork } from "./fixtures/test-work.ts";
import {
  createCollection,
  dropRedisPrefix,
  force,
  getRun,
  testPrefix,
  waitFor,
  waitForRun,
} from "./helpers.ts";

const skip =
  (await serviceSkipReason("PostgreSQL", POSTGRES_URL)) ?? (await serviceSkipReason("Redis", REDIS_URL));

describe("Redis briefly unavailable", { skip }, () => {
  test("a run whose job was lost from Redis is queued again by the server's scheduler", async () => {
    const prefix = testPrefix();
    const t = await startTestServer("postgres", {
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      schedulerIntervalSeconds: 3600,
    });
    let worker: RunningWorker | undefined;
    try {
      await createCollection(t, "lost", ["lost.example"]);
      const id = await force(t, "lost");
      await waitFor(async () => {
        const { Redis } = await import("ioredis");
        const redis = new Redis(REDIS_URL);
        const keys = await redis.keys(`${prefix}:*`);
        redis.disconnect();
        return keys.length > 0;
      }, "the start job to reach Redis");
      await dropRedisPrefix(REDIS_URL, prefix);
      // Quiet for longer than the server waits before queueing again (60 s at least).
      await t.server.services.store.db
        .updateTable("runs")
        .set({ updated_at: new Date(Date.now() - 120_000).toISOString() })
        .where("id", "=", id)
        .execute();
      await t.server.runs.scheduler!.tick();
      worker = await startWorker(loadConfig({}, { ...t.config, logLevel: "silent" }), {
        runWork: (services) => new TestWork(services),
      });
      const run = await waitForRun(t, "lost", id, "finished", "failed");
      assert.equal(run.status, "finished", run.error);
    } finally {
      await worker?.close();
      await t.close();
      await dropRedisPrefix(REDIS_URL, prefix);
    }
  });

  test("the API stays up, /healthz answers 503 degraded, and a run forced meanwhile runs once Redis is back", async () => {
    const proxy = await startTcpProxy(REDIS_URL);
    const prefix = testPrefix();
    const t = await startTestServer("postgres", {
      redisUrl: proxy.url,
      redisPrefix: prefix,
      schedulerIntervalSeconds: 3600,
    });
    let worker: RunningWorker | undefined;
    try {
      const healthz = () => t.request("GET", "/healthz", { keys: null });
      const healthy = await healthz();
      assert.equal(healthy.status, 200, healthy.text);
      assert.equal(healthy.body.checks.redis.ok, true);
      await createCollection(t, "outage", ["outage.example"]);

      await proxy.cut();
      const degraded = await waitFor(async () => {
        const response = await healthz();
        return response.status === 503 ? response : undefined;
      }, "/healthz to notice Redis is gone");
      // Public: which dependency is down, never where it lives or what the driver said.
      assert.deepEqual(degraded.body, {
        status: "degraded",
        checks: { database: { ok: true }, redis: { ok: false } },
        ...buildInfo(),
      });
      assert.ok(!degraded.text.includes(String(proxy.port)), "the Redis address is not shown");

      assert.equal((await t.request("GET", "/api/collections")).status, 200, "the API answers");
      const id = await force(t, "outage");
      assert.equal((await getRun(t, "outage", id)).status, "queued");

      await proxy.restore();
      await waitFor(async () => (await healthz()).status === 200, "/healthz to recover");
      worker = await startWorker(loadConfig({}, { ...t.config, redisUrl: REDIS_URL, logLevel: "silent" }), {
        runWork: (services) => new TestWork(services),
      });
      const run = await waitForRun(t, "outage", id, "finished", "failed");
      assert.equal(run.status, "finished", run.error);
      assert.equal(run.tasks_done, 1);
    } finally {
      await worker?.close();
      await t.close();
      await proxy.close();
      await dropRedisPrefix(REDIS_URL, prefix);
    }
  });
});
