/** A service that accepts and stays silent costs the short answer wait of a TLS probe, not its whole timeout. */
import assert from "node:assert/strict";
import { createServer, type Socket } from "node:net";
import { test } from "node:test";
import { handshake } from "../../src/discovery/modules/tls.ts";

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
