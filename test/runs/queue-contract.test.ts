/**
 * The contract between a queue and the coordinator (src/runs/queue.ts), run against both queues: the
 * in-process one and BullMQ on a real Redis (its own key prefix). What the coordinator relies on: every
 * job runs, a job enqueued again while it waits runs once, a failing job is retried and then reported
 * failed exactly once with its error, a job handed back is no failure and runs again once offered, and
 * the depth counts what waits.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { BullRunQueue } from "../../src/runs/bullmq-queue.ts";
import { InProcessQueue } from "../../src/runs/in-process-queue.ts";
import { HandBack, type JobHandler, type RunJob, type RunQueue } from "../../src/runs/queue.ts";
import { REDIS_URL, serviceSkipReason } from "../helpers/services.ts";

const ATTEMPTS = 3;
const BACKOFF_MS = 20;

const QUEUES: Array<{ name: string; skip: string | undefined; make(): RunQueue }> = [
  {
    name: "in-process",
    skip: undefined,
    make: () =>
      new InProcessQueue({
        taskConcurrency: 2,
        runConcurrency: 4,
        attempts: ATTEMPTS,
        backoffMs: BACKOFF_MS,
      }),
  },
  {
    name: "BullMQ",
    skip: await serviceSkipReason("Redis", REDIS_URL),
    make: () =>
      new BullRunQueue({
        redisUrl: REDIS_URL,
        prefix: `sightline-contract-${randomBytes(4).toString("hex")}`,
        taskConcurrency: 2,
        attempts: ATTEMPTS,
        backoffMs: BACKOFF_MS,
        stallSeconds: 5,
        workerName: "contract-test",
        onError: () => {},
      }),
  },
];

/** A handler that records what it ran and fails or hands back the jobs it is told to. */
function recorder(behaviour: (job: RunJob, attempt: number) => "ok" | "fail" | "hand-back" = () => "ok") {
  const runs: string[] = [];
  const failed: Array<{ job: RunJob; message: string }> = [];
  const attempts = new Map<string, number>();
  const handler: JobHandler = {
    async run(job) {
      const key = job.kind === "start" ? `start-${job.runId}` : `task-${job.runId}-${job.taskId}`;
      const attempt = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, attempt);
      runs.push(key);
      const what = behaviour(job, attempt);
      if (what === "fail") throw new Error(`${key} failed on attempt ${attempt}`);
      if (what === "hand-back") throw new HandBack();
    },
    async failed(job, error) {
      failed.push({ job, message: error.message });
    },
  };
  return { handler, runs, failed, attempts };
}

async function until(condition: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await sleep(10);
  }
}

for (const kind of QUEUES) {
  describe(`the queue contract: ${kind.name}`, { skip: kind.skip }, () => {
    const open: RunQueue[] = [];
    const queue = async () => {
      const made = kind.make();
      open.push(made);
      await made.ready();
      return made;
    };
    after(async () => {
      for (const made of open) {
        made.stop();
        await made.close();
      }
    });

    test("every job runs once, even when enqueued again while it waits", async () => {
      const q = await queue();
      const { handler, runs } = recorder();
      const jobs: RunJob[] = [
        { kind: "start", runId: 1, priority: 1 },
        ...[1, 2, 3, 4, 5].map((taskId) => ({ kind: "task" as const, runId: 1, taskId, priority: 5 })),
      ];
      await q.enqueue(jobs);
      await q.enqueue(jobs.slice(2)); // the same ids again, still waiting
      const depth = await q.depth();
      assert.equal(depth.waiting + depth.running + depth.delayed, jobs.length, "each id is held once");
      q.consume(handler);
      await until(() => runs.length >= jobs.length, "every job ran");
      await sleep(200);
      assert.deepEqual(
        [...runs].sort(),
        ["start-1", "task-1-1", "task-1-2", "task-1-3", "task-1-4", "task-1-5"],
        "once each",
      );
    });

    test("a zone transfer's worth of jobs enqueued at once (taken in pieces) is held once each and all run", async () => {
      const q = await queue();
      const { handler, runs } = recorder();
      const jobs = Array.from({ length: 2_500 }, (_, i) => ({
        kind: "task" as const,
        runId: 9,
        taskId: i + 1,
        priority: 5,
      }));
      await q.enqueue(jobs);
      await q.enqueue(jobs.slice(1_200, 1_300)); // some again, still waiting
      const depth = await q.depth();
      assert.equal(depth.waiting + depth.running + depth.delayed, jobs.length, "each id is held once");
      q.consume(handler);
      await until(() => runs.length >= jobs.length, "every job ran", 60_000);
      assert.equal(new Set(runs).size, jobs.length, "each once");
    });

    test("a failing job is retried up to the attempts, then reported failed once with its error", async () => {
      const q = await queue();
      const { handler, failed, attempts } = recorder((job) =>
        job.kind === "task" && job.taskId === 2 ? "fail" : "ok",
      );
      q.consume(handler);
      await q.enqueue([
        { kind: "task", runId: 2, taskId: 1, priority: 5 },
        { kind: "task", runId: 2, taskId: 2, priority: 5 },
      ]);
      await until(() => failed.length >= 1, "the failing job was reported");
      await sleep(300);
      assert.equal(failed.length, 1, "reported once");
      assert.deepEqual(failed[0].job, { kind: "task", runId: 2, taskId: 2, priority: 5 });
      assert.equal(failed[0].message, `task-2-2 failed on attempt ${ATTEMPTS}`);
      assert.equal(attempts.get("task-2-2"), ATTEMPTS);
      assert.equal(attempts.get("task-2-1"), 1);
    });

    test("a job handed back is not a failure and runs again once offered again", async () => {
      const q = await queue();
      const { handler, failed, attempts } = recorder((_job, attempt) => (attempt === 1 ? "hand-back" : "ok"));
      q.consume(handler);
      const job: RunJob = { kind: "task", runId: 3, taskId: 1, priority: 5 };
      await q.enqueue([job]);
      await until(() => (attempts.get("task-3-1") ?? 0) >= 1, "the job was handed back");
      // BullMQ puts it back in Redis itself; the in-process queue forgets it, and the store (which still
      // holds the task) offers it again when the server next starts — as this enqueue does.
      if (!q.durable) await q.enqueue([job]);
      await until(
        () => (attempts.get("task-3-1") ?? 0) >= 2,
        `the job ran again (ran ${attempts.get("task-3-1")} times)`,
      );
      await sleep(200);
      assert.deepEqual(failed, [], "handing back is not failing");
      assert.equal(attempts.get("task-3-1"), 2);
    });
  });
}
