/**
 * /metrics as Prometheus reads it: the server's and a `sightline worker --metrics-port`'s scrapes pass
 * `promtool check metrics` (Debian's prometheus package; CI installs it, elsewhere the check is skipped
 * when it is missing), with prom-client's process and Node.js metrics and the project's own.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { buildInfo } from "../../src/core/build-info.ts";
import { sample } from "../helpers/metrics.ts";
import { type Sightline, spawnSightline } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { REDIS_URL, serviceSkipReason } from "../helpers/services.ts";
import { dropRedisPrefix, testPrefix } from "../runs/helpers.ts";

function promtoolSkip(): string | undefined {
  if (spawnSync("promtool", ["--version"], { stdio: "ignore" }).status === 0) return undefined;
  const reason = "promtool is not installed (Debian package prometheus)";
  if (process.env.CI) throw new Error(`${reason}, and CI requires it`);
  return `${reason}; skipping the exposition checks (required when CI is set)`;
}
const noPromtool = promtoolSkip();

/** What `promtool check metrics` says of a scrape: its exit code and its complaints. */
function promtool(text: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("promtool", ["check", "metrics"], { stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
}

/** The families a scrape declares (`# TYPE name kind`). */
const families = (text: string) =>
  new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((match) => [match[1], match[2]]));

describe("the server's /metrics", () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer("sqlite", { host: "127.120.0.4" });
  });
  after(() => t?.close());

  test("default process and Node.js metrics beside the project's, under their names", async () => {
    await t.request("GET", "/api/collections");
    await t.request("GET", "/api/collections", { keys: null });
    const text = (await t.request("GET", "/metrics", { keys: null })).text;
    const declared = families(text);
    for (const [name, kind] of [
      ["process_cpu_seconds_total", "counter"],
      ["process_resident_memory_bytes", "gauge"],
      ["process_start_time_seconds", "gauge"],
      ["nodejs_eventloop_lag_seconds", "gauge"],
      ["nodejs_heap_size_used_bytes", "gauge"],
      ["nodejs_heap_used_bytes", "gauge"],
      ["sightline_http_requests_total", "counter"],
      ["sightline_http_request_duration_seconds", "histogram"],
      ["sightline_auth_failures_total", "counter"],
      ["sightline_runs", "gauge"],
      ["sightline_queue_jobs", "gauge"],
    ])
      assert.equal(declared.get(name), kind, name);
    assert.ok((sample(text, "process_resident_memory_bytes") ?? 0) > 10_000_000);
    assert.equal(sample(text, 'sightline_auth_failures_total{outcome="unauthorized"}'), 1);
    // The release and commit, as labels of a gauge that is always 1.
    const { version, commit } = buildInfo();
    assert.equal(declared.get("sightline_build_info"), "gauge");
    assert.equal(sample(text, `sightline_build_info{version="${version}",commit="${commit}"}`), 1);
  });

  test("passes promtool check metrics", { skip: noPromtool }, async () => {
    const text = (await t.request("GET", "/metrics", { keys: null })).text;
    const checked = await promtool(text);
    assert.equal(checked.code, 0, checked.output);
    // promtool is not lenient: a hand-broken exposition fails it.
    const broken = await promtool(`${text}# TYPE sightline_runs counter\nsightline_runs{state="x"} 1\n`);
    assert.notEqual(broken.code, 0);
  });
});

const noServices = (await serviceSkipReason("Redis", REDIS_URL)) ?? undefined;

describe("sightline worker --metrics-port", { skip: noServices }, () => {
  let t: TestServer;
  let prefix: string;
  let worker: Sightline | undefined;

  before(async () => {
    prefix = testPrefix();
    t = await startTestServer("postgres", {
      host: "127.120.0.5",
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      schedulerIntervalSeconds: 3600,
    });
  });
  after(async () => {
    await worker?.stop(2000);
    await t?.close();
    if (prefix) await dropRedisPrefix(REDIS_URL, prefix);
  });

  test("serves its run and task metrics, with the token when one is set, and passes promtool", async () => {
    worker = spawnSightline(["worker", "--metrics-port", "0", "--metrics-host", "127.120.0.6"], {
      DATABASE_URL: t.config.databaseUrl,
      REDIS_URL,
      SIGHTLINE_REDIS_PREFIX: prefix,
      SIGHTLINE_METRICS_TOKEN: "scrape-me",
      SIGHTLINE_SHUTDOWN_GRACE: "0",
      LOG_LEVEL: "warn",
    });
    await worker.waitForLine(/Worker metrics: http:\/\/127\.120\.0\.6:\d+\/metrics/);
    const url = /Worker metrics: (\S+)/.exec(worker.output())![1];
    const refused = await fetch(url);
    assert.equal(refused.status, 401);
    assert.match(await refused.text(), /Authorization: Bearer/);
    assert.equal((await fetch(url.replace("/metrics", "/other"), { headers: bearer })).status, 404);
    const response = await fetch(url, { headers: bearer });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    const declared = families(text);
    for (const name of [
      "process_cpu_seconds_total",
      "nodejs_eventloop_lag_seconds",
      "sightline_runs",
      "sightline_queue_jobs",
      "sightline_discovery_tasks_started_total",
      "sightline_discovery_errors_total",
    ])
      assert.ok(declared.has(name), `${name} in the worker's scrape`);
    assert.equal(sample(text, 'sightline_queue_jobs{queue="bullmq",state="waiting"}'), 0);
    if (!noPromtool) {
      const checked = await promtool(text);
      assert.equal(checked.code, 0, checked.output);
    }
  });
});

const bearer = { authorization: "Bearer scrape-me" };
