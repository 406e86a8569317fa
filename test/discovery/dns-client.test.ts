/**
 * DnsClient against a name server of its own on 127.63.0.53: clients of the same settings share one
 * c-ares channel, and a task's end stops only that task's wait (a shared channel is never cancelled
 * whole), while a name nobody answers for still ends at the time bound.
 */
import assert from "node:assert/strict";
import { createSocket, type Socket } from "node:dgram";
import { after, before, describe, test } from "node:test";
import dnsPacket from "dns-packet";
import { DEFAULTS } from "../../src/core/config.ts";
import { discoveryLimits } from "../../src/discovery/module.ts";
import { DnsClient } from "../../src/discovery/net/dns-client.ts";
import { Throttle } from "../../src/discovery/net/throttle.ts";

const SERVER = "127.63.0.53";

describe("DnsClient", () => {
  let server: Socket;
  let port = 0;
  /** Queries the server saw, by name. */
  const asked: string[] = [];
  before(async () => {
    server = createSocket("udp4");
    server.on("message", (message, client) => {
      const query = dnsPacket.decode(message);
      const question = query.questions?.[0];
      if (!question) return;
      asked.push(question.name);
      if (question.name.startsWith("silent")) return; // never answered
      const reply = dnsPacket.encode({
        type: "response",
        id: query.id,
        flags: dnsPacket.AUTHORITATIVE_ANSWER,
        questions: query.questions,
        answers:
          question.type === "A" ? [{ type: "A", name: question.name, ttl: 60, data: "192.0.2.7" }] : [],
      } as dnsPacket.Packet);
      server.send(reply, client.port, client.address);
    });
    await new Promise<void>((resolve) => server.bind(0, SERVER, resolve));
    port = server.address().port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const context = (signal: AbortSignal, timeoutMs = 2000) => ({
    signal,
    throttle: new Throttle({ concurrency: 8, perHostConcurrency: 8, rateLimit: 0 }),
    settings: {
      dnsServers: [`${SERVER}:${port}`],
      timeoutMs,
      limits: discoveryLimits(DEFAULTS),
    } as never,
  });

  test("answers through a channel its settings share", async () => {
    const first = await new DnsClient(context(new AbortController().signal)).a("one.test");
    const second = await new DnsClient(context(new AbortController().signal)).a("two.test");
    assert.deepEqual(first, { ok: true, value: ["192.0.2.7"] });
    assert.deepEqual(second, { ok: true, value: ["192.0.2.7"] });
  });

  test("a task's end stops its own wait at once, not another task's look-up", async () => {
    const ending = new AbortController();
    const started = performance.now();
    const waiting = new DnsClient(context(ending.signal)).a("silent-1.test");
    const other = new DnsClient(context(new AbortController().signal));
    setTimeout(() => ending.abort(new Error("the run ended")), 100);
    assert.deepEqual(await waiting, { ok: false, code: "cancelled" });
    assert.ok(performance.now() - started < 1000, "the ended task did not wait for the time bound");
    assert.deepEqual(await other.a("three.test"), { ok: true, value: ["192.0.2.7"] });
    assert.deepEqual(await new DnsClient(context(ending.signal)).a("four.test"), {
      ok: false,
      code: "cancelled",
    });
    assert.ok(!asked.includes("four.test"), "nothing is asked once the task has ended");
  });

  test("a name nobody answers for ends at the time bound", async () => {
    const started = performance.now();
    const outcome = await new DnsClient(context(new AbortController().signal, 400)).a("silent-2.test");
    assert.deepEqual(outcome, { ok: false, code: "timeout" });
    assert.ok(performance.now() - started < 2000);
  });
});
