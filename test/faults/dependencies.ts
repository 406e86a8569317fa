/**
 * Dependencies a fault test may stop and start at will: a PostgreSQL cluster of its own (initdb/pg_ctl
 * from Debian's packages, on 127.127.0.1:55433) and a redis-server of its own (127.127.0.1:56380, with an
 * append-only file so a restart keeps the queue, as BullMQ asks of production Redis). The shared
 * services on 5432/6379 are never touched.
 */
import { execFile, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Ports of the suite's own servers (loopback only); SIGHTLINE_FAULT_PG_PORT / _REDIS_PORT move them. */
/**
 * The loopback address of the suite's own servers: not 127.0.0.1, where the ports (in the kernel's
 * ephemeral range) can be held by any client's connection to the machine's own PostgreSQL or Redis —
 * redis-server once failed to bind 127.0.0.1:56380 so.
 */
export const FAULT_HOST = "127.127.0.1";
export const FAULT_PG_PORT = Number(process.env.SIGHTLINE_FAULT_PG_PORT ?? 55433);
export const FAULT_REDIS_PORT = Number(process.env.SIGHTLINE_FAULT_REDIS_PORT ?? 56380);

/** Whether something already listens on the suite's address and port (another copy of this suite, say). */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: FAULT_HOST, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** The directory of PostgreSQL's server binaries (the newest installed), or undefined. */
function postgresBin(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((name) => existsSync(join(root, name, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(root, versions[0], "bin") : undefined;
}

function redisBin(): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(":").concat(["/usr/bin", "/usr/sbin"]))
    if (dir && existsSync(join(dir, "redis-server"))) return join(dir, "redis-server");
  return undefined;
}

/** undefined when the suite can run; otherwise why not. Under CI, missing binaries or busy ports are an error. */
export async function faultSkipReason(): Promise<string | undefined> {
  const busy = [FAULT_PG_PORT, FAULT_REDIS_PORT].filter((port) => port > 0);
  for (const port of busy)
    if (await listening(port)) {
      const reason = `the fault-injection suite needs ${FAULT_HOST}:${port} free (SIGHTLINE_FAULT_PG_PORT / SIGHTLINE_FAULT_REDIS_PORT move it)`;
      if (process.env.CI) throw new Error(`${reason}, and CI requires the suite`);
      return `${reason}; skipping it`;
    }
  const missing = [
    postgresBin()
      ? undefined
      : "PostgreSQL's initdb/pg_ctl (/usr/lib/postgresql/*/bin, Debian package postgresql)",
    redisBin() ? undefined : "redis-server (Debian package redis-server)",
  ].filter(Boolean);
  if (missing.length === 0) return undefined;
  const reason = `the fault-injection suite needs ${missing.join(" and ")}`;
  if (process.env.CI) throw new Error(`${reason}, and CI requires it`);
  return `${reason}; skipping it (it is required when CI is set)`;
}

/** initdb refuses to run as root: then the cluster belongs to the `postgres` user. */
const asRoot = process.getuid?.() === 0;

async function asOwner(command: string, args: string[]): Promise<void> {
  if (asRoot) await run("runuser", ["-u", "postgres", "--", command, ...args], { timeout: 60_000 });
  else await run(command, args, { timeout: 60_000 });
}

export interface Postgres {
  url: string;
  /** Stops the server (fast: clients are disconnected at once, as in a crash or failover). */
  stop(): Promise<void>;
  /**
   * Crashes the server (an immediate stop: no checkpoint, as a killed server or a lost machine): its next
   * start recovers from the write-ahead log and empties the unlogged tables.
   */
  crash(): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes the cluster. */
  destroy(): Promise<void>;
}

/**
 * A cluster of its own, on `host`:`port` (the suite's by default). `settings` are the server's command-line
 * settings (the suite's: no fsync, as nothing of it needs to outlive the test); `cores` pins the server
 * and every process it starts to those CPUs (taskset's list), as on a machine of its own.
 */
export async function startPostgres(
  options: { host?: string; port?: number; settings?: string; cores?: string } = {},
): Promise<Postgres> {
  const {
    host = FAULT_HOST,
    port = FAULT_PG_PORT,
    settings = "-c fsync=off -c max_connections=100",
  } = options;
  const bin = postgresBin();
  if (!bin) throw new Error("PostgreSQL binaries not found");
  const dir = mkdtempSync(join(tmpdir(), "sightline-faults-pg-"));
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    chownSync(dir, Number(stdout), Number(gid));
  }
  const data = join(dir, "data");
  await asOwner(join(bin, "initdb"), [
    "-D",
    data,
    "-U",
    "postgres",
    "--auth=trust",
    "-E",
    "UTF8",
    "--no-sync",
  ]);
  const serverOptions = `-p ${port} -c listen_addresses=${host} -c unix_socket_directories=${dir} ${settings}`;
  const pgCtl = join(bin, "pg_ctl");
  const ctl = (args: string[]) =>
    options.cores === undefined
      ? asOwner(pgCtl, ["-D", data, ...args])
      : asOwner("taskset", ["-c", options.cores, pgCtl, "-D", data, ...args]);
  let running = false;
  const postgres: Postgres = {
    url: `postgres://postgres@${host}:${port}/postgres`,
    async start() {
      await ctl(["-o", serverOptions, "-l", join(dir, "server.log"), "-w", "-t", "30", "start"]);
      running = true;
    },
    async stop() {
      await ctl(["-m", "fast", "-w", "-t", "30", "stop"]);
      running = false;
    },
    async crash() {
      await ctl(["-m", "immediate", "-w", "-t", "30", "stop"]);
      running = false;
    },
    async destroy() {
      if (running) await postgres.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await postgres.start();
  } catch (error) {
    await postgres.destroy();
    throw error;
  }
  return postgres;
}

export interface RedisServer {
  url: string;
  /** SIGKILL: the server vanishes mid-command; the append-only file (fsync always) keeps what it acknowledged. */
  kill(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

export async function startRedis(): Promise<RedisServer> {
  const bin = redisBin();
  if (!bin) throw new Error("redis-server not found");
  const dir = mkdtempSync(join(tmpdir(), "sightline-faults-redis-"));
  let child: ReturnType<typeof spawn> | undefined;
  let exited: Promise<void> = Promise.resolve();
  const server: RedisServer = {
    url: `redis://${FAULT_HOST}:${FAULT_REDIS_PORT}`,
    async start() {
      const started = spawn(
        bin,
        [
          "--port",
          String(FAULT_REDIS_PORT),
          "--bind",
          FAULT_HOST,
          "--dir",
          dir,
          "--save",
          "",
          "--appendonly",
          "yes",
          "--appendfsync",
          "always",
          "--maxmemory-policy",
          "noeviction",
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      child = started;
      exited = new Promise((resolve) => started.once("exit", () => resolve()));
      let output = "";
      started.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString();
      });
      started.stderr?.on("data", (chunk: Buffer) => {
        output += chunk.toString();
      });
      const until = Date.now() + 15_000;
      while (!/Ready to accept connections/.test(output)) {
        if (started.exitCode !== null) throw new Error(`redis-server exited:\n${output}`);
        if (Date.now() > until) {
          started.kill("SIGKILL");
          throw new Error(`redis-server did not start:\n${output}`);
        }
        await sleep(20);
      }
    },
    async kill() {
      child?.kill("SIGKILL");
      await exited;
      child = undefined;
    },
    async destroy() {
      await server.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await server.start();
  } catch (error) {
    await server.destroy();
    throw error;
  }
  return server;
}
