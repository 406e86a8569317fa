/**
 * Distributed mode against this machine's PostgreSQL and Redis: a server that only enqueues, and real
 * `sightline worker` child processes that share the work — and lose one of their own without losing the run.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/core/config.ts";
import { bootstrapFirstUser } from "../../src/store/bootstrap.ts";
import { openServices } from "../../src/store/services.ts";
import { type Sightline, spawnSightline } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { POSTGRES_URL, REDIS_URL, serviceSkipReason } from "../helpers/services.ts";
import { createTestStore } from "../helpers/stores.ts";
import type { TestWorkOptions } from "./fixtures/test-work.ts";
import { createCollection, dropRedisPrefix, force, testPrefix, waitFor, waitForRun } from "./helpers.ts";

const WORK_MODULE = fileURLToPath(new URL("./fixtures/test-work.ts", import.meta.url));

const skip =
  (await serviceSkipReason("PostgreSQL", POSTGRES_URL)) ?? (await serviceSkipReason("Redis", REDIS_URL));

describe("distributed runs: sightline worker processes over PostgreSQL and Redis", { skip }, () => {
  let t: TestServer;
  let prefix: string;
  let dir: string;
  const workers: Sightline[] = [];

  before(async () => {
    prefix = testPrefix();
    dir = mkdtempSync(join(tmpdir(), "sightline-workers-"));
    t = await startTestServer("postgres", {
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      queueStallSeconds: 1,
      schedulerIntervalSeconds: 3600,
    });
  });
  after(async () => {
    await Promise.all(workers.map((worker) => worker.stop(2000)));
    await t?.close();
    if (prefix) await dropRedisPrefix(REDIS_URL, prefix);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function startWorker(work: TestWorkOptions, env: Record<string, string> = {}): Promise<Sightline> {
    const worker = spawnSightline(["worker"], {
      DATABASE_URL: t.config.databaseUrl,
      REDIS_URL,
      SIGHTLINE_REDIS_PREFIX: prefix,
      SIGHTLINE_RUN_WORK_MODULE: WORK_MODULE,
      SIGHTLINE_TEST_WORK: JSON.stringify(work),
      SIGHTLINE_TASK_CONCURRENCY: "2",
      SIGHTLINE_QUEUE_STALL_SECONDS: "1",
      SIGHTLINE_SHUTDOWN_GRACE: "0",
      LOG_LEVEL: "warn",
      ...env,
    });
    workers.push(worker);
    await worker.waitForLine(/is taking run tasks/);
    return worker;
  }

  const workerId = (worker: Sightline) => `${hostname()}:${worker.pid}`;
  const tasksOf = (runId: number) =>
    t.server.services.store.db
      .selectFrom("run_tasks")
      .select(["id", "status", "worker", "attempts"])
      .where("run_id", "=", runId)
      .orderBy("id")
      .execute();
  const finishes = (file: string, runId: number) =>
    readFileSync(file, "utf8")
      .split("\n")
      .filter((line) => line.startsWith(`${runId} `)).length;

  test("the server only enqueues; two workers complete one run together and finish it once", async () => {
    const finishLog = join(dir, "finish-shared.log");
    const work = { fanout: 8, taskMs: 60, finishLog };
    const [a, b] = [await startWorker(work), await startWorker(work)];
    await createCollection(t, "shared", ["s1.example", "s2.example", "s3.example", "s4.example"]);
    const id = await force(t, "shared");
    const run = await waitForRun(t, "shared", id, "finished", "failed");
    assert.equal(run.status, "finished", run.error);
    assert.equal(run.tasks_total, 4 * 9);
    assert.equal(run.tasks_done, run.tasks_total);

    const byWorker = new Map(
      (await t.server.services.runs.workersOf(id)).map(({ worker, tasks }) => [worker, tasks]),
    );
    assert.ok((byWorker.get(workerId(a)) ?? 0) > 0, `worker a did work: ${JSON.stringify([...byWorker])}`);
    assert.ok((byWorker.get(workerId(b)) ?? 0) > 0, `worker b did work: ${JSON.stringify([...byWorker])}`);
    assert.equal(
      [...byWorker.values()].reduce((x, y) => x + y, 0),
      run.tasks_total,
      "only the workers did work",
    );
    assert.equal(finishes(finishLog, id), 1, "finish called exactly once");

    for (const worker of [a, b]) assert.equal(await worker.stop(), 0, "SIGTERM stops a worker cleanly");
  });

  test("a worker killed with SIGKILL mid-run: its tasks are retried by another and the run finishes", async () => {
    const finishLog = join(dir, "finish-kill.log");
    const work = { fanout: 2, taskMs: 500, finishLog };
    const [victim, survivor] = [await startWorker(work), await startWorker(work)];
    await createCollection(t, "killed", ["k1.example", "k2.example", "k3.example"]);
    const id = await force(t, "killed");
    await waitFor(async () => {
      const held = (await tasksOf(id)).filter(
        (task) => task.worker === workerId(victim) && task.status === "running",
      );
      return held.length > 0 ? held.map((task) => task.id) : undefined;
    }, "the victim to be running tasks");
    victim.child.kill("SIGKILL");
    assert.equal(await victim.exited, "SIGKILL");

    const run = await waitForRun(t, "killed", id, "finished", "failed");
    assert.equal(run.status, "finished", run.error);
    assert.equal(run.tasks_done, run.tasks_total);
    assert.equal(run.tasks_total, 3 * 3);
    // The run's task rows are gone once it ended; what is kept says who did how many, in how many attempts.
    const byWorker = await t.server.services.runs.workersOf(id);
    const redone = byWorker.find((row) => row.worker === workerId(survivor));
    assert.ok(
      redone && redone.attempts > redone.tasks,
      `a task the victim held was redone by the survivor: ${JSON.stringify(byWorker)}`,
    );
    assert.equal(finishes(finishLog, id), 1);
    await survivor.stop();
  });

  test("SIGTERM hands tasks in flight back without using up an attempt", async () => {
    const work = { fanout: 0, taskMs: 1500 };
    const leaving = await startWorker(work);
    await createCollection(t, "handover", ["h1.example", "h2.example"]);
    const id = await force(t, "handover");
    await waitFor(async () => {
      const tasks = await tasksOf(id);
      return tasks.length === 2 && tasks.every((task) => task.status === "running");
    }, "both tasks to be running on the leaving worker");
    assert.equal(await leaving.stop(), 0);
    assert.match(leaving.output(), /handing the rest back/);
    assert.deepEqual(
      (await tasksOf(id)).map((task) => [task.status, task.attempts]),
      [
        ["pending", 0],
        ["pending", 0],
      ],
      "handed back, attempt refunded",
    );

    const staying = await startWorker(work);
    const run = await waitForRun(t, "handover", id, "finished", "failed");
    assert.equal(run.status, "finished", run.error);
    assert.deepEqual(
      await t.server.services.runs.workersOf(id),
      [{ worker: workerId(staying), tasks: 2, attempts: 2 }],
      "the staying worker did both, each in one attempt",
    );
    await staying.stop();
  });

  test("a cancel reaches the tasks in flight on a worker", async () => {
    const executeLog = join(dir, "execute-cancel.log");
    const worker = await startWorker({ hang: ["stuck.example"], executeLog });
    await createCollection(t, "cancel-remote", ["stuck.example"]);
    const id = await force(t, "cancel-remote");
    await waitForRun(t, "cancel-remote", id, "started");
    await waitFor(() => {
      try {
        return readFileSync(executeLog, "utf8").includes("seed:stuck.example");
      } catch {
        return false;
      }
    }, "the task to be executing on the worker");
    const cancelled = await t.request("POST", `/api/collections/cancel-remote/runs/${id}/cancel`);
    assert.equal(cancelled.body.result.status, "cancelled");
    await waitFor(
      () => readFileSync(executeLog, "utf8").includes(`${id} seed:stuck.example ${worker.pid} aborted`),
      "the worker to abort the task",
    );
    // The cancelled run's task rows go with it (the worker's release of its task finds none).
    await waitFor(async () => (await tasksOf(id)).length === 0, "the run's task rows to go");
    await worker.stop();
  });
});

describe("two server processes on one PostgreSQL database", {
  skip: await serviceSkipReason("PostgreSQL", POSTGRES_URL),
}, () => {
  test("their schedulers fire each due run exactly once", async () => {
    const store = await createTestStore("postgres");
    const config = loadConfig({}, { ...store.config, logLevel: "silent" });
    const services = await openServices(config);
    const servers: Sightline[] = [];
    try {
      await bootstrapFirstUser(services.accounts, config);
      const team = (await services.accounts.findTeam("default"))!;
      for (let i = 0; i < 2; i++) {
        servers.push(
          spawnSightline(["serve"], {
            DATABASE_URL: config.databaseUrl,
            SIGHTLINE_DATA_DIR: store.config.dataDir,
            PORT: "0",
            HOST: "127.0.0.1",
            SIGHTLINE_SCHEDULER_INTERVAL: "1",
            LOG_LEVEL: "info",
          }),
        );
      }
      await Promise.all(servers.map((server) => server.waitForLine(/is listening on/)));
      const ids: number[] = [];
      for (let i = 0; i < 20; i++) {
        const row = await services.collections.create(team.account_id, team.id, `due-${i}`, [
          { type: "Domain", name: `due-${i}.example` },
        ]);
        ids.push(row!.id);
      }
      const scheduled = () =>
        services.store.db
          .selectFrom("runs")
          .select(["collection_id", "status"])
          .where("trigger", "=", "scheduled")
          .execute();
      await waitFor(async () => {
        const runs = await scheduled();
        return runs.length >= ids.length && runs.every((run) => run.status === "finished");
      }, "every collection's first scheduled run to finish");
      // Both schedulers keep ticking every second; give them several chances to fire a second time.
      await sleep(2200);
      const runs = await scheduled();
      for (const id of ids)
        assert.equal(runs.filter((run) => run.collection_id === id).length, 1, `collection ${id} fired once`);
      const started = servers.map(
        (server) => (server.output().match(/started with \d+ tasks/g) ?? []).length,
      );
      assert.equal(started[0] + started[1], ids.length, `runs started per server: ${started}`);
    } finally {
      for (const server of servers) assert.equal(await server.stop(), 0, server.output());
      await services.store.close();
      await store.drop();
    }
  });
});
