/**
 * The in-process queue never lets a rejected promise escape: a job whose failure cannot be recorded (the
 * database is down) is reported and recorded again until it works; a deferred job (an outage) is tried
 * again as often as it takes without using up its attempts.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { InProcessQueue } from "../../src/runs/in-process-queue.ts";
import { Deferred, deferDelay, MAX_DEFER_MS, type RunJob } from "../../src/runs/queue.ts";

const unhandled: unknown[] = [];
const collect = (reason: unknown) => unhandled.push(reason);
before(() => process.on("unhandledRejection", collect));
after(() => process.off("unhandledRejection", collect));

const job: RunJob = { kind: "task", runId: 1, taskId: 1, priority: 1 };

test("a failure that cannot be recorded is retried, never an unhandled rejection", async () => {
  const reports: string[] = [];
  const queue = new InProcessQueue({
    taskConcurrency: 1,
    runConcurrency: 1,
    attempts: 1,
    backoffMs: 1,
    onError: (message) => reports.push(message),
  });
  let recorded = 0;
  let tries = 0;
  queue.consume({
    run: async () => {
      throw new Error("the task broke");
    },
    failed: async () => {
      tries++;
      if (tries === 1) throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
      recorded++;
    },
  });
  await queue.enqueue([job]);
  const until = Date.now() + 5000;
  while (recorded === 0 && Date.now() < until) await sleep(20);
  await queue.close();
  assert.equal(recorded, 1, "the failure was recorded once the database answered");
  assert.equal(tries, 2);
  assert.deepEqual(unhandled, []);
  assert.ok(
    reports.some((line) => /ECONNREFUSED/.test(line)),
    reports.join("\n"),
  );
});

test("a deferred job comes back without using up its attempts", async () => {
  const queue = new InProcessQueue({ taskConcurrency: 1, runConcurrency: 1, attempts: 1, backoffMs: 1 });
  let runs = 0;
  let failed = 0;
  queue.consume({
    run: async () => {
      runs++;
      if (runs <= 3) throw new Deferred(new Error("database down"));
    },
    failed: async () => {
      failed++;
    },
  });
  await queue.enqueue([job]);
  const until = Date.now() + 5000;
  while (runs < 4 && Date.now() < until) await sleep(20);
  await queue.close();
  assert.equal(runs, 4, "tried until it worked");
  assert.equal(failed, 0, "an outage is not a failed attempt");
  assert.deepEqual(unhandled, []);
});

test("deferral backs off by doubling, up to a bound", () => {
  assert.equal(deferDelay(1), 250);
  assert.equal(deferDelay(2), 500);
  assert.equal(deferDelay(100), MAX_DEFER_MS);
});
