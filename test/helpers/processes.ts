/** Real `sightline` child processes (server, worker, client commands) for tests that need more than one process. */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

export interface Sightline {
  child: ChildProcess;
  pid: number;
  /** stdout and stderr so far, interleaved as they arrived. */
  output(): string;
  /** stdout alone so far. */
  stdout(): string;
  /** Resolves with the first output line matching `pattern`; fails with the output after the timeout or on exit. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** Resolves once the process has exited and its stdout and stderr are read to the end. */
  closed: Promise<void>;
  /** SIGTERM, then SIGKILL if still running after `graceMs`. */
  stop(graceMs?: number): Promise<number | string>;
}

/**
 * Runs `node src/cli/main.ts ...args` with only the given environment on top of PATH and HOME, and `input`
 * (if given) on its standard input.
 */
export function spawnSightline(
  args: string[],
  env: Record<string, string>,
  options: { input?: string } = {},
): Sightline {
  const child = spawn(process.execPath, [MAIN, ...args], {
    // Runs do real discovery: its DNS stays on loopback (nothing answers there) unless a test says otherwise.
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      SIGHTLINE_DNS_SERVERS: "127.0.0.1:53",
      // Passive sources are outside services: none is asked unless a test brings its fakes.
      SIGHTLINE_SOURCES: "none",
      SIGHTLINE_PERMUTATIONS: "0",
      ...env,
    },
    stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  if (options.input !== undefined) child.stdin?.end(options.input);
  let output = "";
  let stdout = "";
  const listeners = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
    collect(chunk);
  });
  child.stderr?.on("data", collect);
  const exited = new Promise<number | string>((resolve) =>
    child.once("exit", (code, signal) => {
      resolve(code ?? signal ?? "unknown");
      for (const listener of listeners) listener();
    }),
  );
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  let done = false;
  void exited.then(() => {
    done = true;
  });

  const waitForLine = (pattern: RegExp, timeoutMs = 15_000) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const line = output.split("\n").find((l) => pattern.test(l));
        if (line !== undefined) finish(() => resolve(line));
        else if (done)
          finish(() => reject(new Error(`process exited before printing ${pattern}:\n${output}`)));
      };
      const timer = setTimeout(
        () =>
          finish(() => reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms:\n${output}`))),
        timeoutMs,
      );
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        listeners.delete(check);
        settle();
      };
      listeners.add(check);
      check();
    });

  return {
    child,
    pid: child.pid ?? -1,
    output: () => output,
    stdout: () => stdout,
    closed,
    waitForLine,
    exited,
    async stop(graceMs = 10_000) {
      if (done) return exited;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

/**
 * Runs a client command (`sightline collections …`, `run …`, `results …`) against a test server, with
 * its URL and the admin's keys in the environment, `home` as HOME and `input` on its standard input;
 * answers the exit code and output.
 */
export async function runClientCommand(
  server: { url: string; admin: { accessKey: string; secretKey: string } },
  home: string,
  args: string[],
  env: Record<string, string> = {},
  input?: string,
): Promise<{ code: number | string; output: string; stdout: string }> {
  const child = spawnSightline(
    args,
    {
      HOME: home,
      SIGHTLINE_URL: server.url,
      SERVICE_ACCESS_KEY: server.admin.accessKey,
      SERVICE_SECRET_KEY: server.admin.secretKey,
      ...env,
    },
    { input },
  );
  await child.closed;
  return { code: await child.exited, output: child.output(), stdout: child.stdout() };
}
