/**
 * Results at scale: a collection of 10,000 hosts (≈ 60,000 entities: 10,000 hosts, 25,000 services,
 * 20,000 applications, 5,000 names, netblocks; 5,000 issues; products and CVEs per application) built in
 * the store through the real merge, served by `sightline serve` in its own process, on SQLite and
 * PostgreSQL. For /applications, /hosts and /issues, unpaged and paged (limit=100):
 *   - time to first byte and to the whole response (median of sequential requests);
 *   - requests per second under concurrent load (wrk, 2 threads; 8 connections paged, 2 unpaged);
 *   - the server's peak RSS while answering;
 * next to a plain node:http server answering the same bytes from memory in the same run (the limit:
 * nothing to read, nothing to serialise), reported as a ratio. Each is measured cold (the first request
 * of a URL, and under load a second server on the same store with the result cache off: every answer
 * read from the database) and warm (answered from the result cache); and repeats that send the answer's
 * ETag to the server with the cache off, answered 304 before any row is read. Peak RSS is also measured at a
 * quarter and at twice the size, to show whether memory grows with the collection: from the small size
 * to the full one most of the growth is V8's committed heap becoming resident; past it, ≈3% a doubling.
 *
 * Run alone: node bench/results.ts. Knobs: BENCH_RESULTS_HOSTS (10000), BENCH_RESULTS_SMALL_HOSTS
 * (2500), BENCH_RESULTS_LARGE_HOSTS (twice BENCH_RESULTS_HOSTS; 0 skips it), BENCH_RESULTS_SECONDS
 * (seconds of wrk per paged measurement, 3; unpaged ones get 5/3 of it),
 * BENCH_RESULTS_ROUNDS (rounds of warm and limit rates, taken in turns, 3; medians reported),
 * BENCH_RESULTS_DIALECTS (sqlite,postgres), BENCH_RESULTS_RSS_SERVERS (fresh servers whose peak RSS
 * is measured per size, 3; the median is reported), BENCH_RESULTS_CPU_PROF (a folder: the cached server writes
 * a V8 CPU profile there).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { openStore } from "../src/store/database.ts";
import { migrateToLatest } from "../src/store/migrate.ts";
import { buildRun, type FixtureCollection, fixtureCounts } from "../test/helpers/result-fixtures.ts";
import { POSTGRES_URL, serviceSkipReason } from "../test/helpers/services.ts";
import { createTestStore, type TestStore } from "../test/helpers/stores.ts";
import { exec, which } from "./lib/peer.ts";

const knob = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const FULL_HOSTS = knob("BENCH_RESULTS_HOSTS", 10_000);
const SMALL_HOSTS = knob("BENCH_RESULTS_SMALL_HOSTS", 2_500);
const LARGE_HOSTS = knob("BENCH_RESULTS_LARGE_HOSTS", 2 * FULL_HOSTS);
/** Sizes whose peak RSS is measured (the full one also under load), smallest first; a 0 knob drops its size. */
const RSS_SIZES = [...new Set([SMALL_HOSTS, FULL_HOSTS, LARGE_HOSTS])]
  .filter((hosts) => hosts > 0)
  .sort((a, b) => a - b);
const LOAD_SECONDS = knob("BENCH_RESULTS_SECONDS", 3);
const DIALECTS = (process.env.BENCH_RESULTS_DIALECTS ?? "sqlite,postgres").split(",");
const CPU_PROFILE = process.env.BENCH_RESULTS_CPU_PROF;
const RSS_SERVERS = knob("BENCH_RESULTS_RSS_SERVERS", 3);
const LOAD_ROUNDS = knob("BENCH_RESULTS_ROUNDS", 3);
const KEYS = { access: "SLBENCHRESULTSKEY", secret: "bench-results-secret-0123456789abcdef" };
/** The bootstrap admin's key pair, as request headers. */
const AUTH = { SERVICE_ACCESS_KEY: KEYS.access, SERVICE_SECRET_KEY: KEYS.secret };
const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const ENDPOINTS = ["applications", "hosts", "issues"] as const;

interface Server {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

async function serve(store: TestStore, options: { cache: boolean; profile?: string }): Promise<Server> {
  const profile = options.profile ? ["--cpu-prof", `--cpu-prof-dir=${options.profile}`] : [];
  const child: ChildProcess = spawn(process.execPath, [...profile, MAIN, "serve"], {
    env: {
      ...(options.cache ? {} : { SIGHTLINE_RESULT_CACHE_BYTES: "0" }),
      PATH: process.env.PATH ?? "",
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      SIGHTLINE_DATA_DIR: store.config.dataDir,
      DATABASE_URL: store.config.databaseUrl,
      SIGHTLINE_BOOTSTRAP_ACCESS_KEY: KEYS.access,
      SIGHTLINE_BOOTSTRAP_SECRET_KEY: KEYS.secret,
      SIGHTLINE_SCHEDULER_INTERVAL: "86400",
      SIGHTLINE_DNS_SERVERS: "127.0.0.1:53",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let buffer = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const match = /listening on (http:\/\/[^\s]+)/.exec(buffer);
      if (match) resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`sightline serve exited with ${code}`)));
  });
  return {
    url,
    pid: child.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** Peak resident memory of a process since the last reset (Linux: VmHWM, reset through clear_refs). */
function peakRss(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) * 1024 : Number.NaN;
}
function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

/** One GET: milliseconds to the first byte and to the end, and the body. */
function timedGet(url: string, headers: Record<string, string>) {
  return new Promise<{ firstByte: number; total: number; body: Buffer; contentType: string }>(
    (resolve, reject) => {
      const started = performance.now();
      let firstByte = 0;
      const request = httpRequest(url, { headers }, (response) => {
        const parts: Buffer[] = [];
        response.on("data", (part: Buffer) => {
          if (!firstByte) firstByte = performance.now() - started;
          parts.push(part);
        });
        response.on("end", () =>
          resolve({
            firstByte,
            total: performance.now() - started,
            body: Buffer.concat(parts),
            contentType: String(response.headers["content-type"]),
          }),
        );
        response.on("error", reject);
      });
      request.on("error", reject);
      request.end();
    },
  );
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function wrkRate(
  url: string,
  headers: Record<string, string>,
  seconds: number,
  connections: number,
): Promise<number> {
  const args = ["-t2", `-c${connections}`, `-d${seconds}s`, "--timeout", "30s"];
  for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`);
  const { stdout } = await exec("wrk", [...args, url], { maxBuffer: 1 << 20 });
  // A rate of error answers is no rate: fail loudly rather than report it.
  const errors = /Non-2xx or 3xx responses:\s+(\d+)|Socket errors:.*/.exec(stdout);
  if (errors) throw new Error(`wrk ${url}: ${errors[0]}`);
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? Number.NaN);
}

/** A node:http server answering each path with the bytes given for it, from memory. */
async function memoryServer(bodies: Map<string, { body: Buffer; contentType: string }>) {
  const server = createServer((request, response) => {
    const found = bodies.get(request.url ?? "");
    if (!found) return response.writeHead(404).end();
    response.writeHead(200, { "content-type": found.contentType, "content-length": found.body.length });
    response.end(found.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** A collection of `hosts` hosts in the server's store, owned by the bootstrap admin. */
async function build(
  store: TestStore,
  server: Server,
  hosts: number,
): Promise<{ name: string; seconds: number }> {
  const headers = { ...AUTH, "content-type": "application/json" };
  const name = `bench-${hosts}`;
  const created = await fetch(`${server.url}/api/collections`, {
    method: "POST",
    headers,
    body: JSON.stringify({ name, seeds: [{ type: "Domain", name: "corp.example" }] }),
  });
  if (!created.ok) throw new Error(`creating the collection failed: ${await created.text()}`);
  const opened = openStore(store.config);
  try {
    await migrateToLatest(opened);
    const row = await opened.db
      .selectFrom("collections")
      .select("id")
      .where("name", "=", name)
      .executeTakeFirstOrThrow();
    const collection: FixtureCollection = { collectionId: row.id, name };
    const started = performance.now();
    // A finished run made now: a server started later does not run the collection by itself (automatic
    // runs count from its newest run), which, with no DNS here, would find nothing and replace it.
    await buildRun(opened.db, collection, { hosts });
    return { name, seconds: (performance.now() - started) / 1000 };
  } finally {
    await opened.close();
  }
}

interface Timing {
  firstByte: number;
  total: number;
}

interface Row {
  endpoint: string;
  paged: boolean;
  bytes: number;
  /** The first request of the URL: read from the database. */
  cold: Timing;
  /** Median of the requests after it: answered from the result cache. */
  warm: Timing;
  coldRate: number;
  /** Medians of the rounds. */
  warmRate: number;
  /** Repeats that send the answer's ETag, on the server with the cache off: 304s decided before any row is read. */
  notModifiedRate: number;
  limit: number;
  /** Warm over limit, round by round. */
  warmRatios: number[];
}

/** A page from the middle of each list: offsets cost what they skip, so the first page would flatter. */
function pathOf(name: string, endpoint: (typeof ENDPOINTS)[number], paged: boolean, hosts: number) {
  const counts = fixtureCounts(hosts);
  const total = { applications: counts.Uri, hosts: counts.IpAddress, issues: counts.issues }[endpoint];
  return `/api/collections/${name}/${endpoint}${paged ? `?limit=100&offset=${Math.floor(total / 2)}` : ""}`;
}

/**
 * Every list above, one request after another on `server`: each URL once cold, then from the cache; the
 * timings per URL and the bodies.
 */
async function answerEveryList(server: Server, name: string, hosts: number) {
  const rows: Row[] = [];
  const bodies = new Map<string, { body: Buffer; contentType: string }>();
  for (const endpoint of ENDPOINTS)
    for (const paged of [false, true]) {
      const path = pathOf(name, endpoint, paged, hosts);
      const times = [];
      for (let i = 0; i < (paged ? 21 : 4); i++) times.push(await timedGet(`${server.url}${path}`, AUTH));
      const [cold, ...warm] = times;
      if (warm.some((time) => !time.body.equals(cold.body)))
        throw new Error(`${path}: a cached answer differs from the first`);
      bodies.set(path, cold);
      rows.push({
        endpoint,
        paged,
        bytes: cold.body.length,
        cold,
        warm: {
          firstByte: median(warm.map((t) => t.firstByte)),
          total: median(warm.map((t) => t.total)),
        },
        coldRate: Number.NaN,
        warmRate: Number.NaN,
        notModifiedRate: Number.NaN,
        limit: Number.NaN,
        warmRatios: [],
      });
    }
  return { rows, bodies };
}

async function measureDialect(dialect: "sqlite" | "postgres", hasWrk: boolean) {
  const lines: string[] = [];
  // Peak RSS while answering every list unpaged, one request after another, in a fresh server per size
  // (before any concurrent load, which sizes the heap by how many responses are in flight).
  const peaks = new Map<number, number[]>();
  for (const hosts of RSS_SIZES) {
    const store = await createTestStore(dialect);
    const full = hosts === FULL_HOSTS;
    const server = await serve(store, { cache: true, profile: full ? CPU_PROFILE : undefined });
    // Started before the collection exists: a server's scheduler, on its first tick, would run it (and
    // find nothing, as the bench has no DNS).
    const uncached = full ? await serve(store, { cache: false }) : undefined;
    try {
      const { name, seconds } = await build(store, server, hosts);
      const counts = fixtureCounts(hosts);
      const entities =
        counts.IpAddress + counts.DnsRecord + counts.NetworkService + counts.Uri + counts.NetBlock;
      console.error(
        `  ${dialect}: built ${entities} entities and ${counts.issues} issues in ${seconds.toFixed(1)} s`,
      );
      resetPeak(server.pid);
      const { rows, bodies } = await answerEveryList(server, name, hosts);
      // One process's peak differs from the next one's by tens of MB (it depends on when V8 collects):
      // more fresh servers on the same store answer the same sequence, and the median is reported.
      const sizePeaks = [peakRss(server.pid)];
      for (let i = 1; i < RSS_SERVERS; i++) {
        const fresh = await serve(store, { cache: true });
        try {
          resetPeak(fresh.pid);
          const again = await answerEveryList(fresh, name, hosts);
          for (const [path, { body }] of again.bodies)
            if (!body.equals(bodies.get(path)!.body))
              throw new Error(`${path}: another server answered otherwise`);
          sizePeaks.push(peakRss(fresh.pid));
        } finally {
          await fresh.stop();
        }
      }
      peaks.set(hosts, sizePeaks);
      if (!full) continue;

      // Under load: Sightline warm and the memory server with the same bytes in turns, then Sightline with the cache off.
      resetPeak(server.pid);
      const memory = await memoryServer(bodies);
      try {
        for (const row of rows) {
          const path = pathOf(name, row.endpoint as (typeof ENDPOINTS)[number], row.paged, hosts);
          // Unpaged bodies are megabytes: two connections, longer, so that some responses complete.
          const [connections, seconds] = row.paged
            ? [8, LOAD_SECONDS]
            : [2, Math.ceil((LOAD_SECONDS * 5) / 3)];
          if (!hasWrk) continue;
          // Sightline and the limit in turns, several rounds: one 3 s rate moves by half from one round to
          // the next on this shared machine, and both sides of a ratio should see the same moment.
          const warm: number[] = [];
          const limits: number[] = [];
          for (let round = 0; round < LOAD_ROUNDS; round++) {
            warm.push(await wrkRate(`${server.url}${path}`, AUTH, seconds, connections));
            limits.push(await wrkRate(`${memory.url}${path}`, {}, seconds, connections));
          }
          row.warmRate = median(warm);
          row.limit = median(limits);
          row.warmRatios = warm.map((rate, round) => rate / limits[round]);
          row.coldRate = await wrkRate(`${uncached!.url}${path}`, AUTH, seconds, connections);
          // Identity-encoded, as wrk asks: each encoding has its own ETag.
          const probe = await fetch(`${uncached!.url}${path}`, {
            headers: { ...AUTH, "accept-encoding": "identity" },
          });
          const etag = probe.headers.get("etag");
          await probe.body?.cancel();
          if (!etag) throw new Error(`${path}: no ETag on the answer`);
          row.notModifiedRate = await wrkRate(
            `${uncached!.url}${path}`,
            { ...AUTH, "If-None-Match": etag },
            LOAD_SECONDS,
            8,
          );
        }
      } finally {
        await memory.close();
      }
      const loadPeak = peakRss(server.pid);
      const ms = (time: Timing) =>
        `${time.firstByte.toFixed(1)} / ${time.total.toFixed(time.total < 10 ? 1 : 0)} ms`;
      const ratio = (rate: number, limit: number) => (rate / limit).toFixed(limit / rate > 100 ? 3 : 2);
      const ratios = (values: number[]) =>
        values.length === 0
          ? "–"
          : `${median(values).toFixed(2)} (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`;
      lines.push(
        `### ${dialect === "sqlite" ? "SQLite" : "PostgreSQL"}: ${entities.toLocaleString("en")} entities, ${counts.issues.toLocaleString("en")} issues (built in ${seconds.toFixed(0)} s)`,
        "",
        `| endpoint | body | cold: first byte / whole | warm: first byte / whole | cold req/s | warm req/s | 304 req/s, cache off | memory server req/s | cold ratio | 304 ratio | warm ratio: median of ${LOAD_ROUNDS} rounds (range) |`,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ...rows.map(
          (row) =>
            `| /${row.endpoint}${row.paged ? " (limit=100, from the middle)" : ""} | ${mb(row.bytes)} | ${ms(row.cold)} | ${ms(row.warm)} | ${row.coldRate.toFixed(1)} | ${row.warmRate.toFixed(1)} | ${row.notModifiedRate.toFixed(1)} | ${row.limit.toFixed(1)} | ${ratio(row.coldRate, row.limit)} | ${ratio(row.notModifiedRate, row.limit)} | ${ratios(row.warmRatios)} |`,
        ),
        "",
        `Peak RSS of the cached server under the load above: ${mb(loadPeak)}.`,
        "",
      );
    } finally {
      await uncached?.stop();
      await server.stop();
      await store.drop();
    }
  }
  const range = (values: number[]) => `${mb(Math.min(...values))}–${mb(Math.max(...values))}`;
  const medians = RSS_SIZES.map((hosts) => median(peaks.get(hosts)!));
  const steps = RSS_SIZES.map((hosts, i) => {
    const peak = `${mb(medians[i])} (${range(peaks.get(hosts)!)}) at ${hosts.toLocaleString("en")} hosts`;
    if (i === 0) return peak;
    const growth = medians[i] / medians[i - 1];
    return `${peak} (${(hosts / RSS_SIZES[i - 1]).toFixed(0)}× the entities and bytes of the size before: ×${growth.toFixed(2)})`;
  });
  lines.push(
    `Peak RSS answering every list above one request at a time (each URL cold once, then from the cache), median of ${RSS_SERVERS} fresh servers: ${steps.join("; ")}.`,
    "",
  );
  return lines.join("\n");
}

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(bytes < 2 ** 20 ? 2 : 1)} MB`;

export const scenario = {
  name: "results",
  async run(): Promise<string> {
    const hasWrk = (await which("wrk")) !== undefined;
    const sections = [
      "## Results at scale",
      "",
      `\`sightline serve\` in its own process answering a collection built in its store; the memory server is a plain \`node:http\` server answering the same bytes from memory (the limit). Requests are identity-encoded (no compression). **Cold** is read from the database: the first request of each URL, and under load a second \`sightline serve\` on the same store with the result cache off (\`SIGHTLINE_RESULT_CACHE_BYTES=0\`); **warm** is answered from the result cache (a finished run's answers never change; the cache is per process, so each URL is cold once per server). Warm times are medians of the sequential requests after the first (3 unpaged, 20 paged); req/s from wrk with 2 threads, 8 connections for ${LOAD_SECONDS} s (paged) or 2 connections for ${Math.ceil((LOAD_SECONDS * 5) / 3)} s (unpaged: bodies of megabytes). Warm and memory-server rates are taken in turns, ${LOAD_ROUNDS} rounds; the tables show their medians, and the warm ratio is the median of the rounds' ratios with their range (this machine's two cores run wrk and the server, and one round's rate can move by half from the next one's). Ratios are Sightline's req/s over the memory server's. Peak RSS is the server's VmHWM (Linux).`,
      "",
    ];
    if (!hasWrk) sections.push("wrk is missing (`apt-get install wrk`): no request rates were measured.", "");
    if (DIALECTS.includes("sqlite")) sections.push(await measureDialect("sqlite", hasWrk));
    const skip = await serviceSkipReason("PostgreSQL", POSTGRES_URL);
    if (DIALECTS.includes("postgres"))
      sections.push(skip ? `PostgreSQL: not measured: ${skip}.` : await measureDialect("postgres", hasWrk));
    return sections.join("\n");
  },
};

if (import.meta.url === `file://${process.argv[1]}`) console.log(await scenario.run());
