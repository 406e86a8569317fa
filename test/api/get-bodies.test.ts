/**
 * A body sent with GET is read and dropped before the answer: answered first, a connection the client
 * asked to close (`agent: false` sends `Connection: close`) closed with the body's rest unread, and the
 * kernel's reset destroyed the answer on its way (ECONNRESET at the client).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { rawRequest } from "../hardening/surface.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let t: TestServer;
before(async () => {
  t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
});
after(async () => t?.close());

test("a GET with a large body gets its whole answer, every time", async () => {
  const body = `${"[".repeat(250_000)}${"]".repeat(250_000)}`;
  for (let i = 0; i < 30; i++) {
    const response = await rawRequest(t.url, {
      method: "GET",
      path: "/api/openapi.json",
      headers: { "content-type": "application/json" },
      body,
    });
    assert.equal(response.status, 200, `attempt ${i + 1}`);
    assert.equal(JSON.parse(response.text).openapi.slice(0, 2), "3.");
  }
});

test("a GET body larger than the body limit is refused with 413 in the envelope", async () => {
  const response = await rawRequest(t.url, {
    method: "GET",
    path: "/healthz",
    headers: { "content-type": "application/json" },
    body: Buffer.alloc(2 * 1024 * 1024, 0x20),
  }).catch((error: Error) => ({ status: 0, text: error.message }));
  // The server may close before the client has sent everything: a 413, or the connection refused.
  assert.ok(
    response.status === 413 || response.status === 0,
    `${response.status} ${response.text.slice(0, 100)}`,
  );
});
