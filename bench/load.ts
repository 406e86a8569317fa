/**
 * API under load while discovery runs: wrk sends a mix of reads and writes to the API for a minute while
 * two runs execute against the lab (each run is forced again as soon as it ends, so two are in progress
 * the whole time), then the same load on GET /healthz as the baseline, in the same conditions. Reported:
 * requests per second, p50/p99 latency, error responses (there must be none) and the ratio of the API's
 * p99 to the baseline's. The lab runs in its own process, wrk in its own; the server in this one.
 *
 * Run alone: node bench/load.ts   (SIGHTLINE_BENCH_LOAD_SECONDS sets each phase's length, default 60;
 * SIGHTLINE_BENCH_LOAD_HOSTS the lab's hosts, default 400 — 1200 gives runs of about 6,000 tasks). The
 * peak RSS of the process holding the server is reported against issue 19's goal of 700 MB.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { type RunningServer, startServer } from "../src/app/server.ts";
import { loadConfig } from "../src/core/config.ts";
import { callApi } from "./lib/api.ts";
import { exec, NOT_INSTALLED, startLabProcess, which } from "./lib/peer.ts";

const SECONDS = Number(process.env.SIGHTLINE_BENCH_LOAD_SECONDS ?? 60);
const THREADS = 2;
const CONNECTIONS = 16;
/** Lab hosts: two blocks of 200, one per collection, each a run of several seconds over the top-100 ports. */
const HOSTS = Number(process.env.SIGHTLINE_BENCH_LOAD_HOSTS ?? 400);
/** The lab numbers its hosts 200 to a /24 from .10 on (bench/lib/lab-process.ts): each run gets half the blocks. */
const blocks = (base: string, half: 0 | 1) => {
  const count = Math.ceil(HOSTS / 200);
  const mine = Array.from({ length: count }, (_, i) => i).filter((i) =>
    count === 1 ? half === 0 : i % 2 === half,
  );
  return mine.map((i) => ({ type: "NetBlock", name: `${base}.${10 + i}.0/24` }));
};
const KEYS = { access: "SLBENCHLOADKEY0001", secret: "bench-load-secret-0123456789abcdef" };
/** Issue 19's goal for the server's resident memory under this mixed load. */
const RSS_GOAL_BYTES = 700 * 1024 * 1024;

/** Peak resident memory of this process (the server runs in it) since the last reset (Linux: VmHWM). */
function peakRss(): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
    return match ? Number(match[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}
function resetPeakRss(): void {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
  } catch {}
}

/**
 * wrk's script: each request is one of ten, by a per-thread counter — six reads (collections, one
 * collection, its runs, a page of hosts, the overview of a running collection, its seeds) and four
 * writes (add a new seed, force a run — which answers the active run's id — create a
 * collection and then delete its seeds). `done` prints the figures as one JSON line.
 */
const SCRIPT = `
local mode = os.getenv("LOAD_MODE")
local threads = {}
local counter = 0
-- Globals, as wrk's thread:set and thread:get see them: this thread's number, its error responses.
id = 0
failures = {}
wrk.headers["SERVICE_ACCESS_KEY"] = os.getenv("LOAD_ACCESS_KEY")
wrk.headers["SERVICE_SECRET_KEY"] = os.getenv("LOAD_SECRET_KEY")
wrk.headers["Content-Type"] = "application/json"

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

request = function()
  if mode == "healthz" then return wrk.format("GET", "/healthz") end
  counter = counter + 1
  local step = counter % 10
  local name = function(n) return "w" .. id .. "-" .. n end
  if step == 0 then return wrk.format("GET", "/api/collections")
  elseif step == 1 then return wrk.format("GET", "/api/collections/load-a")
  elseif step == 2 then return wrk.format("GET", "/api/collections/load-a/runs")
  elseif step == 3 then return wrk.format("GET", "/api/collections/load-a/hosts?limit=50")
  elseif step == 4 then return wrk.format("GET", "/api/collections/load-b/runs")
  elseif step == 5 then return wrk.format("GET", "/api/collections/load-b/hosts?limit=50&offset=50")
  elseif step == 6 then
    return wrk.format("POST", "/api/collections/load-writes", nil,
      '{"seeds":[{"type":"Domain","name":"' .. name(counter) .. '.example"}]}')
  elseif step == 7 then return wrk.format("POST", "/api/collections/load-a/schedule")
  elseif step == 8 then
    return wrk.format("POST", "/api/collections", nil,
      '{"name":"' .. name(counter) .. '","seeds":[{"type":"IpAddress","name":"192.0.2.1"}]}')
  elseif counter > 20 then
    -- The collection made a cycle ago: requests of one thread are in flight on several connections.
    return wrk.format("DELETE", "/api/collections/" .. name(counter - 11) .. "/seeds")
  else return wrk.format("GET", "/api/collections/load-b") end
end

response = function(status, headers, body)
  if status >= 400 then failures[status] = (failures[status] or 0) + 1 end
end

done = function(summary, latency, requests)
  local e = summary.errors
  local totals = {}
  for _, thread in ipairs(threads) do
    for code, count in pairs(thread:get("failures")) do totals[code] = (totals[code] or 0) + count end
  end
  local codes = {}
  for code, count in pairs(totals) do codes[#codes + 1] = '"' .. code .. '":' .. count end
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"codes":{%s}}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout, table.concat(codes, ",")))
end
`;

interface Figures {
  requests: number;
  duration_us: number;
  p50_us: number;
  p99_us: number;
  max_us: number;
  status: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
  /** Error responses by status code. */
  codes: Record<string, number>;
}

async function load(wrk: string, script: string, url: string, mode: "api" | "healthz"): Promise<Figures> {
  const { stdout } = await exec(
    wrk,
    [
      "-t",
      String(THREADS),
      "-c",
      String(CONNECTIONS),
      "-d",
      `${SECONDS}s`,
      "--timeout",
      "10s",
      "-s",
      script,
      url,
    ],
    {
      env: { ...process.env, LOAD_MODE: mode, LOAD_ACCESS_KEY: KEYS.access, LOAD_SECRET_KEY: KEYS.secret },
      maxBuffer: 1024 * 1024,
    },
  );
  const line = stdout.split("\n").find((l) => l.startsWith("{"));
  if (!line) throw new Error(`wrk printed no figures:\n${stdout}`);
  return JSON.parse(line) as Figures;
}

/** Calls the API with the bench's key pair; throws on anything but 2xx. */
const api = (server: RunningServer, method: string, path: string, body?: unknown) =>
  callApi(server.url, KEYS, method, path, body);

/**
 * Keeps a run of each collection in progress until stopped: forces one, waits for it to end, forces the
 * next. Answers how many ended, by status.
 */
function keepRunning(server: RunningServer, names: string[]) {
  let stopping = false;
  const ended: Record<string, number> = {};
  const loop = async (name: string) => {
    while (!stopping) {
      const { id } = (await api(server, "POST", `/api/collections/${name}/schedule`)) as { id: string };
      for (;;) {
        const run = (await api(server, "GET", `/api/collections/${name}/runs/${id}`)) as { status: string };
        if (!["queued", "started"].includes(run.status)) {
          ended[run.status] = (ended[run.status] ?? 0) + 1;
          break;
        }
        if (stopping) return;
        await sleep(250);
      }
    }
  };
  // A loop that fails (the server gone) stops, and says so when stopped.
  const loops = names.map((name) => loop(name).catch((error: Error) => error));
  return {
    async stop() {
      stopping = true;
      const failure = (await Promise.all(loops)).find((result) => result instanceof Error);
      if (failure) throw failure;
      return ended;
    },
    async active(): Promise<number> {
      const runs = await Promise.all(
        names.map(
          (name) => api(server, "GET", `/api/collections/${name}/runs`) as Promise<Array<{ status: string }>>,
        ),
      );
      return runs.flat().filter((run) => run.status === "started").length;
    },
  };
}

const ms = (us: number) => `${(us / 1000).toFixed(1)} ms`;
const row = (what: string, f: Figures) => {
  const errors = f.status + f.connect + f.read + f.write + f.timeout;
  return `| ${what} | ${f.requests} | ${Math.round(f.requests / (f.duration_us / 1e6))} | ${ms(f.p50_us)} | ${ms(f.p99_us)} | ${ms(f.max_us)} | ${errors} |`;
};

export const loadBench = {
  name: "api-load",
  async run(): Promise<string> {
    const wrk = await which("wrk");
    if (!wrk) return NOT_INSTALLED("wrk", "apt-get install wrk");
    const lab = await startLabProcess(HOSTS);
    const dataDir = mkdtempSync(join(tmpdir(), "sightline-bench-load-"));
    const script = join(dataDir, "load.lua");
    writeFileSync(script, SCRIPT);
    let runs: ReturnType<typeof keepRunning> | undefined;
    const server = await startServer(
      loadConfig(
        {},
        {
          dataDir,
          port: 0,
          host: "127.0.0.1",
          logLevel: "silent",
          bootstrapAccessKey: KEYS.access,
          bootstrapSecretKey: KEYS.secret,
          dnsServers: [lab.resolver],
          scanAllow: ["127.0.0.0/8"],
          // The lab is the whole world: no passive source outside it is asked, no permutation guessed.
          sources: ["none"],
          permutations: 0,
          timeoutMs: 1000,
          schedulerIntervalSeconds: 86_400,
        },
      ),
    );
    try {
      const base = lab.hosts[0]!.ip.split(".").slice(0, 2).join(".");
      await api(server, "POST", "/api/collections", {
        name: "load-a",
        seeds: blocks(base, 0),
      });
      await api(server, "POST", "/api/collections", {
        name: "load-b",
        seeds: blocks(base, 1),
      });
      await api(server, "POST", "/api/collections", { name: "load-writes", seeds: [] });
      runs = keepRunning(server, ["load-a", "load-b"]);
      while ((await runs.active()) < 2) await sleep(100);

      resetPeakRss();
      const apiFigures = await load(wrk, script, server.url, "api");
      const rssUnderLoad = peakRss();
      const activeAfterApi = await runs.active();
      const healthFigures = await load(wrk, script, server.url, "healthz");
      const rssBothPhases = peakRss();
      const activeAfterHealth = await runs.active();
      const ended = await runs.stop();
      const tasks = await Promise.all(
        ["load-a", "load-b"].map(
          async (name) =>
            (await api(server, "GET", `/api/collections/${name}/runs`)) as Array<{ tasks_total: number }>,
        ),
      );
      const largestRun = Math.max(0, ...tasks.flat().map((run) => run.tasks_total));
      const mb = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MB`;

      const errors = (f: Figures) => f.status + f.connect + f.read + f.write + f.timeout;
      const ratio = apiFigures.p99_us / Math.max(1, healthFigures.p99_us);
      const lines = [
        `wrk, ${THREADS} threads and ${CONNECTIONS} connections for ${SECONDS} s per phase, against one server (SQLite, in-process queue, SIGHTLINE_RUN_CONCURRENCY 2) while two runs over ${HOSTS / 2} lab hosts each (top-100 ports) execute; each run is forced again the moment it ends. The API mix is six reads (collections, a collection, its runs, pages of hosts) and four writes (add a seed, force a run, create a collection, delete its seeds) in ten; the baseline is GET /healthz (one database round trip) under the same load.`,
        "",
        "| load | requests | requests/s | p50 | p99 | max | errors |",
        "|---|---:|---:|---:|---:|---:|---:|",
        row("API mix", apiFigures),
        row("GET /healthz (baseline)", healthFigures),
        "",
        `API p99 / baseline p99: **${ratio.toFixed(2)}×**. Runs in progress after each phase: ${activeAfterApi} and ${activeAfterHealth}; runs that ended meanwhile: ${
          Object.entries(ended)
            .map(([status, count]) => `${count} ${status}`)
            .join(", ") || "none"
        }.`,
        "",
        `Peak RSS of the process holding the server, its runs and this harness (VmHWM, reset before the API mix): **${mb(rssUnderLoad)}** during the API mix, ${mb(rssBothPhases)} over both phases (runs finishing included): ${(rssBothPhases / RSS_GOAL_BYTES).toFixed(2)}× the goal of ${mb(RSS_GOAL_BYTES)} (issue 19); the largest run had ${largestRun} tasks.`,
      ];
      const problems = [
        errors(apiFigures) > 0
          ? `the API mix got ${errors(apiFigures)} errors (${JSON.stringify(apiFigures.codes)})`
          : "",
        errors(healthFigures) > 0
          ? `the baseline got ${errors(healthFigures)} errors (${JSON.stringify(healthFigures.codes)})`
          : "",
        (ended.failed ?? 0) > 0 ? `${ended.failed} runs failed under load` : "",
      ].filter(Boolean);
      if (problems.length > 0) throw new Error(`${problems.join("; ")}.\n\n${lines.join("\n")}`);
      return lines.join("\n");
    } finally {
      await runs?.stop().catch(() => {});
      await server.close();
      await lab.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
};

export default loadBench;

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await loadBench.run());
