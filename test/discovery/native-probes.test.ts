/**
 * The native probe engine (src/discovery/net/native) on real loopback sockets: each state, IPv6, turns
 * that run out of time or are cancelled, many turns across its threads, a scan through it against the
 * lab (same services, banners and names as the JS engine, the throttle's bounds holding), and the way
 * back to the JS engine when the addon is not there.
 */
import assert from "node:assert/strict";
import { readdirSync, writeFileSync } from "node:fs";
import { createServer, type Server, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { nativeEngine, portScan } from "../../src/discovery/modules/ports.ts";
import { buildNativeProbes } from "../../src/discovery/net/native/build.ts";
import {
  loadNativeProbes,
  NATIVE_PROBES_PATH,
  NativeState,
  nativeProbes,
  nativeProbesProblem,
} from "../../src/discovery/net/native-probes.ts";
import { type ModuleOutcome, runModule } from "../helpers/discovery.ts";
import { WatchedThrottle } from "../helpers/throttle.ts";
import { type Lab, startLab } from "../lab/index.ts";

const { open: OPEN, refused: REFUSED, timeout: TIMEOUT, error: ERROR, notProbed: NOT_PROBED } = NativeState;
const ALL_DAY = 86_400_000;

function port(server: Server): number {
  return (server.address() as { port: number }).port;
}

async function listening(host: string, onConnection: (socket: Socket) => void = (s) => s.destroy()) {
  const server = createServer(onConnection);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, resolve);
  });
  return server;
}

/** A port of `host` that nothing listens on (one a server just had and gave back). */
async function freePort(host: string): Promise<number> {
  const server = await listening(host);
  const free = port(server);
  await new Promise((resolve) => server.close(resolve));
  return free;
}

/**
 * A port whose connections are never answered, as behind a firewall that drops them: a listener with
 * a backlog of one that never accepts (its thread is blocked), its queue filled, so the kernel drops
 * every further SYN and a connect waits until its timeout. No route or firewall rule needed.
 */
async function unansweredPort() {
  const worker = new Worker(
    `const { parentPort } = require("node:worker_threads");
     const server = require("node:net").createServer();
     server.listen({ host: "127.0.0.1", port: 0, backlog: 1 }, () => {
       parentPort.postMessage(server.address().port);
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
     });`,
    { eval: true },
  );
  const trap = await new Promise<number>((resolve) => worker.once("message", resolve));
  const fillers = Array.from({ length: 3 }, () =>
    new Socket().on("error", () => {}).connect(trap, "127.0.0.1"),
  );
  await new Promise((resolve) => setTimeout(resolve, 50));
  return {
    port: trap,
    close: async () => {
      for (const socket of fillers) socket.destroy();
      await worker.terminate();
    },
  };
}

const probe = (id: number, host: string, ports: number[], timeoutMs: number, turnMs = ALL_DAY) =>
  nativeProbes!.probe(id, host, Uint16Array.from(ports), timeoutMs, turnMs).then((states) => [...states]);

const services = (outcome: ModuleOutcome) =>
  outcome.entities
    .filter((e) => e.kind === "NetworkService")
    .sort((a, b) => Number(a.details!.port) - Number(b.details!.port));

/** Why the native suite cannot run here; under CI the engine must have been built (`npm ci` builds it). */
function nativeSkipReason(): string | undefined {
  if (nativeProbes) return undefined;
  const reason = `the native probe engine was not built (${nativeProbesProblem})`;
  if (process.env.CI) throw new Error(`${reason}, and CI requires it: see npm ci's prepare output`);
  return `${reason}; skipping its tests (they are required when CI is set)`;
}

describe("native probe engine", { skip: nativeSkipReason() }, () => {
  let lab: Lab;
  let trap: Awaited<ReturnType<typeof unansweredPort>>;
  before(async () => {
    lab = await startLab();
    trap = await unansweredPort();
  });
  after(async () => {
    await trap?.close();
    await lab?.stop();
  });

  test("open, refused and unanswered ports of 127.0.0.1 are open, refused and timed out", async () => {
    const server = await listening("127.0.0.1");
    try {
      const closed = await freePort("127.0.0.1");
      const started = performance.now();
      const states = await probe(1, "127.0.0.1", [port(server), closed, trap.port, port(server)], 200);
      assert.deepEqual(states, [OPEN, REFUSED, TIMEOUT, OPEN]);
      assert.ok(performance.now() - started >= 190, "the unanswered port was waited on for its timeout");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("IPv6: an open port of ::1 is open, a closed one refused", async (t) => {
    let server: Server;
    try {
      server = await listening("::1");
    } catch {
      return t.skip("this machine has no IPv6 loopback (::1) to listen on");
    }
    try {
      const closed = await freePort("::1");
      assert.deepEqual(await probe(1, "::1", [closed, port(server)], 1000), [REFUSED, OPEN]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("an address that cannot be connected to is an error, and the turn goes on", async () => {
    // A TCP connect to the broadcast address fails at once on Linux.
    assert.deepEqual(await probe(1, "255.255.255.255", [80, 443], 300), [ERROR, ERROR]);
    assert.throws(() => nativeProbes!.probe(1, "not-an-address", new Uint16Array([80]), 300, ALL_DAY));
  });

  test("a turn starts no port once its time is up; the rest are not probed", async () => {
    const states = await probe(1, "127.0.0.1", [trap.port, trap.port, trap.port], 100, 1);
    assert.deepEqual(states, [TIMEOUT, NOT_PROBED, NOT_PROBED]);
  });

  test("a cancelled turn ends at once: its port in flight is an error, the rest not probed", async () => {
    const started = performance.now();
    const turn = probe(41, "127.0.0.1", [trap.port, trap.port, trap.port], 60_000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    nativeProbes!.cancel(41);
    assert.deepEqual(await turn, [ERROR, NOT_PROBED, NOT_PROBED]);
    assert.ok(performance.now() - started < 5000);
  });

  test("the threads are let go only when no turn is pending, and a later probe starts them again", async () => {
    const pending = probe(7, "127.0.0.1", [trap.port], 60_000);
    assert.equal(nativeProbes!.stop(), false, "a turn is pending");
    nativeProbes!.cancel(7);
    await pending;
    assert.equal(nativeProbes!.stop(), true);
    assert.deepEqual(await probe(1, "127.0.0.1", [await freePort("127.0.0.1")], 1000), [REFUSED]);
  });

  test("hundreds of turns at once across the threads each answer their own ports", async () => {
    const hosts = lab.truth.hosts.filter((h) => h.ports.length > 0);
    const ports = Array.from({ length: 200 }, (_, i) => i + 1);
    const turns = hosts.flatMap((host) =>
      Array.from({ length: 10 }, (_, k) => {
        const slice = [...ports.slice(k * 20, k * 20 + 20), ...host.ports];
        return probe(k, host.ip, slice, 2000).then((states) => ({ host, slice, states }));
      }),
    );
    for (const { host, slice, states } of await Promise.all(turns))
      for (const [i, p] of slice.entries())
        assert.equal(states[i], host.ports.includes(p) ? OPEN : REFUSED, `${host.ip}:${p}`);
  });

  test("a scan through it finds the same services, banners and names as one through the JS engine", async () => {
    const host = lab.truth.hosts.find((h) =>
      lab.truth.services.some((s) => s.ip === h.ip && s.transport === "tcp" && s.banner),
    )!;
    const many = [...new Set([...Array.from({ length: 1100 }, (_, i) => i + 1), ...host.ports])];
    for (const ports of [many, host.ports]) {
      const native = await runModule(portScan, { kind: "IpAddress", name: host.ip }, { ports });
      const js = await runModule(
        portScan,
        { kind: "IpAddress", name: host.ip },
        { ports, probeEngine: "js" },
      );
      assert.deepEqual(
        services(native).map((s) => s.details!.port),
        host.ports,
      );
      assert.deepEqual(services(native), services(js));
      assert.deepEqual(
        native.entities.filter((e) => e.kind === "IpAddress"),
        js.entities.filter((e) => e.kind === "IpAddress"),
      );
      for (const service of lab.truth.services.filter((s) => s.ip === host.ip && s.banner))
        assert.equal(
          services(native).find((s) => s.details!.port === service.port)?.details?.banner,
          service.banner,
        );
    }
  });

  test("the throttle's global and per-host bounds hold through the native engine", async () => {
    const hosts = lab.truth.hosts.filter((h) => h.ports.length > 0).slice(0, 3);
    const throttle = new WatchedThrottle({ concurrency: 5, perHostConcurrency: 3, rateLimit: 0 });
    const many = Array.from({ length: 1100 }, (_, i) => i + 1);
    const outcomes = await Promise.all(
      hosts.map((h) =>
        runModule(
          portScan,
          { kind: "IpAddress", name: h.ip },
          { ports: [...new Set([...many, ...h.ports])], throttle, concurrency: 5, perHostConcurrency: 3 },
        ),
      ),
    );
    for (const [i, h] of hosts.entries())
      assert.deepEqual(
        services(outcomes[i]).map((s) => s.details!.port),
        h.ports,
      );
    assert.ok(throttle.peak <= 5, `at most 5 at once overall, saw ${throttle.peak}`);
    assert.ok(throttle.hostPeak <= 3, `at most 3 at once per host, saw ${throttle.hostPeak}`);
  });

  test("an abort ends a native scan at once; ports not answered are not reported", async () => {
    const controller = new AbortController();
    const started = performance.now();
    const scan = runModule(
      portScan,
      { kind: "IpAddress", name: "127.0.0.1" },
      {
        ports: Array.from({ length: 300 }, () => trap.port),
        perHostConcurrency: 4,
        timeoutMs: 60_000,
        signal: controller.signal,
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();
    const outcome = await scan;
    assert.ok(performance.now() - started < 5000, "the scan ended long before a probe's timeout");
    assert.deepEqual(services(outcome), []);
  });
});

describe("without the native engine", () => {
  test("a missing or broken addon is a problem said, not an error thrown", () => {
    const missing = loadNativeProbes(pathToFileURL(join(tmpdir(), `no-such-addon-${process.pid}.node`)));
    assert.equal(missing.probes, undefined);
    assert.ok(missing.problem);
    const path = join(tmpdir(), `not-an-addon-${process.pid}.node`);
    writeFileSync(path, "not a shared object");
    const broken = loadNativeProbes(pathToFileURL(path));
    assert.equal(broken.probes, undefined);
    assert.ok(broken.problem);
  });

  test("a build that fails says why and leaves no file behind", () => {
    const compiler = process.env.CC;
    process.env.CC = "false"; // a compiler that always fails
    try {
      assert.match(buildNativeProbes() ?? "", /false could not build or load it/);
    } finally {
      if (compiler === undefined) delete process.env.CC;
      else process.env.CC = compiler;
    }
    const leftovers = readdirSync(new URL(".", NATIVE_PROBES_PATH)).filter((file) => file.includes(".tmp"));
    assert.deepEqual(leftovers, []);
  });

  test("scans use the JS engine when the addon is not there, when asked to, and when a rate paces them", () => {
    const addon = {} as NonNullable<typeof nativeProbes>;
    assert.equal(nativeEngine({ probeEngine: "auto", rateLimit: 0 }, undefined), undefined);
    assert.equal(nativeEngine({ probeEngine: "js", rateLimit: 0 }, addon), undefined);
    assert.equal(nativeEngine({ probeEngine: "auto", rateLimit: 100 }, addon), undefined);
    assert.equal(nativeEngine({ probeEngine: "auto", rateLimit: 0 }, addon), addon);
    assert.equal(nativeEngine({ rateLimit: 0 }, addon), addon, "auto is the default");
  });
});
