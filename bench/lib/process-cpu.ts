/**
 * CPU time of processes from /proc, for the benchmarks that report what a peer or a database used beside
 * Sightline (Linux only; elsewhere the figures are absent).
 */
import { readdirSync, readFileSync } from "node:fs";

/** /proc/<pid>/stat: the command's name and the fields after it (from field 3), or undefined once it has gone. */
function processStat(pid: number | string | undefined): { command: string; fields: string[] } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const end = stat.lastIndexOf(")");
    return { command: stat.slice(stat.indexOf("(") + 1, end), fields: stat.slice(end + 2).split(" ") };
  } catch {
    return undefined;
  }
}

/** User and system CPU seconds of one process (fields 14 and 15 of its stat, in clock ticks). */
export function processCpuSeconds(pid: number | undefined): number {
  const fields = processStat(pid)?.fields;
  return fields ? (Number(fields[11]) + Number(fields[12])) / 100 : 0;
}

/**
 * CPU seconds of this machine's Redis servers so far (every `redis-server` process: the one distributed
 * mode uses, and any other), or undefined when none is visible here.
 */
export function redisCpuSeconds(): number | undefined {
  let ticks: number | undefined;
  for (const { fields } of processesNamed("redis-server"))
    ticks = (ticks ?? 0) + Number(fields[11]) + Number(fields[12]);
  return ticks === undefined ? undefined : ticks / 100;
}

/** The processes running `command` now, each with its pid and stat fields (from field 3). */
function* processesNamed(command: string): Generator<{ pid: number; fields: string[] }> {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = processStat(entry); // undefined: the process ended while the list was read
    if (stat?.command === command) yield { pid: Number(entry), fields: stat.fields };
  }
}

/**
 * CPU seconds of this machine's PostgreSQL server so far: its live processes, and the backends that have
 * exited, which the postmaster has reaped (its children's time). Undefined when no PostgreSQL process is
 * visible here (a server on another machine, or in a container of its own).
 */
export function postgresCpuSeconds(): number | undefined {
  const servers = new Map<number, { ppid: number; own: number; children: number }>();
  for (const { pid, fields } of processesNamed("postgres")) {
    servers.set(pid, {
      ppid: Number(fields[1]),
      own: Number(fields[11]) + Number(fields[12]),
      children: Number(fields[13]) + Number(fields[14]),
    });
  }
  if (servers.size === 0) return undefined;
  let ticks = 0;
  for (const { ppid, own, children } of servers.values()) ticks += own + (servers.has(ppid) ? 0 : children);
  return ticks / 100;
}
