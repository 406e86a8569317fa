/**
 * Operations metrics of the run machinery at GET /metrics, seen changing across a run: runs by state, the
 * queue's jobs (in-process here, BullMQ against Redis), discovery tasks started, finished and failed by
 * module, and discovery errors. The run's modules are test-only: one holds its task until the test lets
 * it go (so the middle of the run can be looked at), one fails on one entity, and one task's first attempt
 * fails, so every counter has something to count.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { RunWork } from "../../src/core/run-work.ts";
import { DiscoveryEngine } from "../../src/discovery/engine.ts";
import type { DiscoveryModule } from "../../src/discovery/module.ts";
import { BullRunQueue } from "../../src/runs/bullmq-queue.ts";
import { sample } from "../helpers/metrics.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { REDIS_URL, serviceSkipReason } from "../helpers/services.ts";
import { dropRedisPrefix, testPrefix, waitFor } from "./helpers.ts";

/** Asserts each series' value in a scrape; a series the scrape lacks counts as 0 (a counter not yet moved). */
function assertSamples(text: string, expected: Record<string, number>) {
  for (const [series, value] of Object.entries(expected))
    assert.equal(sample(text, series) ?? 0, value, series);
}

const SEEDS = ["a.example", "broken.example", "flaky.example"];

describe("run metrics at GET /metrics", () => {
  let t: TestServer;
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });

  /** Waits on the first seed until released, so the run stays started with work queued behind it. */
  const holding: DiscoveryModule = {
    name: "holding",
    consumes: ["Domain"],
    produces: [],
    async run(entity) {
      if (entity.name === "a.example") await held;
    },
  };
  const breaking: DiscoveryModule = {
    name: "breaking",
    consumes: ["Domain"],
    produces: [],
    async run(entity) {
      if (entity.name === "broken.example") throw new Error("planted module failure");
    },
  };

  before(async () => {
    t = await startTestServer(
      "sqlite",
      { taskConcurrency: 1, taskAttempts: 2, schedulerIntervalSeconds: 86_400 },
      {
        runWork: (services): RunWork => {
          const engine = new DiscoveryEngine({
            config: services.config,
            collections: services.collections,
            entities: services.entities,
            modules: [holding, breaking],
          });
          let flaked = false;
          return {
            plan: (run) => engine.plan(run),
            async execute(task, run, signal) {
              if (task.key === "breaking:Domain:flaky.example" && !flaked) {
                flaked = true;
                throw new Error("planted transient failure");
              }
              return engine.execute(task, run, signal);
            },
            finish: (run) => engine.finish(run),
            instrument: (metrics) => engine.instrument(metrics),
          };
        },
      },
    );
  });
  after(async () => {
    release();
    await t?.close();
  });

  const scrape = async () => (await t.request("GET", "/metrics", { keys: null })).text;

  test("runs by state, queue depth, tasks by module and discovery errors move with a run", async () => {
    const before = await scrape();
    assertSamples(before, { 'sightline_runs{state="started"}': 0, 'sightline_runs{state="finished"}': 0 });
    assert.match(before, /^sightline_queue_jobs\{queue="in-process",state="waiting"\} 0$/m);

    const created = await t.request("POST", "/api/collections", {
      body: { name: "watched", seeds: SEEDS.map((name) => ({ type: "Domain", name })) },
    });
    assert.equal(created.status, 200, created.text);
    const id = Number((await t.request("POST", "/api/collections/watched/schedule")).body.result.id);

    // One task in hand (held), the five others waiting behind it: the run is started.
    const during = await waitFor(async () => {
      const text = await scrape();
      return sample(text, 'sightline_queue_jobs{queue="in-process",state="waiting"}') === 5
        ? text
        : undefined;
    }, "five tasks waiting behind the held one");
    assertSamples(during, {
      'sightline_runs{state="started"}': 1,
      'sightline_queue_jobs{queue="in-process",state="running"}': 1,
      'sightline_discovery_tasks_started_total{module="holding"}': 1,
      'sightline_discovery_tasks_finished_total{module="holding"}': 0,
    });

    release();
    await waitFor(async () => {
      const { body } = await t.request("GET", `/api/collections/watched/runs/${id}`);
      return body.result.status === "finished";
    }, "the run to finish");
    assertSamples(await scrape(), {
      'sightline_runs{state="started"}': 0,
      'sightline_runs{state="finished"}': 1,
      'sightline_queue_jobs{queue="in-process",state="waiting"}': 0,
      'sightline_queue_jobs{queue="in-process",state="running"}': 0,
      'sightline_queue_jobs{queue="in-process",state="delayed"}': 0,
      'sightline_discovery_tasks_finished_total{module="holding"}': 3,
      'sightline_discovery_tasks_finished_total{module="breaking"}': 3,
      // The flaky task was started twice: once failing, once finishing.
      'sightline_discovery_tasks_started_total{module="breaking"}': 4,
      'sightline_discovery_tasks_failed_total{module="breaking"}': 1,
      'sightline_discovery_tasks_failed_total{module="holding"}': 0,
      'sightline_discovery_errors_total{module="breaking"}': 1,
      'sightline_discovery_errors_total{module="holding"}': 0,
      'sightline_discovery_module_seconds_count{module="holding"}': 3,
    });
  });
});

const redisSkip = await serviceSkipReason("Redis", REDIS_URL);

describe("BullMQ queue depth", { skip: redisSkip }, () => {
  const prefix = testPrefix();
  let queue: BullRunQueue;
  before(() => {
    queue = new BullRunQueue({
      redisUrl: REDIS_URL,
      prefix,
      taskConcurrency: 1,
      attempts: 1,
      backoffMs: 100,
      stallSeconds: 30,
      workerName: "metrics-test",
      onError: () => {},
    });
  });
  after(async () => {
    await queue?.close();
    await dropRedisPrefix(REDIS_URL, prefix);
  });

  test("counts the jobs waiting in Redis, whatever their priority", async () => {
    await queue.ready();
    assert.deepEqual(await queue.depth(), { waiting: 0, running: 0, delayed: 0 });
    await queue.enqueue([
      { kind: "start", runId: 1, priority: 1 },
      { kind: "task", runId: 1, taskId: 1, priority: 5 },
      { kind: "task", runId: 1, taskId: 2, priority: 5 },
    ]);
    assert.deepEqual(await queue.depth(), { waiting: 3, running: 0, delayed: 0 });
  });
});
