/** What benchmarks share: the lab in a child process, timing, and finding peer tools. */
import { type ChildProcessByStdio, execFile, spawn } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { ApplicationTruth } from "../../test/lab/index.ts";

export const exec = promisify(execFile);

export interface LabInfo {
  resolver: string;
  names: string[];
  hosts: Array<{ ip: string; ports: number[] }>;
  applications: ApplicationTruth[];
}

type WorldProcess = ChildProcessByStdio<Writable, Readable, null>;

/**
 * Starts a world process of the benchmarks (a script that prints one JSON line when it is ready and ends
 * when its stdin closes): answers the child and what it printed.
 */
export async function startWorldProcess<Info>(
  script: string,
  args: string[],
  what: string,
): Promise<{ child: WorldProcess; info: Info }> {
  const child = spawn(process.execPath, [script, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  const line = await new Promise<string>((resolve, reject) => {
    let buffer = "";
    child.stdout.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const end = buffer.indexOf("\n");
      if (end >= 0) resolve(buffer.slice(0, end));
    });
    child.once("exit", (code) => reject(new Error(`${what} exited with ${code} before it was ready`)));
  });
  return { child, info: JSON.parse(line) as Info };
}

/** Ends a world process started by startWorldProcess (it ends when its stdin closes). */
export const stopWorldProcess = (child: WorldProcess) =>
  new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.stdin.end();
  });

/** Starts bench/lib/lab-process.ts; `stop` ends it. */
export async function startLabProcess(hosts?: number): Promise<LabInfo & { stop(): Promise<void> }> {
  const script = fileURLToPath(new URL("./lab-process.ts", import.meta.url));
  const { child, info } = await startWorldProcess<LabInfo>(
    script,
    hosts ? [String(hosts)] : [],
    "the lab process",
  );
  return { ...info, stop: () => stopWorldProcess(child) };
}

/** The path of a peer tool, or undefined when it is not installed. */
export async function which(tool: string): Promise<string | undefined> {
  try {
    return (await exec("sh", ["-c", `command -v ${tool}`])).stdout.trim() || undefined;
  } catch {
    return undefined;
  }
}

export async function timed<T>(work: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const start = performance.now();
  const value = await work();
  return { value, seconds: (performance.now() - start) / 1000 };
}

export const NOT_INSTALLED = (tool: string, install: string) =>
  `**${tool} is not installed**, so there is no peer figure in this run (install it with \`${install}\`).`;
