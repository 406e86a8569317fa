/**
 * One UDP question (src/discovery/net/udp.ts): an answer is read, and a closed port — which answers
 * with an ICMP port unreachable — ends the question at once instead of costing its whole wait, so a
 * UDP pass over addresses without UDP services does not hold its task for the timeout.
 */
import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { test } from "node:test";
import { createUdpModule, udpScan } from "../../src/discovery/modules/udp.ts";
import { MIN_SAMPLES, roundTrips } from "../../src/discovery/net/round-trips.ts";
import { udpAsk } from "../../src/discovery/net/udp.ts";
import { runModule } from "../helpers/discovery.ts";

const HOST = "127.125.0.1";
const LONG = 60_000;

/** Settles with "waited" if `work` has not settled within `ms`: the question waited for its timeout. */
const within = <T>(work: Promise<T>, ms: number) =>
  Promise.race([work, new Promise<"waited">((resolve) => setTimeout(resolve, ms, "waited").unref())]);

test("a UDP question to a port that answers gets its datagram", async () => {
  const server = createSocket("udp4");
  await new Promise<void>((resolve) => server.bind(0, HOST, resolve));
  server.on("message", (message, remote) =>
    server.send(Buffer.from(`echo ${message}`), remote.port, remote.address),
  );
  try {
    const answer = await udpAsk({
      host: HOST,
      port: server.address().port,
      payload: Buffer.from("hello"),
      timeoutMs: LONG,
      signal: new AbortController().signal,
    });
    assert.deepEqual(answer?.datagrams.map(String), ["echo hello"]);
  } finally {
    server.close();
  }
});

test("a UDP question to a closed port ends at the port unreachable, not at its timeout", async () => {
  const probe = createSocket("udp4");
  await new Promise<void>((resolve) => probe.bind(0, HOST, resolve));
  const closed = probe.address().port;
  probe.close(); // the port is now closed: the kernel answers a datagram to it with ICMP port unreachable
  const answer = await within(
    udpAsk({
      host: HOST,
      port: closed,
      payload: Buffer.from("x"),
      timeoutMs: LONG,
      signal: new AbortController().signal,
    }),
    10_000,
  );
  assert.equal(answer, undefined, "no answer, and no wait for the 60 s timeout");
});

test("the UDP pass over an address with no UDP service ends without waiting for its timeout", async () => {
  const outcome = await within(
    runModule(udpScan, { kind: "IpAddress", name: "127.125.0.2" }, { timeoutMs: LONG }),
    10_000,
  );
  // What it finds is the machine's (a wildcard listener would answer): the wait is what is tested.
  assert.notEqual(outcome, "waited");
});

test("an address that answers nothing costs the greeting wait, not the whole timeout", async () => {
  const silent = createSocket("udp4"); // takes every question and never answers
  await new Promise<void>((resolve) => silent.bind(0, HOST, resolve));
  try {
    const module = createUdpModule([
      { service: "echo", port: silent.address().port, payload: () => Buffer.from("?"), read: () => "echo" },
    ]);
    const outcome = await within(
      runModule(
        module,
        { kind: "IpAddress", name: HOST },
        { timeoutMs: LONG, limits: { bannerTimeoutMs: 200 } },
      ),
      10_000,
    );
    assert.notEqual(outcome, "waited", "waited for the 60 s timeout");
    assert.deepEqual(outcome !== "waited" && outcome.entities, [], "nothing answered, nothing reported");
  } finally {
    silent.close();
  }
});

/**
 * The UDP pass learns the wait as host discovery does (round-trips.ts): on a network whose addresses
 * answer within a millisecond, an address whose questions are neither answered nor refused is left at
 * the learnt wait, while one that refuses anything is in use and keeps the whole wait for a slow service.
 * Its own /16 (127.126.0.0), so the estimate taught here reaches no other test.
 */
test("the UDP pass leaves a silent address at its network's learnt wait, and waits for a slow service on an address in use", async () => {
  const host = "127.126.0.1";
  for (let i = 0; i < MIN_SAMPLES; i++) roundTrips.observe(host, 1);
  const slow = createSocket("udp4"); // answers every question, after 1.5 s
  const timers = new Set<NodeJS.Timeout>();
  await new Promise<void>((resolve) => slow.bind(0, host, resolve));
  slow.on("message", (_, remote) => {
    const timer = setTimeout(() => slow.send(Buffer.from("late"), remote.port, remote.address), 1500);
    timers.add(timer);
  });
  const closed = createSocket("udp4");
  await new Promise<void>((resolve) => closed.bind(0, host, resolve));
  const closedPort = closed.address().port;
  closed.close(); // refused from now on: the address shows it is in use
  const probe = (port: number) => ({
    service: "late",
    port,
    payload: () => Buffer.from("?"),
    read: () => "late",
  });
  const settings = { timeoutMs: LONG, limits: { bannerTimeoutMs: 4000 } };
  const found = (outcome: Awaited<ReturnType<typeof runModule>>) =>
    outcome.entities.filter((entity) => entity.kind === "NetworkService").map((entity) => entity.name);
  try {
    const slowOnly = createUdpModule([probe(slow.address().port)]);
    const learnt = await runModule(
      slowOnly,
      { kind: "IpAddress", name: host },
      {
        ...settings,
        hostDiscoveryMinTimeoutMs: 100,
      },
    );
    assert.deepEqual(found(learnt), [], "silent for the learnt 100 ms: left before the 1.5 s answer");
    const whole = await runModule(slowOnly, { kind: "IpAddress", name: host }, settings);
    assert.deepEqual(found(whole), [`${host}:${slow.address().port}/udp`], "without a floor: the whole wait");
    const off = await runModule(
      slowOnly,
      { kind: "IpAddress", name: host },
      {
        ...settings,
        hostDiscovery: false,
        hostDiscoveryMinTimeoutMs: 100,
      },
    );
    assert.equal(found(off).length, 1, "host discovery off: the whole wait");
    const inUse = await runModule(
      createUdpModule([probe(slow.address().port), probe(closedPort)]),
      { kind: "IpAddress", name: host },
      { ...settings, hostDiscoveryMinTimeoutMs: 100 },
    );
    assert.deepEqual(found(inUse), [`${host}:${slow.address().port}/udp`], "a refusal: the whole wait");
  } finally {
    for (const timer of timers) clearTimeout(timer);
    slow.close();
  }
});
