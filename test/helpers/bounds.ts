/**
 * What a piece of work costs, for the hostile-target tests: the peak growth of the process's memory (the
 * V8 heap plus external memory, where Buffers live) sampled while the work runs, from a baseline taken
 * after a full garbage collection, and the time it took.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

const inUse = () => {
  const memory = process.memoryUsage();
  return memory.heapUsed + memory.external;
};

export const MiB = 1024 * 1024;

export async function measure<T>(
  work: () => Promise<T>,
): Promise<{ value: T; peakGrowth: number; elapsedMs: number }> {
  collectGarbage();
  const baseline = inUse();
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, inUse());
  }, 5);
  const started = performance.now();
  try {
    const value = await work();
    peak = Math.max(peak, inUse());
    return { value, peakGrowth: peak - baseline, elapsedMs: performance.now() - started };
  } finally {
    clearInterval(sampler);
  }
}
