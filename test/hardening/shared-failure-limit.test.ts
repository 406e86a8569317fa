/**
 * Replicas behind a load balancer share one budget of failed key checks: two real servers on one
 * PostgreSQL database and one Redis, whose failures from one client add up to a single limit. Without
 * Redis reachable, each process still limits on its own.
 */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { type RunningServer, startServer } from "../../src/app/server.ts";
import { type Keys, startTestServer, type TestServer } from "../helpers/server.ts";
import { POSTGRES_URL, REDIS_URL, serviceSkipReason } from "../helpers/services.ts";
import { dropRedisPrefix, testPrefix } from "../runs/helpers.ts";
import { assertErrorEnvelope, rawRequest } from "./surface.ts";

const WRONG: Keys = { accessKey: "SLNOSUCHKEY", secretKey: "not-the-secret" };
const LIMIT = 4;

const failFrom = (url: string, address: string) =>
  rawRequest(url, {
    method: "GET",
    path: "/api/collections",
    headers: { SERVICE_ACCESS_KEY: WRONG.accessKey, SERVICE_SECRET_KEY: WRONG.secretKey },
    localAddress: address,
  });

const skip =
  (await serviceSkipReason("PostgreSQL", POSTGRES_URL)) ?? (await serviceSkipReason("Redis", REDIS_URL));

describe("two servers sharing Redis share one failure budget", { skip }, () => {
  let first: TestServer;
  let second: RunningServer;
  let prefix: string;

  before(async () => {
    prefix = testPrefix();
    first = await startTestServer("postgres", {
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      authFailureLimit: LIMIT,
      schedulerIntervalSeconds: 3600,
    });
    second = await startServer(first.config);
  });
  after(async () => {
    await second?.close();
    await first?.close();
    if (prefix) await dropRedisPrefix(REDIS_URL, prefix);
  });

  test("failures on either server count against the client's one limit", async () => {
    const servers = [first.url, second.url];
    const client = "127.0.0.6";
    for (let i = 0; i < LIMIT; i++) {
      const response = await failFrom(servers[i % 2], client);
      assert.equal(response.status, 401, `failure ${i + 1} (on server ${(i % 2) + 1}) is within the budget`);
    }
    // Each server has seen only LIMIT / 2 failures: a per-process count would still answer 401 here.
    for (const url of servers) {
      const limited = await failFrom(url, client);
      assert.equal(limited.status, 429, limited.text);
      assertErrorEnvelope(limited, "429");
      const body = JSON.parse(limited.text);
      assert.equal(body.error.code, "rate_limited");
      assert.match(
        body.message,
        /^Too many failed authentication attempts from your address; wait \d+ seconds/,
      );
      const retryAfter = Number(limited.headers["retry-after"]);
      assert.ok(
        Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
        `Retry-After ${retryAfter}`,
      );
      assert.equal(limited.headers["x-ratelimit-limit"], undefined, "no headers beyond Retry-After");
    }
    // Another client has a budget of its own, and the valid pair still passes from the limited address.
    assert.equal((await failFrom(second.url, "127.0.0.7")).status, 401);
    const rightful = await rawRequest(first.url, {
      method: "GET",
      path: "/api/collections",
      headers: { SERVICE_ACCESS_KEY: first.admin.accessKey, SERVICE_SECRET_KEY: first.admin.secretKey },
      localAddress: client,
    });
    assert.equal(rightful.status, 200, rightful.text);

    // The count lives in Redis under the installation's prefix.
    const { Redis } = await import("ioredis");
    const redis = new Redis(REDIS_URL);
    try {
      assert.equal(Number(await redis.get(`${prefix}:auth-failures:${client}`)), LIMIT + 2);
      assert.ok((await redis.pttl(`${prefix}:auth-failures:${client}`)) > 0, "the window expires");
    } finally {
      redis.disconnect();
    }
  });
});

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("with Redis unreachable, a server limits failures on its own", { skip }, () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer("postgres", {
      redisUrl: `redis://127.0.0.1:${await closedPort()}`,
      authFailureLimit: LIMIT,
      schedulerIntervalSeconds: 3600,
    });
  });
  after(async () => t?.close());

  test("failures are still answered 401, then 429", async () => {
    for (let i = 0; i < LIMIT; i++) assert.equal((await failFrom(t.url, "127.0.0.8")).status, 401);
    const limited = await failFrom(t.url, "127.0.0.8");
    assert.equal(limited.status, 429, limited.text);
    assert.match(JSON.parse(limited.text).message, /wait \d+ seconds/);
  });
});
