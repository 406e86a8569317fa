/**
 * A CPU budget for one process and its threads, as a machine of its own would give it: a control group
 * with a CFS quota (Linux, as root; cgroup v2's cpu.max or v1's cpu controller). The distributed bench
 * uses it to stand in for workers on separate machines when this one has fewer cores than workers.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const PERIOD_US = 100_000;

interface Hierarchy {
  root: string;
  limit(dir: string, cores: number): void;
}

/** Where CPU quotas can be set on this machine, or why they cannot. */
function hierarchy(): Hierarchy | string {
  const unified = "/sys/fs/cgroup";
  const controllers = join(unified, "cgroup.controllers");
  if (existsSync(controllers) && readFileSync(controllers, "utf8").split(/\s+/).includes("cpu"))
    return {
      root: unified,
      limit: (dir, cores) =>
        writeFileSync(join(dir, "cpu.max"), `${Math.round(cores * PERIOD_US)} ${PERIOD_US}`),
    };
  const v1 = "/sys/fs/cgroup/cpu";
  if (existsSync(join(v1, "cpu.cfs_quota_us")))
    return {
      root: v1,
      limit: (dir, cores) => {
        writeFileSync(join(dir, "cpu.cfs_period_us"), String(PERIOD_US));
        writeFileSync(join(dir, "cpu.cfs_quota_us"), String(Math.round(cores * PERIOD_US)));
      },
    };
  return "no cgroup CPU controller is mounted (cgroup v2's cpu, or v1's /sys/fs/cgroup/cpu)";
}

export interface CpuSlice {
  /** The command, started inside the slice: a shell joins the group, then execs it. */
  wrap(command: string[]): string[];
  /** Removes the group (its processes must have exited). */
  remove(): void;
}

/** A control group named `name` that lets its processes use `cores` CPUs' worth of time at most. */
export function cpuSlice(name: string, cores: number): CpuSlice {
  if (!(cores > 0)) throw new Error(`a CPU slice needs a positive number of cores, not ${cores}`);
  const found = hierarchy();
  if (typeof found === "string") throw new Error(`CPU slices are unavailable: ${found}`);
  const dir = join(found.root, name);
  try {
    mkdirSync(dir);
    found.limit(dir, cores);
  } catch (error) {
    throw new Error(
      `cannot make the CPU slice ${dir} (${(error as Error).message}): run the bench as root, on Linux`,
    );
  }
  const procs = join(dir, "cgroup.procs");
  return {
    wrap: (command) => ["sh", "-c", `echo $$ > '${procs}' && exec "$@"`, "sh", ...command],
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // Still has a process (one that did not exit): the group goes with the machine's next boot.
      }
    },
  };
}
