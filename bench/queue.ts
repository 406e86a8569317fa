/**
 * Queue throughput: jobs per second for a no-op job through the in-process queue and through BullMQ with
 * one and two worker processes, as ratios to the in-process figure. This is the queue's own cost per
 * task (what a run pays on top of its work); real tasks are network operations lasting milliseconds to
 * seconds. The queue is filled first and timed while it drains. BullMQ needs Redis (REDIS_URL, default
 * redis://127.0.0.1:6379); without it that part is skipped and the report says so.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { Queue } from "bullmq";
import { BullRunQueue, QUEUE_NAME } from "../src/runs/bullmq-queue.ts";
import { InProcessQueue } from "../src/runs/in-process-queue.ts";
import type { RunJob } from "../src/runs/queue.ts";
import type { Scenario } from "./run.ts";

const JOBS = Number(process.env.BENCH_QUEUE_JOBS ?? 20000);
const CONCURRENCY = 8;
const REDIS_URL = process.env.REDIS_URL || "redis://127.0.0.1:6379";

const jobs = (): RunJob[] =>
  Array.from({ length: JOBS }, (_, i) => ({ kind: "task", runId: 1, taskId: i + 1, priority: 5 }));

async function inProcess(): Promise<number> {
  const queue = new InProcessQueue({
    taskConcurrency: CONCURRENCY,
    runConcurrency: 1,
    attempts: 1,
    backoffMs: 0,
  });
  await queue.enqueue(jobs());
  let done = 0;
  const { promise, resolve } = Promise.withResolvers<void>();
  const started = performance.now();
  queue.consume({
    run: async () => {
      if (++done === JOBS) resolve();
    },
    failed: async () => {},
  });
  await promise;
  const seconds = (performance.now() - started) / 1000;
  await queue.close();
  return seconds;
}

async function bullmq(workers: number): Promise<number> {
  const prefix = `sightline-bench-${process.pid}-${workers}`;
  const producer = new BullRunQueue({
    redisUrl: REDIS_URL,
    prefix,
    taskConcurrency: CONCURRENCY,
    attempts: 1,
    backoffMs: 0,
    stallSeconds: 30,
    workerName: "bench-producer",
    onError: () => {},
  });
  const counts = new Queue(QUEUE_NAME, { connection: { url: REDIS_URL }, prefix });
  const children: ChildProcess[] = [];
  try {
    for (let i = 0; i < workers; i++) {
      const child = fork(new URL("./lib/queue-worker.ts", import.meta.url), {
        env: { ...process.env, REDIS_URL, BENCH_PREFIX: prefix, BENCH_CONCURRENCY: String(CONCURRENCY) },
      });
      children.push(child);
      await once(child, "message");
    }
    const all = jobs();
    for (let i = 0; i < all.length; i += 1000) await producer.enqueue(all.slice(i, i + 1000));
    const started = performance.now();
    for (const child of children) child.send("go");
    for (;;) {
      const left = await counts.getJobCounts("wait", "prioritized", "active");
      if (left.wait + left.prioritized + left.active === 0) break;
      await sleep(5);
    }
    return (performance.now() - started) / 1000;
  } finally {
    for (const child of children) {
      child.send("stop");
      await once(child, "exit");
    }
    await counts.obliterate({ force: true });
    await counts.close();
    await producer.close();
  }
}

async function redisProblem(): Promise<string | undefined> {
  const probe = new BullRunQueue({
    redisUrl: REDIS_URL,
    prefix: "sightline-bench-probe",
    taskConcurrency: 1,
    attempts: 1,
    backoffMs: 0,
    stallSeconds: 30,
    workerName: "probe",
    onError: () => {},
  });
  const health = await probe.healthChecks.redis();
  await probe.close();
  return health.ok ? undefined : health.detail;
}

export const scenario: Scenario = {
  name: "queue-throughput",
  async run() {
    const rows: Array<[string, string, number]> = [["in-process", "this process", await inProcess()]];
    const problem = await redisProblem();
    if (!problem) {
      rows.push(["BullMQ", "1 worker process", await bullmq(1)]);
      rows.push(["BullMQ", "2 worker processes", await bullmq(2)]);
    }
    const base = JOBS / rows[0][2];
    const lines = [
      `${JOBS} no-op task jobs, ${CONCURRENCY} at once per process; the queue is filled first and timed while it drains.`,
      "",
      "| queue | executed by | seconds | jobs/s | vs in-process |",
      "|---|---|---:|---:|---:|",
      ...rows.map(([queue, by, seconds]) => {
        const rate = JOBS / seconds;
        return `| ${queue} | ${by} | ${seconds.toFixed(3)} | ${Math.round(rate)} | ${(rate / base).toFixed(3)} |`;
      }),
    ];
    if (problem) {
      lines.push("", `BullMQ skipped: ${problem}. Start Redis or set REDIS_URL to include it.`);
    } else {
      const gain = rows[1][2] / rows[2][2];
      lines.push(
        "",
        `A BullMQ job costs Redis round trips (fetch and lock, complete) — the price of sharing a run across machines and of surviving a worker's death. A second worker process drained no-op jobs ${gain.toFixed(2)}× as fast as one: with no work per job, Redis itself sets the pace; workers add throughput when tasks do real work (network I/O), which is what they are for.`,
      );
    }
    return lines.join("\n");
  },
};
