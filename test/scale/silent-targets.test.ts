/**
 * A service that accepts and stays silent costs the short answer wait of a TLS probe, not its whole
 * timeout; web probing and the exposure checks' HTTP requests wait for it once, not once per scheme.
 */
import assert from "node:assert/strict";
import { createServer, type Socket } from "node:net";
import { test } from "node:test";
import { httpRequest } from "../../src/discovery/checks/exposures/http-request.ts";
import { probeWebTarget } from "../../src/discovery/modules/http.ts";
import { handshake } from "../../src/discovery/modules/tls.ts";

/** A server on `host` that accepts and never says a word; counts the connections it was given. */
async function silentServer(host: string) {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as { port: number }).port,
    connections: () => connections,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

test("a TLS handshake with a silent service ends on the answer wait, not the whole timeout", async () => {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.91.1.1", resolve));
  const { port } = server.address() as { port: number };
  try {
    const silent = await handshake("127.91.1.1", port, {
      timeoutMs: 60_000,
      answerTimeoutMs: 200,
      signal: new AbortController().signal,
    });
    assert.deepEqual(silent, { ok: false, reason: "no answer to the ClientHello" });
    // Without an answer wait, only the whole timeout ends it.
    const whole = await handshake("127.91.1.1", port, {
      timeoutMs: 300,
      signal: new AbortController().signal,
    });
    assert.deepEqual(whole, { ok: false, reason: "timeout" });
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("a web probe of a silent port asks plain HTTP once and not again over TLS; a TLS-first one tries both", async () => {
  const silent = await silentServer("127.91.1.2");
  const options = {
    signal: new AbortController().signal,
    mayTouch: () => true,
    limits: { timeoutMs: 300 },
  };
  try {
    const target = { host: "127.91.1.2", address: "127.91.1.2", port: silent.port };
    assert.equal(await probeWebTarget(target, options), undefined);
    // A TLS server answers a plain request at once (an alert, a 400, a close): silence to it is not TLS.
    assert.equal(silent.connections(), 1, "one connection: plain HTTP, and no TLS after its time-out");
    // A plain server may wait for a line a ClientHello never ends, so TLS first still falls back.
    assert.equal(await probeWebTarget({ ...target, scheme: "https" }, options), undefined);
    assert.equal(silent.connections(), 3, "two more: TLS, then plain HTTP");
  } finally {
    await silent.close();
  }
});

test("an exposure check's HTTP request to a silent service is not sent again over TLS", async () => {
  const silent = await silentServer("127.91.1.3");
  const target = {
    address: "127.91.1.3",
    port: silent.port,
    protocol: "tcp" as const,
    service: "http",
    tls: false,
    timeoutMs: 300,
    maxBytes: 4096,
    signal: new AbortController().signal,
    mayTouch: () => true,
  };
  try {
    assert.equal(await httpRequest(target, "/metrics"), undefined);
    assert.equal(silent.connections(), 1);
    assert.equal(await httpRequest({ ...target, tls: true }, "/metrics"), undefined);
    assert.equal(silent.connections(), 3, "over TLS first, then plain");
  } finally {
    await silent.close();
  }
});
