/**
 * Jobs that only wait give their task slot back (src/runs/in-process-queue.ts, TaskSlot): a block of
 * mostly unused addresses, whose port scans each wait out a timeout, must not hold every slot while the
 * work that computes queues behind it. Which tasks wait is the discovery modules' to say.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { loadConfig } from "../../src/core/config.ts";
import { DiscoveryEngine } from "../../src/discovery/engine.ts";
import { discoveryModules } from "../../src/discovery/modules.ts";
import { InProcessQueue, WAITING_JOBS_PER_SLOT } from "../../src/runs/in-process-queue.ts";
import type { JobHandler, RunJob } from "../../src/runs/queue.ts";

const SLOTS = 2;
const WAITING = 80;
const COMPUTING = 6;

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await sleep(5);
  }
}

describe("jobs that wait, in the embedded queue", () => {
  test("give their slot back: computing jobs run while the waiting pool is full, and neither bound is exceeded", async () => {
    const queue = new InProcessQueue({
      taskConcurrency: SLOTS,
      runConcurrency: 1,
      attempts: 1,
      backoffMs: 0,
    });
    const gate = Promise.withResolvers<void>();
    let waitingNow = 0;
    let waitingPeak = 0;
    let slottedNow = 0;
    let slottedPeak = 0;
    let refused = 0;
    const computed: number[] = [];
    const handler: JobHandler = {
      async run(job, slot) {
        if (job.kind !== "task") return;
        const waits = job.taskId <= WAITING && slot?.release() === true;
        if (job.taskId <= WAITING && !waits) refused++;
        if (waits) waitingPeak = Math.max(waitingPeak, ++waitingNow);
        else slottedPeak = Math.max(slottedPeak, ++slottedNow);
        try {
          if (job.taskId <= WAITING) await gate.promise;
          else {
            await sleep(1);
            computed.push(job.taskId);
          }
        } finally {
          if (waits) waitingNow--;
          else slottedNow--;
        }
      },
      async failed() {},
    };
    const jobs: RunJob[] = Array.from({ length: WAITING + COMPUTING }, (_, i) => ({
      kind: "task",
      runId: 1,
      taskId: i + 1,
      priority: 5,
    }));
    await queue.enqueue(jobs);
    queue.consume(handler);
    const pool = SLOTS * WAITING_JOBS_PER_SLOT;
    // The waiting jobs came first and hold the whole pool; the ones the pool refused keep their slots,
    // so the computing jobs behind them run only once the slots are free again.
    await until(() => waitingNow === pool, `${pool} jobs wait`);
    assert.equal(waitingPeak, pool, "the pool of waiting jobs is bounded by the slots");
    assert.equal((await queue.depth()).running, pool + SLOTS, "the depth counts waiting jobs as running");
    assert.ok(slottedPeak <= SLOTS, `at most ${SLOTS} jobs in slots (saw ${slottedPeak})`);
    assert.ok(refused >= 1, "a job the full pool refuses keeps its slot");
    gate.resolve();
    await until(() => computed.length === COMPUTING, "every computing job ran");
    assert.ok(slottedPeak <= SLOTS, `at most ${SLOTS} jobs in slots (saw ${slottedPeak})`);
    assert.equal(waitingPeak, pool);
    await queue.close();
  });

  test("computing jobs are not held up by waiting ones below the pool's bound", async () => {
    const queue = new InProcessQueue({
      taskConcurrency: SLOTS,
      runConcurrency: 1,
      attempts: 1,
      backoffMs: 0,
    });
    const gate = Promise.withResolvers<void>();
    const computed: number[] = [];
    const handler: JobHandler = {
      async run(job, slot) {
        if (job.kind !== "task") return;
        if (job.taskId <= SLOTS * 2) {
          assert.equal(slot?.release(), true);
          await gate.promise;
        } else computed.push(job.taskId);
      },
      async failed() {},
    };
    // Twice as many waiting jobs as slots first: without giving their slots back they would hold them all.
    await queue.enqueue(
      Array.from({ length: SLOTS * 2 + COMPUTING }, (_, i) => ({
        kind: "task" as const,
        runId: 1,
        taskId: i + 1,
        priority: 5,
      })),
    );
    queue.consume(handler);
    await until(() => computed.length === COMPUTING, "every computing job ran while the waiting ones wait");
    gate.resolve();
    await queue.close();
  });

  test("the discovery tasks that talk to services wait; those that compute do not", () => {
    const engine = new DiscoveryEngine({
      config: loadConfig({}, {}),
      collections: undefined as never,
      entities: undefined as never,
      modules: discoveryModules(),
    });
    // Port scans, UDP, web probes, exposure checks and TLS handshakes spend a silent target's timeout
    // waiting; a service's shared task waits when one of its modules does.
    for (const waiting of ["ports", "udp", "http", "exposures", "tls", "exposures+tls+fingerprint"])
      assert.equal(engine.waits(waiting), true, waiting);
    for (const computing of ["templates", "fingerprint", "dns", "netblocks", "block-slice"])
      assert.equal(engine.waits(computing), false, computing);
  });
});
