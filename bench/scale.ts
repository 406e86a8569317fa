/**
 * Scale: a generated loopback world (bench/lib/scale-world.ts: every other address of 127.90.0.0/<n> a
 * live host; HTTP on every live host, SSH on every 4th, TLS on every 8th, a second web port on every
 * 16th; a zone with one name per host and PTR records) scanned by one embedded server seeded with the one
 * NetBlock, ports 22,80,443,8080, then by `nmap -sT` on the same targets and ports. Per size: wall time,
 * the growth exponent from the previous size, peak RSS of the server's process, bytes stored per live
 * host, the p99 and worst latency of GET /healthz and of a page of another collection's hosts polled
 * during the run (and their p99 with no run going), and the Sightline/nmap time ratio; on SQLite and on
 * PostgreSQL.
 *
 * Sizes: SIGHTLINE_BENCH_SCALE_SIZES (default "24,20"; "24,20,16" for the /16, which takes minutes and
 * needs about 47,000 sockets in the world process). Dialects: SIGHTLINE_BENCH_SCALE_DIALECTS (default
 * "sqlite,postgres"; PostgreSQL is skipped when it does not answer). SIGHTLINE_BENCH_SCALE_TRACE=1 adds
 * progress, memory and each module's time on stderr. SIGHTLINE_BENCH_SCALE_SEEDS: "netblock" (the default,
 * the issue's goals), "domain" (the zone alone, found by its transfer) or "both" (an organisation's block
 * and its domain: every host also reached by name, so the virtual-host look-ups run).
 * SIGHTLINE_BENCH_SCALE_DATABASE_CORE=n puts PostgreSQL on core n and everything else on the other cores,
 * as with the database on a machine of its own (below). Run alone as `npm run bench` runs it (its server is
 * in this process, so with the server's V8 flag): node --max-semi-space-size=4 bench/scale.ts
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { type RunningServer, startServer } from "../src/app/server.ts";
import { loadConfig } from "../src/core/config.ts";
import { whenCheckpointed } from "../src/store/large-commit.ts";
import { type Postgres, startPostgres } from "../test/faults/dependencies.ts";
import { POSTGRES_URL } from "../test/helpers/services.ts";
import { createTestStore, type TestStore } from "../test/helpers/stores.ts";
import { callApi } from "./lib/api.ts";
import { cpuSlice } from "./lib/cpu-slice.ts";
import { exec, startWorldProcess, stopWorldProcess, which } from "./lib/peer.ts";
import { postgresCpuSeconds, processCpuSeconds, redisCpuSeconds } from "./lib/process-cpu.ts";
import { WORLD_NET, WORLD_OCTET, ZONE } from "./lib/scale-world.ts";

const SIZES = (process.env.SIGHTLINE_BENCH_SCALE_SIZES ?? "24,20").split(",").map(Number);
const SEEDS = process.env.SIGHTLINE_BENCH_SCALE_SEEDS ?? "netblock";
if (!["netblock", "domain", "both"].includes(SEEDS))
  throw new Error(`SIGHTLINE_BENCH_SCALE_SEEDS takes netblock, domain or both, not "${SEEDS}"`);
/** The collection's seeds for the world's /<prefix>. */
const seedsOf = (prefix: number) => [
  ...(SEEDS === "domain" ? [] : [{ type: "NetBlock", name: `${WORLD_NET}/${prefix}` }]),
  ...(SEEDS === "netblock" ? [] : [{ type: "Domain", name: ZONE }]),
];
const DIALECTS = (process.env.SIGHTLINE_BENCH_SCALE_DIALECTS ?? "sqlite,postgres").split(",") as Array<
  "sqlite" | "postgres"
>;
const PORTS = "22,80,443,8080";
/**
 * SIGHTLINE_BENCH_SCALE_WORKERS=N[,N…]: on PostgreSQL, distributed mode as well, once per count — the
 * server only enqueues (on Redis, REDIS_URL or redis://127.0.0.1:6379) and N `sightline worker` processes
 * run the tasks. SIGHTLINE_BENCH_SCALE_PIN=1 pins worker i to core i (taskset), the server and the world
 * unpinned. SIGHTLINE_BENCH_SCALE_WORKER_CPU=C gives each worker C cores' worth of CPU time at most (a
 * control group of its own, as root): workers as machines of their own, more of them than this machine
 * has cores.
 */
const WORKERS = (process.env.SIGHTLINE_BENCH_SCALE_WORKERS ?? "")
  .split(",")
  .filter((count) => count.trim() !== "")
  .map((count) => {
    const workers = Number(count);
    if (!Number.isInteger(workers) || workers < 1)
      throw new Error(`SIGHTLINE_BENCH_SCALE_WORKERS takes worker counts like 1,2,4, not "${count}"`);
    return workers;
  });
const PIN = Boolean(process.env.SIGHTLINE_BENCH_SCALE_PIN);
const WORKER_CPU = process.env.SIGHTLINE_BENCH_SCALE_WORKER_CPU
  ? Number(process.env.SIGHTLINE_BENCH_SCALE_WORKER_CPU)
  : undefined;
/**
 * SIGHTLINE_BENCH_SCALE_DATABASE_CORE=n: PostgreSQL on a machine of its own. This process (the server and
 * its threads, the world, nmap: everything it starts) is pinned to every core but n, and PostgreSQL is a
 * server of the bench's own (initdb into a temporary folder, on DATABASE_HOST:DATABASE_PORT, PostgreSQL's
 * default settings) pinned to core n. SQLite runs on the same cores as Sightline does beside PostgreSQL,
 * so the two compare as with the database on a machine of its own: on one machine shared by all three,
 * PostgreSQL's server takes its CPU from Sightline's and the world's.
 */
const DATABASE_CORE = process.env.SIGHTLINE_BENCH_SCALE_DATABASE_CORE;
if (
  DATABASE_CORE !== undefined &&
  !(
    /^\d+$/.test(DATABASE_CORE) &&
    Number(DATABASE_CORE) < availableParallelism() &&
    availableParallelism() > 1
  )
)
  throw new Error(
    `SIGHTLINE_BENCH_SCALE_DATABASE_CORE takes the number of one of this machine's ${availableParallelism()} cores (0–${availableParallelism() - 1}), leaving Sightline at least one, not "${DATABASE_CORE}"`,
  );
const DATABASE_HOST = "127.127.0.2";
const DATABASE_PORT = 55434;
/**
 * A collection with results whose page of hosts the bench reads during the run, as a user browses one
 * collection while another runs (the run's own collection has no results until it finishes): the
 * world's first /25, 64 live hosts, run before the measured run.
 */
const BROWSED = `${WORLD_NET}/25`;
/**
 * The i-th read of it: a page of 50 or more hosts, each read a different page (offset and length), so that
 * each is read from the store and not answered from the result cache (a finished run's answers are kept).
 */
const browsedPage = (i: number) =>
  `/api/collections/browsed/hosts?limit=${50 + Math.floor(i / 14)}&offset=${i % 14}`;
/** The API's figures with no run going: polled every IDLE_GAP_MS for IDLE_MS, just before the run. */
const IDLE_MS = 3_000;
const IDLE_GAP_MS = 20;
/** How long a worker may take to start taking tasks (a quarter core took about 10 s). */
const WORKER_READY_MS = 120_000;
const REDIS = process.env.REDIS_URL || "redis://127.0.0.1:6379";
const BIN = fileURLToPath(new URL("../bin/sightline.js", import.meta.url));
/** SIGHTLINE_BENCH_SCALE_TURN_MS: with the trace, the turns of the loop logged are those longer than this. */
const TURN_MS = Number(process.env.SIGHTLINE_BENCH_SCALE_TURN_MS ?? 100);
if (!(TURN_MS > 0)) throw new Error("SIGHTLINE_BENCH_SCALE_TURN_MS takes a number of milliseconds above 0");
/** The event loop's delay is sampled by a timer of this period. */
const LOOP_RESOLUTION_MS = 10;
/** SIGHTLINE_BENCH_SCALE_TRACE=1: progress, memory and each module's time, on stderr. */
const TRACE = Boolean(process.env.SIGHTLINE_BENCH_SCALE_TRACE);
const KEYS = { access: "SLBENCHSCALEKEY001", secret: "bench-scale-secret-0123456789abcdef" };
/** The longest a run may take before the benchmark gives up on it. */
const RUN_LIMIT_MS = 30 * 60_000;

interface World {
  resolver: string;
  live: number;
  listeners: number;
  /** CPU seconds the world's processes have used so far (user and system; Linux's /proc). */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** Listeners one world process holds at most (the descriptor limit here is 20,000). */
const LISTENERS_PER_PROCESS = 15_000;

/** Starts the world in processes of its own, as many as its listeners need. */
async function startWorld(prefix: number): Promise<World> {
  const script = fileURLToPath(new URL("./lib/scale-world.ts", import.meta.url));
  // About 1.44 listeners per live host, half the block live.
  const parts = Math.max(1, Math.ceil((2 ** (32 - prefix) * 0.72) / LISTENERS_PER_PROCESS));
  const started = await Promise.all(
    Array.from({ length: parts }, (_, part) =>
      startWorldProcess<Omit<World, "stop" | "cpuSeconds">>(
        script,
        [String(prefix), String(part), String(parts)],
        "the scale world",
      ),
    ),
  );
  return {
    resolver: started[0].info.resolver,
    live: started.reduce((sum, { info }) => sum + info.live, 0),
    listeners: started.reduce((sum, { info }) => sum + info.listeners, 0),
    cpuSeconds: () => started.reduce((sum, { child }) => sum + processCpuSeconds(child.pid), 0),
    stop: async () => {
      await Promise.all(started.map(({ child }) => stopWorldProcess(child)));
    },
  };
}

/** Calls the API with the bench's key pair; throws on anything but 2xx. */
const api = (server: RunningServer, method: string, path: string, body?: unknown) =>
  callApi(server.url, KEYS, method, path, body);

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};

interface Measured {
  seconds: number;
  peakRssMb: number;
  bytesPerHost: number;
  hosts: number;
  healthP99: number;
  healthMax: number;
  listP99: number;
  listMax: number;
  /** The same requests' p99 (ms) with no run going, just before the run. */
  healthIdleP99: number;
  listIdleP99: number;
  /** The event loop's p99 and longest delay (ms): how long the server's thread was busy before a timer ran. */
  loopP99: number;
  loopMax: number;
  samples: number;
  /** CPU seconds of the server's process (all its threads) and workers', and of the world's, during the run. */
  cpuSeconds: number;
  /** Of cpuSeconds, the workers' (distributed mode). */
  workersCpuSeconds: number;
  worldCpuSeconds: number;
  /** PostgreSQL's server on this machine (SQLite's work is in the server's process). */
  databaseCpuSeconds: number | undefined;
  /** PostgreSQL's write-ahead log written during the run (bytes). */
  walBytes: number | undefined;
  /** Redis's server on this machine, in distributed mode. */
  redisCpuSeconds: number | undefined;
  tasks: number;
}

/**
 * The SQLite database's size with its write-ahead log folded in (by a connection of its own), once the
 * thread copying a large commit's log back is done: a checkpoint that truncates cannot run beside it
 * (it answers busy and leaves the log as it is, a run's merge and more).
 */
async function directoryBytes(dir: string): Promise<number> {
  await whenCheckpointed();
  const file = join(dir, "sightline.db");
  const database = new DatabaseSync(file);
  try {
    database.exec("PRAGMA busy_timeout = 5000;");
    const { busy } = database.prepare("PRAGMA wal_checkpoint(TRUNCATE)").get() as { busy: number };
    if (Number(busy) !== 0) console.error("the write-ahead log could not be folded in: its size counts");
  } finally {
    database.close();
  }
  return readdirSync(dir)
    .filter((name) => name.startsWith("sightline.db"))
    .reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
}

/**
 * pg's client, loaded when first needed: the server runs in this process, and a SQLite run measures its
 * heap (and its collections' pauses) without a PostgreSQL driver it never loads itself.
 */
const postgresClient = async () => (await import("pg")).default.Client;

/**
 * The server's write-ahead log position (bytes since its start), so a run's WAL is the difference: the
 * whole server's, any other database's writes meanwhile included.
 */
async function walPosition(url: string): Promise<number> {
  const client = new (await postgresClient())({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query("select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') as bytes");
    return Number(rows[0].bytes);
  } finally {
    await client.end().catch(() => {});
  }
}

/** PostgreSQL's version and whether autovacuum runs (CI's server has it off), for the report; empty without a server. */
async function postgresServer(url: string): Promise<string> {
  const client = new (await postgresClient())({ connectionString: url });
  try {
    await client.connect();
    const { rows } = await client.query(
      "select current_setting('server_version') as version, current_setting('autovacuum') as autovacuum",
    );
    return ` PostgreSQL's server: ${rows[0].version}, autovacuum ${rows[0].autovacuum}.`;
  } catch {
    return "";
  } finally {
    await client.end().catch(() => {});
  }
}

async function databaseBytes(url: string): Promise<number> {
  const client = new (await postgresClient())({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query("select pg_database_size(current_database()) as bytes");
    if (TRACE) {
      // Where the bytes are: each table with its indexes and TOAST, and the dead rows it still holds.
      const tables = await client.query(
        `select relname, pg_total_relation_size(relid) as total, pg_indexes_size(relid) as indexes,
                n_live_tup, n_dead_tup, last_autovacuum, last_vacuum
           from pg_stat_user_tables order by 2 desc limit 12`,
      );
      for (const row of tables.rows)
        console.error(
          `  ${row.relname}: ${(Number(row.total) / 2 ** 20).toFixed(1)} MB (indexes ${(Number(row.indexes) / 2 ** 20).toFixed(1)}), ${row.n_live_tup} live, ${row.n_dead_tup} dead rows; vacuumed ${row.last_vacuum ?? "never"}, autovacuumed ${row.last_autovacuum ?? "never"}`,
        );
      const indexes = await client.query(
        `select indexrelname, relname, pg_relation_size(indexrelid) as bytes
           from pg_stat_user_indexes order by 3 desc limit 12`,
      );
      for (const row of indexes.rows)
        console.error(
          `  index ${row.indexrelname} on ${row.relname}: ${(Number(row.bytes) / 2 ** 20).toFixed(1)} MB`,
        );
    }
    return Number(result.rows[0].bytes);
  } finally {
    await client.end();
  }
}

/** `sightline worker` processes of the store and Redis prefix given; their CPU seconds so far, and a stop. */
async function startWorkers(count: number, databaseUrl: string, prefix: string) {
  const slices =
    WORKER_CPU === undefined
      ? []
      : Array.from({ length: count }, (_, i) => cpuSlice(`sightline-bench-${process.pid}-${i}`, WORKER_CPU));
  const children = Array.from({ length: count }, (_, i) => {
    const command = [process.execPath, "--max-semi-space-size=4", BIN, "worker"];
    const pinned = PIN ? ["taskset", "-c", String(i % availableParallelism()), ...command] : command;
    const started = slices[i]?.wrap(pinned) ?? pinned;
    return spawn(started[0], started.slice(1), {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        DATABASE_URL: databaseUrl,
        REDIS_URL: REDIS,
        SIGHTLINE_REDIS_PREFIX: prefix,
        SIGHTLINE_LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
  });
  const pool = {
    cpuSeconds: () => children.reduce((sum, child) => sum + processCpuSeconds(child.pid), 0),
    stop: async () => {
      await Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null) return resolve();
              child.once("exit", () => resolve());
              child.kill("SIGTERM");
            }),
        ),
      );
      for (const slice of slices) slice.remove();
    },
  };
  // Ready once each has said it takes tasks: a worker on a small CPU budget takes seconds to load, which
  // is not what the run costs. (Bounded: one that never says so fails the bench.)
  try {
    await Promise.all(
      children.map(
        (child, i) =>
          new Promise<void>((resolve, reject) => {
            const timer = setTimeout(
              () => reject(new Error(`worker ${i} did not take tasks within ${WORKER_READY_MS / 1000} s`)),
              WORKER_READY_MS,
            );
            let said = "";
            child.stdout!.on("data", (chunk: Buffer) => {
              said += chunk.toString();
              if (!said.includes("is taking run tasks")) return;
              clearTimeout(timer);
              resolve();
            });
            child.once("exit", (code) => {
              clearTimeout(timer);
              reject(new Error(`worker ${i} exited (${code}) before taking tasks`));
            });
          }),
      ),
    );
  } catch (error) {
    await pool.stop();
    throw error;
  }
  return pool;
}

async function runSightline(
  prefix: number,
  world: World,
  dialect: "sqlite" | "postgres",
  postgresUrl: string,
  workers = 0,
): Promise<Measured> {
  const store: TestStore = await createTestStore(dialect, postgresUrl);
  const redisPrefix = `sightline-bench-scale-${process.pid}-${prefix}-${workers}`;
  const server = await startServer(
    // The SIGHTLINE_* settings of the environment apply (to compare, say, SIGHTLINE_TASK_CONCURRENCY).
    loadConfig(process.env, {
      ...store.config,
      port: 0,
      host: "127.0.0.1",
      logLevel: "silent",
      bootstrapAccessKey: KEYS.access,
      bootstrapSecretKey: KEYS.secret,
      dnsServers: [world.resolver],
      scanAllow: [`${WORLD_NET}/16`, `127.${WORLD_OCTET + 1}.0.0/16`],
      // The lab is the whole world: no passive source outside it is asked, no permutation guessed.
      sources: ["none"],
      permutations: 0,
      ports: PORTS,
      schedulerIntervalSeconds: 86_400,
      runTimeLimitSeconds: RUN_LIMIT_MS / 1000,
      ...(workers > 0 ? { redisUrl: REDIS, redisPrefix } : {}),
    }),
  );
  let distributed: Awaited<ReturnType<typeof startWorkers>> | undefined;
  let polling = true;
  const closed = false;
  const pollers: Promise<void>[] = [];
  try {
    // Inside the try: workers that fail to start still leave the server closed and the store dropped.
    if (workers > 0) distributed = await startWorkers(workers, store.config.databaseUrl, redisPrefix);
    // The API as a user sees it: /healthz, and a page of hosts of a collection with results (BROWSED).
    await api(server, "POST", "/api/collections", {
      name: "browsed",
      seeds: [{ type: "NetBlock", name: BROWSED }],
    });
    await runToEnd(server, "browsed");
    // Storage is the growth over the measured run (the browsed collection's results are already in).
    const emptyBytes =
      dialect === "sqlite"
        ? await directoryBytes(store.config.dataDir)
        : await databaseBytes(store.config.databaseUrl);
    await api(server, "POST", "/api/collections", {
      name: "scale",
      seeds: seedsOf(prefix),
    });
    const health: number[] = [];
    const list: number[] = [];
    const poll = async (path: () => string, into: number[], authenticated: boolean, gapMs = 100) => {
      while (polling) {
        const started = performance.now();
        const url = path();
        const response = await fetch(`${server.url}${url}`, {
          headers: authenticated ? { SERVICE_ACCESS_KEY: KEYS.access, SERVICE_SECRET_KEY: KEYS.secret } : {},
        });
        await response.arrayBuffer();
        const took = performance.now() - started;
        into.push(took);
        if (TRACE && took > 500)
          console.error(
            `${url} took ${Math.round(took)} ms, ${((started - runStarted) / 1000).toFixed(1)} s into the run`,
          );
        await new Promise((resolve) => setTimeout(resolve, gapMs));
      }
    };
    let pageReads = 0;
    const pollBoth = (into: { health: number[]; list: number[] }, gapMs?: number) => [
      poll(() => "/healthz", into.health, false, gapMs),
      poll(() => browsedPage(pageReads++), into.list, true, gapMs),
    ];
    let runStarted = performance.now();
    let peakRss = process.memoryUsage.rss();
    const rssTimer = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage.rss());
    }, 200);
    const memoryTimer = TRACE
      ? setInterval(() => {
          const m = process.memoryUsage();
          const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MB`;
          console.error(
            `memory: RSS ${mb(m.rss)}, main thread's heap ${mb(m.heapUsed)} used of ${mb(m.heapTotal)}, external ${mb(m.external)}`,
          );
        }, 2000)
      : undefined;
    // Warm: the first request of a route compiles its schemas; that is not what a run costs.
    await api(server, "GET", browsedPage(pageReads++));
    await fetch(`${server.url}/healthz`).then((response) => response.arrayBuffer());
    // The same requests with no run going, for the run's figures to be compared with (IDLE_MS).
    const idle = { health: [] as number[], list: [] as number[] };
    const idlePollers = pollBoth(idle, IDLE_GAP_MS);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    polling = false;
    await Promise.all(idlePollers);
    polling = true;
    // The server's thread (this one) as a timer sees it: the longest it held every request.
    // It records the time between two ticks of a 10 ms timer, so an idle loop reads 10 ms: the delay is
    // what it records less the 10 ms (LOOP_RESOLUTION_MS).
    const loopDelay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
    loopDelay.enable();
    const started = performance.now();
    runStarted = started;
    // With the trace, each turn of the loop that held it over TURN_MS (100 ms), and when: to match against the
    // progress lines, by its monotonic time against a --cpu-prof of the same run (the profile's clock), or
    // by the process's milliseconds against --trace-gc (its "N ms:").
    // Each such turn says how much of it the thread ran and how much it waited for a core (Linux's
    // schedstat of this thread): on a busy machine a turn is late by the wait too.
    let lastTick = performance.now();
    let lastSchedule = TRACE ? threadSchedule() : undefined;
    const firstSchedule = lastSchedule;
    const turnTimer = TRACE
      ? setInterval(() => {
          const now = performance.now();
          const schedule = threadSchedule();
          if (now - lastTick > TURN_MS) {
            const split =
              schedule && lastSchedule
                ? `, on a core ${Math.round(schedule.runMs - lastSchedule.runMs)} ms and waiting for one ${Math.round(schedule.waitMs - lastSchedule.waitMs)} ms`
                : "";
            console.error(
              `event loop held ${Math.round(now - lastTick)} ms${split}, at process ${now.toFixed(0)} ms, until ${((now - started) / 1000).toFixed(1)} s (monotonic ${process.hrtime.bigint() / 1000n} µs)`,
            );
          }
          lastTick = now;
          lastSchedule = schedule;
        }, 5)
      : undefined;
    const cpuBefore = process.cpuUsage();
    const workersCpuBefore = distributed?.cpuSeconds() ?? 0;
    const worldCpuBefore = world.cpuSeconds();
    const databaseCpuBefore = dialect === "postgres" ? postgresCpuSeconds() : undefined;
    const walBefore = dialect === "postgres" ? await walPosition(store.config.databaseUrl) : undefined;
    const redisCpuBefore = workers > 0 ? redisCpuSeconds() : undefined;
    const { id } = (await api(server, "POST", "/api/collections/scale/schedule")) as { id: string };
    pollers.push(...pollBoth({ health, list }));
    // Where the CPU went so far (the discovery and the finish apart, in the trace).
    const traceCpu = () => {
      const own = process.cpuUsage(cpuBefore);
      const parts = [
        `Sightline ${((own.user + own.system) / 1e6 + (distributed?.cpuSeconds() ?? 0) - workersCpuBefore).toFixed(1)} s`,
        `world ${(world.cpuSeconds() - worldCpuBefore).toFixed(1)} s`,
      ];
      if (databaseCpuBefore !== undefined)
        parts.push(`PostgreSQL ${((postgresCpuSeconds() ?? 0) - databaseCpuBefore).toFixed(1)} s`);
      return parts.join(", ");
    };
    let tasks = 0;
    await untilFinished(server, "scale", id, `the /${prefix} run`, 250, (run) => {
      tasks = run.tasks_total;
      if (TRACE)
        console.error(
          `${((performance.now() - started) / 1000).toFixed(1)} s: ${run.status}, ${run.tasks_done}/${run.tasks_total} tasks; CPU so far ${traceCpu()}`,
        );
    });
    const seconds = (performance.now() - started) / 1000;
    loopDelay.disable();
    clearInterval(turnTimer);
    const lastScheduled = threadSchedule();
    if (firstSchedule && lastScheduled)
      console.error(
        `the server's thread ran ${((lastScheduled.runMs - firstSchedule.runMs) / 1000).toFixed(1)} s of the run's ${seconds.toFixed(1)} s and waited ${((lastScheduled.waitMs - firstSchedule.waitMs) / 1000).toFixed(1)} s for a core`,
      );
    const cpu = process.cpuUsage(cpuBefore);
    const workersCpu = (distributed?.cpuSeconds() ?? 0) - workersCpuBefore;
    if (TRACE) {
      // What the run found, to compare modes: entities by kind and issues.
      const db = server.services.store.db;
      const kinds = await db
        .selectFrom("entities")
        .select(["kind", (eb) => eb.fn.countAll<number>().as("n")])
        .where("latest", "=", 1)
        .groupBy("kind")
        .orderBy("kind")
        .execute();
      const issues = await db
        .selectFrom("findings")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("latest", "=", 1)
        .executeTakeFirstOrThrow();
      console.error(`found: ${kinds.map((row) => `${row.kind} ${row.n}`).join(", ")}; issues ${issues.n}`);
      // Where the run's time went: each module's time on its entities (network waits included).
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const sums = new Map<string, number[]>();
      for (const m of text.matchAll(
        /^sightline_discovery_module_seconds_(sum|count)\{module="([^"]+)"\} (\S+)/gm,
      )) {
        const entry = sums.get(m[2]) ?? [0, 0];
        entry[m[1] === "sum" ? 0 : 1] = Number(m[3]);
        sums.set(m[2], entry);
      }
      for (const [module, [sum, count]] of [...sums].sort((a, b) => b[1][0] - a[1][0]))
        console.error(
          `${module}: ${sum.toFixed(1)} s over ${count} tasks, ${((sum / count) * 1000).toFixed(1)} ms each`,
        );
    }
    const worldCpuSeconds = world.cpuSeconds() - worldCpuBefore;
    const databaseCpuAfter = databaseCpuBefore === undefined ? undefined : postgresCpuSeconds();
    const databaseCpuSeconds =
      databaseCpuBefore === undefined || databaseCpuAfter === undefined
        ? undefined
        : databaseCpuAfter - databaseCpuBefore;
    const walBytes =
      walBefore === undefined ? undefined : (await walPosition(store.config.databaseUrl)) - walBefore;
    const redisCpuAfter = redisCpuBefore === undefined ? undefined : redisCpuSeconds();
    const redisCpu =
      redisCpuBefore === undefined || redisCpuAfter === undefined
        ? undefined
        : redisCpuAfter - redisCpuBefore;
    polling = false;
    await Promise.all(pollers);
    clearInterval(rssTimer);
    clearInterval(memoryTimer);
    // What a run leaves is measured once its task bookkeeping, cleared in the background after the run
    // ends, has gone and its space been given back.
    const tasksLeft = async () =>
      Number(
        (
          await server.services.store.db
            .selectFrom("run_tasks")
            .select((eb) => eb.fn.countAll<number>().as("n"))
            .where("run_id", "=", Number(id))
            .executeTakeFirstOrThrow()
        ).n,
      );
    // (Bounded, should the benchmark be run on a version that keeps them.)
    const clearing = performance.now();
    while ((await tasksLeft()) > 0 && performance.now() - clearing < 5 * 60_000)
      await new Promise((resolve) => setTimeout(resolve, 100));
    await server.runs.coordinator.whenCleared?.();
    const hosts = (await api(server, "GET", "/api/collections/scale/hosts?limit=1")) as unknown;
    const total = await countHosts(server);
    const bytes =
      (dialect === "sqlite"
        ? await directoryBytes(store.config.dataDir)
        : await databaseBytes(store.config.databaseUrl)) - emptyBytes;
    void hosts;
    return {
      seconds,
      peakRssMb: peakRss / 2 ** 20,
      bytesPerHost: bytes / world.live,
      hosts: total,
      healthP99: percentile(health, 99),
      healthMax: Math.max(0, ...health),
      listP99: percentile(list, 99),
      listMax: Math.max(0, ...list),
      healthIdleP99: percentile(idle.health, 99),
      listIdleP99: percentile(idle.list, 99),
      loopP99: Math.max(0, loopDelay.percentile(99) / 1e6 - LOOP_RESOLUTION_MS),
      loopMax: Math.max(0, loopDelay.max / 1e6 - LOOP_RESOLUTION_MS),
      samples: health.length + list.length,
      cpuSeconds: (cpu.user + cpu.system) / 1e6 + workersCpu,
      workersCpuSeconds: workersCpu,
      worldCpuSeconds,
      databaseCpuSeconds,
      walBytes,
      redisCpuSeconds: redisCpu,
      tasks,
    };
  } finally {
    polling = false;
    await Promise.allSettled(pollers);
    await distributed?.stop();
    if (!closed) await server.close();
    // SIGHTLINE_BENCH_SCALE_KEEP=1 keeps the database for a look (its folder or URL is printed; drop it after).
    if (process.env.SIGHTLINE_BENCH_SCALE_KEEP)
      console.error(`kept ${dialect === "sqlite" ? store.config.dataDir : store.config.databaseUrl}`);
    else await store.drop();
  }
}

/**
 * This thread's time on a core and waiting for one so far (ms), from Linux's /proc/thread-self/schedstat;
 * undefined elsewhere.
 */
function threadSchedule(): { runMs: number; waitMs: number } | undefined {
  try {
    const [run, wait] = readFileSync("/proc/thread-self/schedstat", "utf8").split(" ").map(Number);
    return { runMs: run / 1e6, waitMs: wait / 1e6 };
  } catch {
    return undefined;
  }
}

interface RunState {
  status: string;
  error?: string;
  tasks_total: number;
  tasks_done: number;
}

/**
 * Reads run `id` of the collection every `everyMs` (each state to `onPoll`) until it is finished; throws,
 * naming it `what`, when it ends otherwise or takes over RUN_LIMIT_MS.
 */
async function untilFinished(
  server: RunningServer,
  collection: string,
  id: string,
  what: string,
  everyMs: number,
  onPoll: (run: RunState) => void = () => {},
): Promise<void> {
  const started = performance.now();
  for (;;) {
    const run = (await api(server, "GET", `/api/collections/${collection}/runs/${id}`)) as RunState;
    onPoll(run);
    if (run.status === "finished") return;
    if (!["queued", "started"].includes(run.status))
      throw new Error(`${what} ended ${run.status}: ${run.error ?? ""}`);
    if (performance.now() - started > RUN_LIMIT_MS)
      throw new Error(`${what} took over ${RUN_LIMIT_MS / 60000} minutes`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Forces a run of the collection and waits for it to finish and its task bookkeeping to be cleared. */
async function runToEnd(server: RunningServer, collection: string): Promise<void> {
  const { id } = (await api(server, "POST", `/api/collections/${collection}/schedule`)) as { id: string };
  await untilFinished(server, collection, id, `the run of ${collection}`, 100);
  await server.runs.coordinator.whenCleared?.();
}

/** Hosts in the results with an open port, counted from the hosts list's total. */
async function countHosts(server: RunningServer): Promise<number> {
  const response = await fetch(`${server.url}/api/collections/scale/hosts?limit=1`, {
    headers: { SERVICE_ACCESS_KEY: KEYS.access, SERVICE_SECRET_KEY: KEYS.secret },
  });
  await response.arrayBuffer();
  return Number(response.headers.get("x-total-count") ?? Number.NaN);
}

async function runNmap(nmap: string, prefix: number): Promise<{ seconds: number; hosts: number }> {
  const started = performance.now();
  const { stdout } = await exec(
    nmap,
    ["-sT", "-Pn", "-n", "-T4", "-p", PORTS, "--open", "-oG", "-", `${WORLD_NET}/${prefix}`],
    { maxBuffer: 256 * 1024 * 1024 },
  );
  const seconds = (performance.now() - started) / 1000;
  const hosts = stdout
    .split("\n")
    .filter((line) => line.includes("Ports:") && line.includes("/open/")).length;
  return { seconds, hosts };
}

const fixed = (value: number, digits = 1) => value.toFixed(digits);

export const scaleBench = {
  name: "scale",
  async run(): Promise<string> {
    const nmap = await which("nmap");
    const ownDatabase = DATABASE_CORE === undefined ? undefined : await splitCores(DATABASE_CORE);
    try {
      return await measureSizes(nmap, ownDatabase?.url ?? POSTGRES_URL, ownDatabase?.note ?? "");
    } finally {
      await ownDatabase?.postgres?.destroy();
    }
  },
};

/**
 * Pins this process to every core but `core` and, when PostgreSQL is measured, starts a server of the
 * bench's own pinned to `core` (SIGHTLINE_BENCH_SCALE_DATABASE_CORE).
 */
async function splitCores(core: string): Promise<{ postgres?: Postgres; url?: string; note: string }> {
  const others = Array.from({ length: availableParallelism() }, (_, i) => i).filter(
    (i) => i !== Number(core),
  );
  await exec("taskset", ["-a", "-p", "-c", others.join(","), String(process.pid)]);
  const cores = `Sightline, its world and nmap ran on core${others.length > 1 ? "s" : ""} ${others.join(", ")} only`;
  if (!DIALECTS.includes("postgres")) return { note: ` ${cores}.` };
  const postgres = await startPostgres({
    host: DATABASE_HOST,
    port: DATABASE_PORT,
    settings: "",
    cores: core,
  });
  return {
    postgres,
    url: postgres.url,
    note: ` ${cores}, PostgreSQL on core ${core} (a server of the bench's own with PostgreSQL's default settings): the database as on a machine of its own.`,
  };
}

async function measureSizes(nmap: string | undefined, postgresUrl: string, split: string): Promise<string> {
  const server = DIALECTS.includes("postgres") ? await postgresServer(postgresUrl) : "";
  const rows: string[] = [];
  const exponents: string[] = [];
  const previous = new Map<string, { prefix: number; seconds: number }>();
  const verdicts: string[] = [];
  /** Each embedded run's time, by size and store: PostgreSQL's goal is SQLite's time. */
  const embeddedSeconds = new Map<number, { sqlite: number[]; postgres: number[] }>();
  for (const prefix of SIZES) {
    const world = await startWorld(prefix);
    try {
      const peer = nmap ? await runNmap(nmap, prefix) : undefined;
      const variants = DIALECTS.flatMap(
        (
          dialect,
        ): Array<{
          dialect: "sqlite" | "postgres";
          workers: number;
          label: string;
        }> => [
          { dialect, workers: 0, label: dialect },
          ...(dialect === "postgres"
            ? WORKERS.map((workers) => ({
                dialect,
                workers,
                label: `postgres, ${workers} worker${workers > 1 ? "s" : ""}${PIN ? " (pinned)" : ""}${WORKER_CPU === undefined ? "" : ` of ${WORKER_CPU} core${WORKER_CPU === 1 ? "" : "s"} each`}`,
              }))
            : []),
        ],
      );
      for (const { dialect, workers, label } of variants) {
        let measured: Measured;
        try {
          measured = await runSightline(prefix, world, dialect, postgresUrl, workers);
        } catch (error) {
          rows.push(`| /${prefix} | ${label} | failed: ${(error as Error).message} |`);
          continue;
        }
        const before = previous.get(label);
        // A size repeated (DIALECTS=sqlite,postgres,sqlite,… for interleaved pairs) has no growth to show.
        const exponent =
          before && before.prefix !== prefix
            ? Math.log(measured.seconds / before.seconds) / Math.log(2 ** (before.prefix - prefix))
            : undefined;
        if (exponent !== undefined)
          exponents.push(`${label} /${before!.prefix}→/${prefix}: ${fixed(exponent, 2)}`);
        previous.set(label, { prefix, seconds: measured.seconds });
        if (workers === 0) {
          // The exponent's goal is from /20 to /16.
          const fromTwenty = before?.prefix === 20 ? exponent : undefined;
          verdicts.push(`/${prefix} ${label}: ${goalVerdicts(prefix, measured, fromTwenty)}`);
          const times = embeddedSeconds.get(prefix) ?? { sqlite: [], postgres: [] };
          times[dialect].push(measured.seconds);
          embeddedSeconds.set(prefix, times);
        }
        rows.push(
          `| /${prefix} | ${label} | ${world.live} | ${measured.hosts} | ${measured.tasks} | ${fixed(measured.seconds)} s | ${Math.round(measured.cpuSeconds)} s (${fixed((measured.cpuSeconds * 1000) / measured.tasks, 2)} ms/task${workers > 0 ? `; workers ${Math.round(measured.workersCpuSeconds)} s` : ""}) | ${Math.round(measured.worldCpuSeconds)} s | ${measured.databaseCpuSeconds === undefined ? "–" : `${fixed(measured.databaseCpuSeconds)} s`}${measured.walBytes === undefined ? "" : `; WAL ${Math.round(measured.walBytes / 2 ** 20)} MB`}${measured.redisCpuSeconds === undefined ? "" : `; Redis ${fixed(measured.redisCpuSeconds)} s`} | ${exponent === undefined ? "–" : fixed(exponent, 2)} | ${Math.round(measured.peakRssMb)} MB | ${Math.round(measured.bytesPerHost)} B | ${fixed(measured.healthP99)} / ${fixed(measured.healthMax)} ms (idle ${fixed(measured.healthIdleP99)}) | ${fixed(measured.listP99)} / ${fixed(measured.listMax)} ms (idle ${fixed(measured.listIdleP99)}) | ${fixed(measured.loopP99)} / ${fixed(measured.loopMax)} ms | ${peer ? `${fixed(peer.seconds)} s (${peer.hosts} hosts)` : "–"} | ${peer ? fixed(measured.seconds / peer.seconds) : "–"} |`,
        );
        console.error(rows[rows.length - 1]);
      }
    } finally {
      await world.stop();
    }
  }
  return [
    `One embedded server (in-process queue, default settings, ports ${PORTS}) seeded with ${SEEDS === "netblock" ? "one NetBlock" : SEEDS === "domain" ? `the domain ${ZONE} alone (its zone transferred)` : `one NetBlock and the domain ${ZONE} (its zone transferred)`} of the generated world (every other address live: HTTP on each, SSH on every 4th, TLS with one shared certificate on every 8th, 8080 on every 16th; one name and PTR record per live host), run to the end; \`nmap -sT -Pn -n -T4\` on the same block and ports in the same run. Peak RSS is the server's process (this one); storage is the database's growth over the run per live host; the API columns are p99 / worst of \`/healthz\` and of a page of hosts of another collection with results (the world's first /25, run before; each read a different page, so none is answered from the result cache), polled every 100 ms during the run, and in brackets their p99 with no run going (polled every 20 ms for 3 s just before it; their client is in the server's process, so its own work on the answers counts too); the event loop's delay is how late a timer of the server's thread ran (perf_hooks' monitorEventLoopDelay: the time between two ticks of a 10 ms timer, less the 10 ms), the longest being the longest any request could wait on the run's work. CPU is user and system seconds during the run: Sightline's process (all its threads; with workers, the server's and the workers' together, the workers' share named), the world's processes, which answer every probe on the same cores (real targets answer on their own machines), and PostgreSQL's server when it runs on this machine (all of it: autovacuum and any other client's work included; SQLite works inside Sightline's process), with the write-ahead log the server wrote during the run beside it (the whole server's), and Redis's CPU in distributed mode.${WORKER_CPU === undefined ? "" : ` Each worker ran in a control group of its own allowed ${WORKER_CPU} cores' worth of CPU time: a worker on a machine of its own, smaller than this one's.`} Goals (issue 16): /16 ≤ 3 min, exponent ≤ 1.05 from /20 to /16, RSS ≤ 800 MB, API p99 ≤ 100 ms, ≤ 8 KB per live host, PostgreSQL no slower than SQLite.${split}${server}${nmap ? "" : " nmap is not installed (apt-get install nmap): no peer figures."}`,
    "",
    "| block | store | live hosts | hosts found | tasks | run | Sightline CPU | world CPU | database CPU | exponent | peak RSS | stored per host | /healthz p99 / max | hosts page p99 / max | event loop's delay p99 / max | nmap -sT | Sightline/nmap |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows,
    "",
    exponents.length > 0 ? `Growth exponents: ${exponents.join("; ")}.` : "",
    "",
    `Goals, judged on each embedded run (the time and the exponent are the /16's): ${[
      ...verdicts,
      ...[...embeddedSeconds]
        .filter(([, times]) => times.sqlite.length > 0 && times.postgres.length > 0)
        .map(([prefix, times]) => {
          const ratio = mean(times.postgres) / mean(times.sqlite);
          return `/${prefix} PostgreSQL against SQLite ${fixed(ratio, 2)}× (≤ 1: ${verdict(ratio <= 1)})`;
        }),
    ].join("; ")}.`,
  ].join("\n");
}

const verdict = (met: boolean) => (met ? "met" : "missed");
const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

/** The issue's goals that one run can meet, each with its figure. */
function goalVerdicts(prefix: number, measured: Measured, exponent: number | undefined): string {
  const p99 = Math.max(measured.healthP99, measured.listP99);
  return [
    ...(prefix === 16 ? [`${fixed(measured.seconds)} s (≤ 180 s: ${verdict(measured.seconds <= 180)})`] : []),
    ...(prefix === 16 && exponent !== undefined
      ? [`exponent from /20 ${fixed(exponent, 2)} (≤ 1.05: ${verdict(exponent <= 1.05)})`]
      : []),
    `${Math.round(measured.peakRssMb)} MB (≤ 800 MB: ${verdict(measured.peakRssMb <= 800)})`,
    `API p99 ${fixed(p99)} ms (≤ 100 ms: ${verdict(p99 <= 100)})`,
    `${Math.round(measured.bytesPerHost)} B per host (≤ 8,000 B: ${verdict(measured.bytesPerHost <= 8000)})`,
  ].join(", ");
}

export default scaleBench;

if (import.meta.url === `file://${process.argv[1]}`) console.log(await scaleBench.run());
