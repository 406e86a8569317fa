/**
 * One UDP question (src/discovery/net/udp.ts): an answer is read, and a closed port — which answers
 * with an ICMP port unreachable — ends the question at once instead of costing its whole wait, so a
 * UDP pass over addresses without UDP services does not hold its task for the timeout.
 */
import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { test } from "node:test";
import { createUdpModule, udpScan } from "../../src/discovery/modules/udp.ts";
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
