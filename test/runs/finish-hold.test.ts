/**
 * The embedded queue tells the coordinator whether a run still has jobs whose tasks are not done
 * (`holdsUndoneJobsOf`), so a task's end tries to finish the run only when it may be the last. Whatever
 * order tasks end in, exactly the last one to say `taskDone` must find the run free; a start job never
 * holds its run, and a job that fails for good lets go of it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { InProcessQueue } from "../../src/runs/in-process-queue.ts";
import type { JobHandler, RunJob } from "../../src/runs/queue.ts";

const queueOf = (taskConcurrency: number) =>
  new InProcessQueue({ taskConcurrency, runConcurrency: 4, attempts: 1, backoffMs: 0, onError: () => {} });

const tasks = (runId: number, count: number): RunJob[] =>
  Array.from({ length: count }, (_, i) => ({ kind: "task", runId, taskId: i + 1, priority: 5 }));

describe("a run's undone jobs in the embedded queue", () => {
  test("of tasks ending in any order, together or apart, only the last finds its run free", async () => {
    const queue = queueOf(8);
    const freeSeen: number[] = [];
    let ended = 0;
    const handler: JobHandler = {
      async run(job, slot) {
        if (job.kind !== "task") return;
        // Staggered ends, several in the same turn of the event loop.
        await sleep((job.taskId * 7) % 4);
        slot?.taskDone?.();
        if (!queue.holdsUndoneJobsOf(job.runId)) freeSeen.push(job.taskId);
        ended++;
      },
      async failed() {},
    };
    queue.consume(handler);
    await queue.enqueue(tasks(1, 20));
    while (ended < 20) await sleep(5);
    assert.equal(freeSeen.length, 1, `expected one task to find the run free, saw ${freeSeen.join(", ")}`);
    assert.equal(queue.holdsUndoneJobsOf(1), false);
    await queue.close();
  });

  test("a run holds while a task waits its turn, and not for its start job", async () => {
    const queue = queueOf(1);
    const gate = Promise.withResolvers<void>();
    const handler: JobHandler = {
      async run(job) {
        if (job.kind === "task") await gate.promise;
      },
      async failed() {},
    };
    queue.consume(handler);
    await queue.enqueue([{ kind: "start", runId: 2, priority: 5 }]);
    assert.equal(queue.holdsUndoneJobsOf(2), false, "a start job holds its run");
    await queue.enqueue(tasks(2, 2));
    assert.equal(queue.holdsUndoneJobsOf(2), true);
    assert.equal(queue.holdsUndoneJobsOf(3), false, "another run is held");
    gate.resolve();
    while (queue.holdsUndoneJobsOf(2)) await sleep(5);
    await queue.close();
  });

  test("a job that fails for good lets go of its run", async () => {
    const queue = queueOf(2);
    let failed = 0;
    const handler: JobHandler = {
      async run() {
        throw new Error("the task broke");
      },
      async failed() {
        failed++;
      },
    };
    queue.consume(handler);
    await queue.enqueue(tasks(4, 3));
    while (failed < 3) await sleep(5);
    assert.equal(queue.holdsUndoneJobsOf(4), false);
    await queue.close();
  });
});
