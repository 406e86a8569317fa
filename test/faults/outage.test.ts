/**
 * Fault injection with real processes: `sightline serve` (embedded) and `sightline serve` + `sightline
 * worker`s (distributed) run runs over a PostgreSQL cluster and a redis-server this test owns, while the
 * test stops and restarts each dependency mid-run and SIGKILLs workers and the server (starting them
 * again). Checked: every process the test did not kill is still running; /healthz answers 503 during an
 * outage; every run ends `finished` (every task done, finished exactly once) or `failed` with its reason,
 * within a bound; nothing is lost.
 *
 * Runs under CI (failing when the Debian binaries are missing); elsewhere it skips with a sentence.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { type Sightline, spawnSightline } from "../helpers/processes.ts";
import { BOOTSTRAP_KEYS } from "../helpers/server.ts";
import {
  faultSkipReason,
  type Postgres,
  type RedisServer,
  startPostgres,
  startRedis,
} from "./dependencies.ts";

const WORK_MODULE = fileURLToPath(new URL("../runs/fixtures/test-work.ts", import.meta.url));
/** How long a run may take to end once its dependencies are back. */
const SETTLE_MS = 45_000;
const STEADY_SEEDS = ["s1.example", "s2.example", "s3.example", "s4.example"];
const FANOUT = 6;

const skip = await faultSkipReason();

const headers = {
  SERVICE_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
  SERVICE_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
};

interface Api {
  url: string;
}

async function call(api: Api, method: string, path: string, body?: unknown) {
  const response = await fetch(`${api.url}${path}`, {
    method,
    headers: body ? { ...headers, "content-type": "application/json" } : headers,
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, text };
}

async function waitFor<T>(check: () => Promise<T | undefined>, what: string, timeoutMs: number): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = (error as Error).message;
    }
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what} (last error: ${last ?? "none"})`);
}

// biome-ignore lint/suspicious/noExplicitAny: a run as the API answers it
type Run = any;

async function getRun(api: Api, name: string, id: string): Promise<Run> {
  const response = await call(api, "GET", `/api/collections/${name}/runs/${id}`);
  assert.equal(response.status, 200, response.text);
  return response.body.result;
}

describe("fault injection: dependencies and processes die mid-run", { skip }, () => {
  let postgres: Postgres;
  let redis: RedisServer;
  let dir: string;
  const children: Sightline[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "sightline-faults-"));
    // Both, or neither: a server that started while the other failed is stopped, never left behind.
    const [pgStarted, redisStarted] = await Promise.allSettled([startPostgres(), startRedis()]);
    if (pgStarted.status === "fulfilled") postgres = pgStarted.value;
    if (redisStarted.status === "fulfilled") redis = redisStarted.value;
    for (const started of [pgStarted, redisStarted]) if (started.status === "rejected") throw started.reason;
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query("create database embedded");
    await admin.query("create database distributed");
    await admin.end();
  });
  after(async () => {
    for (const child of children) if (child.child.exitCode === null) child.child.kill("SIGKILL");
    await Promise.all(children.map((child) => child.exited));
    await postgres?.destroy();
    await redis?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const databaseUrl = (name: string) => postgres.url.replace(/\/postgres$/, `/${name}`);

  function environment(database: string, finishLog: string, extra: Record<string, string> = {}) {
    return {
      DATABASE_URL: databaseUrl(database),
      SIGHTLINE_DATA_DIR: join(dir, database),
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      SIGHTLINE_BOOTSTRAP_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
      SIGHTLINE_BOOTSTRAP_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
      SIGHTLINE_RUN_WORK_MODULE: WORK_MODULE,
      SIGHTLINE_TEST_WORK: JSON.stringify({ fanout: FANOUT, taskMs: 250, fail: ["bad.example"], finishLog }),
      SIGHTLINE_TASK_CONCURRENCY: "2",
      SIGHTLINE_QUEUE_STALL_SECONDS: "1",
      SIGHTLINE_SHUTDOWN_GRACE: "0",
      SIGHTLINE_SCHEDULER_INTERVAL: "2",
      ...extra,
    };
  }

  async function serve(env: Record<string, string>): Promise<{ process: Sightline; api: Api }> {
    const child = spawnSightline(["serve"], env);
    children.push(child);
    const line = await child.waitForLine(/listening on http:\/\/\S+/, 30_000);
    return { process: child, api: { url: /listening on (http:\/\/\S+)/.exec(line)![1] } };
  }

  async function work(env: Record<string, string>): Promise<Sightline> {
    const child = spawnSightline(["worker"], env);
    children.push(child);
    await child.waitForLine(/is taking run tasks/, 30_000);
    return child;
  }

  async function force(api: Api, name: string): Promise<string> {
    const response = await call(api, "POST", `/api/collections/${name}/schedule`);
    assert.equal(response.status, 200, response.text);
    return response.body.result.id;
  }

  const progressed = (api: () => Api, name: string, id: string, done: number) =>
    waitFor(
      async () => ((await getRun(api(), name, id)).tasks_done >= done ? true : undefined),
      `run ${id} of ${name} to have ${done} tasks done`,
      30_000,
    );

  const ended = (api: () => Api, name: string, id: string) =>
    waitFor(
      async () => {
        const run = await getRun(api(), name, id);
        return run.status === "finished" || run.status === "failed" || run.status === "cancelled"
          ? run
          : undefined;
      },
      `run ${id} of ${name} to end`,
      SETTLE_MS,
    );

  const finishes = (file: string, id: string) =>
    readFileSync(file, "utf8")
      .split("\n")
      .filter((line) => line.startsWith(`${id} `)).length;

  /** A run of the steady collection ended well: finished, every task done, none lost, finished once. */
  function assertComplete(run: Run, finishLog: string) {
    assert.equal(run.status, "finished", `run ${run.id}: ${run.status} ${run.error ?? ""}`);
    assert.equal(run.tasks_total, STEADY_SEEDS.length * (1 + FANOUT), "no task was lost");
    assert.equal(run.tasks_done, run.tasks_total);
    assert.equal(finishes(finishLog, run.id), 1, "finished exactly once");
  }

  function assertAlive(processes: Sightline[]) {
    for (const child of processes)
      assert.equal(child.child.exitCode, null, `process ${child.pid} is still running:\n${child.output()}`);
  }

  async function assertDegraded(api: Api) {
    const health = await fetch(`${api.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
    assert.equal(health.status, 503, "/healthz says the service is degraded during the outage");
  }

  async function seedCollections(api: Api) {
    for (const [name, seeds] of [
      ["steady", STEADY_SEEDS],
      ["doomed", ["bad.example"]],
    ] as const) {
      const created = await call(api, "POST", "/api/collections", {
        name,
        seeds: seeds.map((seed) => ({ type: "Domain", name: seed })),
      });
      assert.equal(created.status, 200, created.text);
    }
  }

  test("embedded: PostgreSQL stopped mid-run, then the server SIGKILLed mid-run", async () => {
    const finishLog = join(dir, "embedded-finish.log");
    const env = environment("embedded", finishLog);
    let server = await serve(env);
    await seedCollections(server.api);

    const steady = await force(server.api, "steady");
    await progressed(() => server.api, "steady", steady, 2);
    // A task failing for good while the database is down: recording its failure waits for the database.
    const doomed = await force(server.api, "doomed");
    await postgres.stop();
    await sleep(3000);
    assertAlive([server.process]);
    await assertDegraded(server.api);
    await postgres.start();

    assertComplete(await ended(() => server.api, "steady", steady), finishLog);
    const failed = await ended(() => server.api, "doomed", doomed);
    assert.equal(failed.status, "failed");
    assert.match(failed.error, /bad\.example is set to fail/, "the run failed with its reason");
    assertAlive([server.process]);

    // SIGKILL while a run is under way: the next server picks the run up.
    const again = await force(server.api, "steady");
    await progressed(() => server.api, "steady", again, 2);
    server.process.child.kill("SIGKILL");
    assert.equal(await server.process.exited, "SIGKILL");
    server = await serve(env);
    assertComplete(await ended(() => server.api, "steady", again), finishLog);
    assertAlive([server.process]);
    assert.equal((await fetch(`${server.api.url}/healthz`)).status, 200);
  });

  test("embedded: PostgreSQL crashes mid-run: the run fails with its reason, the next one finishes", async () => {
    const finishLog = join(dir, "crash-finish.log");
    const env = environment("crashed", finishLog);
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query("create database crashed");
    await admin.end();
    const server = await serve(env);
    await seedCollections(server.api);
    const first = await force(server.api, "steady");
    assertComplete(await ended(() => server.api, "steady", first), finishLog);

    // A crash, not a clean stop: the recovery empties the run's working tables (unlogged, migration 020).
    const lost = await force(server.api, "steady");
    await progressed(() => server.api, "steady", lost, 2);
    await postgres.crash();
    await postgres.start();
    const failed = await ended(() => server.api, "steady", lost);
    assert.equal(failed.status, "failed", "a run that lost its tasks and staging never finishes");
    assert.match(failed.error, /lost the run's working tables/);
    assert.equal(finishes(finishLog, lost), 0, "nothing of it was saved as results");
    assertAlive([server.process]);

    assertComplete(await ended(() => server.api, "steady", await force(server.api, "steady")), finishLog);
    assertAlive([server.process]);
  });

  test("distributed: PostgreSQL and Redis die mid-run, a worker and the server are SIGKILLed", async () => {
    const finishLog = join(dir, "distributed-finish.log");
    const env = environment("distributed", finishLog, {
      REDIS_URL: redis.url,
      SIGHTLINE_REDIS_PREFIX: "faults",
    });
    let server = await serve(env);
    await seedCollections(server.api);
    const workers = [await work(env), await work(env)];
    const api = () => server.api;

    const steady = await force(server.api, "steady");
    await progressed(api, "steady", steady, 2);
    const doomed = await force(server.api, "doomed");

    await postgres.stop();
    await sleep(3000);
    assertAlive([server.process, ...workers]);
    await assertDegraded(server.api);
    await postgres.start();
    await progressed(api, "steady", steady, 8);

    await redis.kill();
    await sleep(3000);
    assertAlive([server.process, ...workers]);
    await assertDegraded(server.api);
    await redis.start();

    // A worker and the server die; both are started again.
    const victim = workers.shift()!;
    victim.child.kill("SIGKILL");
    server.process.child.kill("SIGKILL");
    await Promise.all([victim.exited, server.process.exited]);
    workers.push(await work(env));
    server = await serve(env);

    assertComplete(await ended(api, "steady", steady), finishLog);
    const failed = await ended(api, "doomed", doomed);
    assert.equal(failed.status, "failed");
    assert.match(failed.error, /bad\.example is set to fail/);
    assertAlive([server.process, ...workers]);
  });
});
