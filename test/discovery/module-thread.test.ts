/**
 * Discovery modules in a worker thread (src/discovery/module-thread.ts): the thread runs the process's
 * modules as this thread would, an abort reaches it, product look-ups come back to the process that
 * holds the store, and closing it fails what was still in flight instead of leaving it waiting.
 */
import assert from "node:assert/strict";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer, type Server as TcpServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { DEFAULTS } from "../../src/core/config.ts";
import type { DiscoverySettings } from "../../src/discovery/module.ts";
import { discoveryLimits } from "../../src/discovery/module.ts";
import { LocalModules, type RunDescription } from "../../src/discovery/module-run.ts";
import { DESCRIBED_RUNS, FOUND_PART, ModuleThread } from "../../src/discovery/module-thread.ts";
import { discoveryModules } from "../../src/discovery/modules.ts";
import type { MatchedCve } from "../../src/store/vulns.ts";
import { countTurns } from "../helpers/turns.ts";
import { createDnsServer } from "../lab/dns-server.ts";
import { transferableZone } from "../lab/zones.ts";

const HOST = "127.125.1.1";
const NAMESERVER = "127.125.1.53";
const listen = <T extends Server | TcpServer>(server: T) =>
  new Promise<T>((resolve) => server.listen(0, HOST, () => resolve(server)));
const portOf = (server: Server | TcpServer) => (server.address() as { port: number }).port;

const settings = (overrides: Partial<DiscoverySettings> = {}): DiscoverySettings => ({
  dnsServers: [],
  ports: [],
  wordlist: "small",
  timeoutMs: 2000,
  concurrency: 50,
  perHostConcurrency: 8,
  rateLimit: 0,
  limits: discoveryLimits(DEFAULTS),
  ...overrides,
});
let runIds = 1;
const run = (overrides: Partial<DiscoverySettings> = {}): RunDescription => ({
  id: runIds++,
  settings: settings(overrides),
  seeds: [],
  scanAllow: ["127.125.0.0/16"],
  scanDeny: [],
});
const live = () => new AbortController().signal;

describe("discovery modules in a worker thread", () => {
  const looked: string[] = [];
  const thread = new ModuleThread({
    ipDatabase: [],
    dataDir: "/nonexistent",
    cves: {
      async matchCpe(cpe) {
        looked.push(cpe);
        return [
          {
            cve: "CVE-2000-0001",
            description: "test",
            cwe: "",
            cvss_v3_score: 9.8,
            cvss_v2_score: null,
            published: null,
            references: [],
            criteria: cpe,
            kev: null,
          } satisfies MatchedCve,
        ];
      },
    },
  });
  let open: TcpServer;
  let web: Server;
  let stuck: Server;
  before(async () => {
    stuck = await listen(createHttpServer(() => {}));
    open = await listen(
      createServer((socket) => socket.on("error", () => {}).end("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")),
    );
    web = await listen(
      createHttpServer((_, response) =>
        response
          .writeHead(200, { Server: "nginx/1.18.0", "Content-Type": "text/html" })
          .end("<html><title>t</title></html>"),
      ),
    );
  });
  after(async () => {
    await thread.close();
    open?.close();
    web?.close();
    stuck?.closeAllConnections();
    stuck?.close();
  });

  test("a port scan in the thread finds what it finds in this thread", async () => {
    const described = run({ ports: [portOf(open), portOf(web)] });
    const task = { module: "ports", entity: { kind: "IpAddress" as const, name: HOST }, depth: 0 };
    const there = await thread.run(task, described, live());
    const here = await new LocalModules(discoveryModules()).run(task, described, live());
    const services = (output: typeof there) =>
      output.found
        .filter((entity) => entity.kind === "NetworkService")
        .map((entity) => [entity.name, entity.details?.service])
        .sort();
    assert.deepEqual(
      services(there),
      [
        [`${HOST}:${portOf(open)}/tcp`, "ssh"],
        [`${HOST}:${portOf(web)}/tcp`, "http"],
      ].sort(),
    );
    assert.deepEqual(services(there), services(here));
  });

  test("a product's CVEs are looked up by the process that started the thread", async () => {
    const port = portOf(web);
    const output = await thread.run(
      {
        module: "http",
        entity: {
          kind: "NetworkService",
          name: `${HOST}:${port}/tcp`,
          details: { ip_address: HOST, port, protocol: "tcp", service: "http" },
        },
        depth: 0,
      },
      run(),
      live(),
    );
    assert.ok(
      looked.some((cpe) => /nginx:1\.18\.0/.test(cpe)),
      `looked up: ${looked.join(", ")}`,
    );
    assert.match(JSON.stringify(output.found), /CVE-2000-0001/);
  });

  test("answers that arrive together are delivered one per turn of the loop", async () => {
    const described = run();
    const task = (i: number) => ({
      module: "netblocks",
      entity: { kind: "IpAddress" as const, name: `127.125.2.${i}` },
      depth: 0,
    });
    await thread.run(task(0), described, live());
    // The turn each answer was handled in.
    const turns = countTurns();
    const handledIn: number[] = [];
    const answers = Array.from({ length: 10 }, (_, i) =>
      thread.run(task(i + 1), described, live()).then(async () => {
        handledIn.push(turns.count);
        // What the engine and the store do after an answer: awaited statements, synchronous on SQLite.
        for (let step = 0; step < 3; step++) {
          const busy = performance.now() + 1;
          while (performance.now() < busy);
          await Promise.resolve();
        }
      }),
    );
    // Hold this thread while the thread answers them all, so their messages arrive together.
    const until = Date.now() + 300;
    while (Date.now() < until);
    await Promise.all(answers);
    turns.stop();
    assert.equal(handledIn.length, 10);
    assert.equal(new Set(handledIn).size, 10, `each answer in a turn of its own: ${handledIn.join(" ")}`);
  });

  test("an answer of more entities than one part (a zone transfer) arrives whole and in order", async () => {
    const names = 2 * FOUND_PART + 500;
    const zones = transferableZone(
      "big.test",
      NAMESERVER,
      names,
      (i) => `127.125.${3 + (i >> 8)}.${i & 255}`,
    );
    const server = createDnsServer(zones);
    // Transfers go to port 53 of the name server's address.
    await server.listen(NAMESERVER, 53);
    try {
      const described = run({ dnsServers: [`${NAMESERVER}:53`] });
      const task = { module: "dns-axfr", entity: { kind: "Domain" as const, name: "big.test" }, depth: 0 };
      const there = await thread.run(task, described, live());
      const here = await new LocalModules(discoveryModules()).run(task, described, live());
      assert.ok(there.found.length > 2 * names, `${there.found.length} entities found`);
      assert.deepEqual(there.found, here.found);
    } finally {
      await server.close();
    }
  });

  test("past the runs it keeps, the thread forgets the oldest and is told it again", async () => {
    const runs = Array.from({ length: DESCRIBED_RUNS + 2 }, () => run());
    const task = { module: "netblocks", entity: { kind: "IpAddress" as const, name: HOST }, depth: 0 };
    for (const described of [...runs, runs[0], runs[1]]) {
      const output = await thread.run(task, described, live());
      assert.equal(output.error, undefined);
      assert.ok(
        output.found.some((entity) => entity.kind === "NetBlock"),
        `run ${described.id} ran`,
      );
    }
  });

  /** A web request to a server that takes it and never answers: in flight until its 60 s timeout. */
  const hanging = () => ({
    module: "http",
    entity: {
      kind: "NetworkService" as const,
      name: `${HOST}:${portOf(stuck)}/tcp`,
      details: { ip_address: HOST, port: portOf(stuck), protocol: "tcp", service: "http" },
    },
    depth: 0,
  });

  test("an abort reaches the module in the thread", async () => {
    const controller = new AbortController();
    const started = performance.now();
    const pending = thread.run(hanging(), run({ timeoutMs: 60_000 }), controller.signal);
    setTimeout(() => controller.abort(), 100);
    await pending;
    assert.ok(performance.now() - started < 30_000, "ended by the abort, not by the 60 s timeout");
  });

  test("released with the last run it was told, the thread ends, unless a task is in flight; the next task starts one", async () => {
    const own = new ModuleThread({ ipDatabase: [], dataDir: "/nonexistent" });
    try {
      const task = { module: "netblocks", entity: { kind: "IpAddress" as const, name: HOST }, depth: 0 };
      const [first, second] = [run(), run()];
      for (const described of [first, second])
        assert.equal((await own.run(task, described, live())).error, undefined);
      own.forget(first.id, { release: true });
      assert.equal(own.running, true, "another run is still described");
      const controller = new AbortController();
      const inFlight = own.run(hanging(), run({ timeoutMs: 60_000 }), controller.signal);
      own.forget(second.id, { release: true });
      assert.equal(own.running, true, "a task is in flight");
      controller.abort();
      await inFlight;
      const third = run();
      assert.equal((await own.run(task, third, live())).error, undefined);
      own.forget(third.id);
      own.forget(runIds - 2); // the hanging task's run
      assert.equal(own.running, true, "forgotten, not released: kept for the next run");
      await own.run(task, third, live());
      own.forget(third.id, { release: true });
      assert.equal(own.running, false, "released with nothing described, nothing in flight: ended");
      const again = await own.run(task, run(), live());
      assert.ok(
        again.found.some((entity) => entity.kind === "NetBlock"),
        "a new thread answers",
      );
      assert.equal(own.running, true);
    } finally {
      await own.close();
    }
  });

  test("closing the thread fails the tasks in flight; the next task starts a new thread", async () => {
    const inFlight = thread.run(hanging(), run({ timeoutMs: 60_000 }), live());
    await new Promise((resolve) => setTimeout(resolve, 100));
    const failed = assert.rejects(inFlight, /closed/);
    await thread.close();
    await failed;
    const again = await thread.run(
      { module: "ports", entity: { kind: "IpAddress", name: HOST }, depth: 0 },
      run({ ports: [portOf(open)] }),
      live(),
    );
    assert.deepEqual(
      again.found.filter((entity) => entity.kind === "NetworkService").map((entity) => entity.name),
      [`${HOST}:${portOf(open)}/tcp`],
    );
  });
});
