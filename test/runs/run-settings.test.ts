/**
 * A run's discovery settings are fixed when it is created: stored with the run, shown on it, and applied
 * by every worker whatever that worker's own environment holds. The same lab discovered by an embedded
 * server and by a `sightline worker` started without the scan allow list, with another resolver, other
 * ports and a depth of 1 gives the same results.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type Sightline, spawnSightline } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { POSTGRES_URL, REDIS_URL, serviceSkipReason } from "../helpers/services.ts";
import { type Lab, startLab } from "../lab/index.ts";
import { dropRedisPrefix, force, testPrefix, waitForRun } from "./helpers.ts";

const skip =
  (await serviceSkipReason("PostgreSQL", POSTGRES_URL)) ?? (await serviceSkipReason("Redis", REDIS_URL));

const SEEDS = ["acme.test", "globex.test"];

describe("the discovery settings a run uses travel with it to every worker", { skip }, () => {
  let lab: Lab;
  let embedded: TestServer;
  let distributed: TestServer;
  let worker: Sightline | undefined;
  let prefix: string;
  let settings: {
    dnsServers: string[];
    scanAllow: string[];
    ports: string;
    timeoutMs: number;
    schedulerIntervalSeconds: number;
  };

  before(async () => {
    lab = await startLab({ base: "127.123" });
    const ports = [...new Set(lab.truth.services.filter((s) => s.transport === "tcp").map((s) => s.port))];
    settings = {
      dnsServers: [lab.resolver],
      scanAllow: [`${lab.base}.0.0/16`],
      // Only the lab's own ports: whatever else listens on this machine stays out of the results.
      ports: ports.sort((a, b) => a - b).join(","),
      timeoutMs: 1000,
      schedulerIntervalSeconds: 3600,
    };
    prefix = testPrefix();
    embedded = await startTestServer("sqlite", settings);
    distributed = await startTestServer("postgres", {
      ...settings,
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      queueStallSeconds: 1,
    });
    // The worker's own environment disagrees on every discovery setting: none of it may count.
    worker = spawnSightline(["worker"], {
      DATABASE_URL: distributed.config.databaseUrl,
      REDIS_URL,
      SIGHTLINE_REDIS_PREFIX: prefix,
      SIGHTLINE_DNS_SERVERS: "127.0.0.1:53",
      SIGHTLINE_SCAN_ALLOW: "",
      SIGHTLINE_PORTS: "1",
      SIGHTLINE_DEPTH: "1",
      SIGHTLINE_TIMEOUT_MS: "5",
      SIGHTLINE_TASK_CONCURRENCY: "4",
      SIGHTLINE_QUEUE_STALL_SECONDS: "1",
      SIGHTLINE_SHUTDOWN_GRACE: "0",
      LOG_LEVEL: "warn",
    });
    await worker.waitForLine(/is taking run tasks/);
  });
  after(async () => {
    await worker?.stop(2000);
    await embedded?.close();
    await distributed?.close();
    if (prefix) await dropRedisPrefix(REDIS_URL, prefix);
    await lab?.stop();
  });

  async function discover(t: TestServer): Promise<number> {
    const created = await t.request("POST", "/api/collections", {
      body: { name: "lab", scan_rate: "on_demand", seeds: SEEDS.map((name) => ({ type: "Domain", name })) },
    });
    assert.equal(created.status, 200, created.text);
    const id = await force(t, "lab");
    const run = await waitForRun(t, "lab", id, "finished", "failed");
    assert.equal(run.status, "finished", run.error);
    return id;
  }

  /** What a person reads: hosts with their ports, domains, applications and issues. */
  async function results(t: TestServer) {
    const get = async (what: string) => {
      const response = await t.request("GET", `/api/collections/lab/${what}`);
      assert.equal(response.status, 200, response.text);
      return response.body.result;
    };
    const hosts = await get("hosts");
    return {
      hosts: Object.keys(hosts)
        .sort()
        .map((ip) => `${ip} ${hosts[ip].ports.map((p: { number: string }) => p.number).join(",")}`),
      domains: (await get("domains")).map((d: { name: string }) => d.name).sort(),
      applications: (await get("applications")).map((a: { name: string }) => a.name).sort(),
      issues: (await get("issues"))
        .map((i: { name: string; entity_name: string }) => `${i.name} ${i.entity_name}`)
        .sort(),
    };
  }

  test("a worker with an empty allow list, another resolver, other ports and depth finds what embedded finds", async () => {
    await discover(embedded);
    const id = await discover(distributed);
    const [here, there] = [await results(embedded), await results(distributed)];
    assert.ok(here.hosts.length >= 3, `the embedded run found the lab's hosts: ${here.hosts}`);
    assert.ok(here.applications.length >= 3, `and its applications: ${here.applications}`);
    assert.deepEqual(there, here);
    const done = await distributed.server.services.runs.workersOf(id);
    assert.deepEqual(
      done.map((row) => row.worker),
      [`${(await import("node:os")).hostname()}:${worker!.pid}`],
      "the worker did every task",
    );
  });

  test("the run shows the settings it was created with", async () => {
    const runs = await distributed.request("GET", "/api/collections/lab/runs");
    const id = runs.body.result[0].id;
    const run = await distributed.request("GET", `/api/collections/lab/runs/${id}`);
    assert.equal(run.status, 200, run.text);
    const shown = run.body.result.settings;
    assert.deepEqual(shown.dns_servers, settings.dnsServers);
    assert.deepEqual(shown.scan_allow, settings.scanAllow);
    assert.equal(shown.ports, settings.ports);
    assert.equal(shown.depth, 4);
    assert.equal(shown.timeout_ms, 1000);
    assert.equal(shown.dns_wordlist, "small");
    assert.equal(shown.dns_wordlist_lines, null);
  });
});
