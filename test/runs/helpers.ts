/** Small helpers for run tests: create collections, force runs, wait for a run to reach a state. */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import type { TestServer } from "../helpers/server.ts";

/** Polls `check` until it answers something truthy; fails with `what` and the last value after the timeout. */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  what: string,
  timeoutMs = 15_000,
  everyMs = 50,
): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < until) {
    last = await check();
    if (last) return last as NonNullable<T>;
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
}

export async function createCollection(t: TestServer, name: string, seeds: string[]): Promise<void> {
  const response = await t.request("POST", "/api/collections", {
    body: { name, seeds: seeds.map((seed) => ({ type: "Domain", name: seed })) },
  });
  assert.equal(response.status, 200, response.text);
}

/** Forces a run and answers its id as a number. */
export async function force(t: TestServer, name: string): Promise<number> {
  const response = await t.request("POST", `/api/collections/${name}/schedule`);
  assert.equal(response.status, 200, response.text);
  assert.equal(typeof response.body.result.id, "string");
  return Number(response.body.result.id);
}

// biome-ignore lint/suspicious/noExplicitAny: a run as the API answers it
export async function getRun(t: TestServer, name: string, id: number): Promise<any> {
  const response = await t.request("GET", `/api/collections/${name}/runs/${id}`);
  assert.equal(response.status, 200, response.text);
  return response.body.result;
}

/** Waits until the run's status is one of `statuses`, and answers the run. */
export function waitForRun(t: TestServer, name: string, id: number, ...statuses: string[]) {
  return waitFor(
    async () => {
      const run = await getRun(t, name, id);
      return statuses.includes(run.status) ? run : undefined;
    },
    `run ${id} of ${name} to be ${statuses.join(" or ")}`,
  );
}

/** Removes every Redis key under a test's BullMQ prefix. */
export async function dropRedisPrefix(url: string, prefix: string): Promise<void> {
  const { Redis } = await import("ioredis");
  const redis = new Redis(url);
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

/** A fresh BullMQ key prefix, so tests sharing one Redis never see each other's jobs. */
export function testPrefix(): string {
  return `sightline-test-${Math.random().toString(36).slice(2, 10)}`;
}
