/**
 * A BullMQ worker process for the queue benchmark: connects, says ready, and on "go" consumes no-op jobs
 * until told to stop. Run by bench/queue.ts with REDIS_URL, BENCH_PREFIX and BENCH_CONCURRENCY set.
 */
import { BullRunQueue } from "../../src/runs/bullmq-queue.ts";

const queue = new BullRunQueue({
  redisUrl: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  prefix: process.env.BENCH_PREFIX ?? "sightline-bench",
  taskConcurrency: Number(process.env.BENCH_CONCURRENCY ?? 8),
  attempts: 1,
  backoffMs: 0,
  stallSeconds: 30,
  workerName: `bench-${process.pid}`,
  onError: (message) => console.error(message),
});
await queue.ready();
process.on("message", (message) => {
  if (message === "go") queue.consume({ run: async () => {}, failed: async () => {} });
  if (message === "stop") void queue.close().then(() => process.exit(0));
});
process.send?.("ready");
