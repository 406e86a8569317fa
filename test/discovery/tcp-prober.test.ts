/**
 * The TCP prober under the port scan on Node's sockets: large and small scans, the throttle's limits,
 * aborts, and turns that hand their slot back.
 */
import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { portScan } from "../../src/discovery/modules/ports.ts";
import { ConnectProbes, type ProbeTurn, type TurnOutcome } from "../../src/discovery/net/tcp-connect.ts";
import { type ModuleOutcome, runModule } from "../helpers/discovery.ts";
import { WatchedThrottle } from "../helpers/throttle.ts";
import { type Lab, startLab } from "../lab/index.ts";

/** This file tests the JS engine; the native one has its own (native-probes.test.ts). */
const JS = { probeEngine: "js" };

/** A thousand ports and more: a large scan of one host. */
const MANY = Array.from({ length: 1100 }, (_, i) => i + 1);

/** Servers on `count` ports of 127.0.0.1 that accept and never speak; counts what they accepted. */
async function silentPorts(count: number) {
  const accepted: number[] = [];
  const sockets = new Set<Socket>();
  const servers: Server[] = [];
  for (let i = 0; i < count; i++) {
    const server = createServer((socket) => {
      accepted.push(port(server));
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
  }
  return {
    ports: servers.map(port),
    accepted,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    },
  };
}

/** A port of `host` that nothing listens on (one a server just had and gave back). */
async function freePort(host: string): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const free = port(server);
  await new Promise((resolve) => server.close(resolve));
  return free;
}

function port(server: Server): number {
  return (server.address() as { port: number }).port;
}

/** A turn over `ports` of `host`, each waited on for a greeting for `bannerMs`. */
function turnOf(host: string, ports: number[], bannerMs: number, turnMs: number): ProbeTurn {
  return {
    host,
    ports,
    bannerMs: ports.map(() => bannerMs),
    timeoutMs: Math.max(1000, bannerMs),
    bannerBytes: 64,
    turnMs,
  };
}

const runTurn = (engine: ConnectProbes, id: number, turn: ProbeTurn) =>
  new Promise<TurnOutcome>((resolve) => engine.run(id, turn, resolve));

const openPorts = (outcome: ModuleOutcome) =>
  outcome.entities
    .filter((e) => e.kind === "NetworkService")
    .map((e) => Number(e.details!.port))
    .sort((a, b) => a - b);

describe("TCP prober", () => {
  let lab: Lab;
  before(async () => {
    lab = await startLab();
  });
  after(async () => {
    await lab?.stop();
  });

  const hostWithBanners = () =>
    lab.truth.hosts.find((h) =>
      lab.truth.services.some((s) => s.ip === h.ip && s.transport === "tcp" && s.banner),
    )!;

  test("a large scan finds what a small one finds, banners too", async () => {
    const host = hostWithBanners();
    const many = [...new Set([...MANY, ...host.ports])];
    const threaded = await runModule(portScan, { kind: "IpAddress", name: host.ip }, { ports: many, ...JS });
    const here = await runModule(
      portScan,
      { kind: "IpAddress", name: host.ip },
      {
        ports: host.ports,
        ...JS,
      },
    );
    assert.deepEqual(openPorts(threaded), host.ports);
    assert.deepEqual(openPorts(here), host.ports);
    const banners = (outcome: ModuleOutcome) =>
      Object.fromEntries(
        outcome.entities
          .filter((e) => e.kind === "NetworkService")
          .map((e) => [e.name, [e.details!.service, e.details!.banner]]),
      );
    assert.deepEqual(banners(threaded), banners(here));
    for (const service of lab.truth.services.filter((s) => s.ip === host.ip && s.banner))
      assert.equal(banners(threaded)[`${host.ip}:${service.port}/tcp`][1], service.banner);
    const [summary] = threaded.entities.filter((e) => e.kind === "IpAddress" && e.details?.scan);
    assert.deepEqual(summary.details!.scan, {
      ports_scanned: many.length,
      open: host.ports,
      filtered: 0,
    });
  });

  test("the throttle's global and per-host bounds hold while the probes run", async () => {
    const hosts = lab.truth.hosts.filter((h) => h.ports.length > 0).slice(0, 3);
    const throttle = new WatchedThrottle({ concurrency: 5, perHostConcurrency: 3, rateLimit: 0 });
    const outcomes = await Promise.all(
      hosts.map((h) =>
        runModule(
          portScan,
          { kind: "IpAddress", name: h.ip },
          {
            ports: [...new Set([...MANY, ...h.ports])],
            throttle,
            concurrency: 5,
            perHostConcurrency: 3,
            ...JS,
          },
        ),
      ),
    );
    for (const [i, h] of hosts.entries()) assert.deepEqual(openPorts(outcomes[i]), h.ports);
    assert.ok(throttle.peak <= 5, `at most 5 at once overall, saw ${throttle.peak}`);
    assert.ok(throttle.hostPeak <= 3, `at most 3 at once per host, saw ${throttle.hostPeak}`);
    assert.ok(throttle.runs < hosts.length * MANY.length, "without a rate, a slot probes several ports");
  });

  test("with a rate limit, every connection waits for its own slot", async () => {
    const host = hostWithBanners();
    const ports = [...new Set([...MANY.slice(0, 300), ...host.ports])];
    const throttle = new WatchedThrottle({ concurrency: 50, perHostConcurrency: 50, rateLimit: 100_000 });
    const outcome = await runModule(
      portScan,
      { kind: "IpAddress", name: host.ip },
      { ports, throttle, rateLimit: 100_000, perHostConcurrency: 50, ...JS },
    );
    assert.deepEqual(openPorts(outcome), host.ports);
    assert.ok(throttle.runs >= ports.length, `one slot per connection: ${throttle.runs} slots`);
  });

  test("an abort in the middle of a large scan ends it; ports that had connected count as open", async () => {
    const servers = await silentPorts(300);
    try {
      const controller = new AbortController();
      // Every port accepts and never greets: each probe waits for a banner, so the scan would take minutes.
      const scan = runModule(
        portScan,
        { kind: "IpAddress", name: "127.0.0.1" },
        { ports: servers.ports, perHostConcurrency: 4, timeoutMs: 10_000, signal: controller.signal, ...JS },
      );
      while (servers.accepted.length < 4) await new Promise((resolve) => setTimeout(resolve, 5));
      controller.abort();
      const outcome = await scan;
      const found = openPorts(outcome);
      assert.ok(found.length >= 1, "the connected probes in flight are reported open");
      assert.ok(found.length < servers.ports.length, "the scan stopped");
      for (const p of found) assert.ok(servers.accepted.includes(p), `${p} was connected to`);
    } finally {
      await servers.close();
    }
  });

  test("a turn stops starting ports once its time is up and gives the rest back", async () => {
    const servers = await silentPorts(4);
    try {
      const outcome = await runTurn(new ConnectProbes(), 1, turnOf("127.0.0.1", servers.ports, 30, 1));
      // The first port held the slot for its 30 ms greeting wait, longer than the turn's 1 ms.
      assert.equal(outcome.probed, 1);
      assert.deepEqual(outcome.answers, [{ port: servers.ports[0], state: { open: true } }]);
    } finally {
      await servers.close();
    }
  });

  test("IPv6: a greeting on ::1 is read, a closed port there is refused", async (t) => {
    const server = createServer((socket) => {
      socket.on("error", () => {}); // the prober leaves with a reset
      socket.end("SSH-2.0-OpenSSH_9.6\r\n");
    });
    const listening = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(0, "::1", () => resolve(true));
    });
    if (!listening) return t.skip("this machine has no IPv6 loopback (::1) to listen on");
    try {
      const open = port(server);
      const closed = await freePort("::1");
      const outcome = await runTurn(new ConnectProbes(), 1, turnOf("::1", [closed, open], 1000, 60_000));
      assert.equal(outcome.probed, 2);
      assert.equal(outcome.answers.length, 1, "the closed port is not among the answers");
      assert.equal(outcome.answers[0].port, open);
      const state = outcome.answers[0].state;
      assert.ok(state.open);
      assert.equal(state.greeting?.toString(), "SSH-2.0-OpenSSH_9.6\r\n");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("a port that accepts and closes without a word is open, with no greeting", async () => {
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const outcome = await runTurn(
        new ConnectProbes(),
        1,
        turnOf("127.0.0.1", [port(server)], 1000, 60_000),
      );
      assert.deepEqual(outcome.answers, [{ port: port(server), state: { open: true } }]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("an address that cannot be connected to is not open, and the turn goes on to the next port", async () => {
    // A TCP connect to the broadcast address fails at once on Linux; elsewhere it may time out instead.
    const outcome = await runTurn(new ConnectProbes(), 1, {
      ...turnOf("255.255.255.255", [80, 443], 0, 60_000),
      timeoutMs: 300,
    });
    assert.equal(outcome.probed, 2);
    for (const answer of outcome.answers) assert.equal(answer.state.open, false);
  });

  test("cancelling a turn ends it at once; the connected port in flight counts as open", async () => {
    const servers = await silentPorts(3);
    try {
      const engine = new ConnectProbes();
      const outcome = runTurn(engine, 7, turnOf("127.0.0.1", servers.ports, 60_000, 60_000));
      while (servers.accepted.length < 1) await new Promise((resolve) => setTimeout(resolve, 5));
      engine.cancel(7);
      assert.deepEqual(await outcome, {
        probed: 1,
        answers: [{ port: servers.ports[0], state: { open: true } }],
      });
      assert.equal(servers.accepted.length, 1, "no port started after the cancel");
    } finally {
      await servers.close();
    }
  });
});
