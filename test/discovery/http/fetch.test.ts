/**
 * One HTTP exchange through HttpClient against a local server on 127.61.0.1: header pairs as received,
 * bodies at and past their bound, compressed bodies (empty, exact, broken, larger than the bound on the
 * wire), a connection reset mid-body, interim responses, and the run's signal; and HTTP/2 on 127.61.0.2,
 * whose headers undici gives as an object rather than as raw pairs.
 */
import assert from "node:assert/strict";
import { createSecureServer } from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { HttpClient } from "../../../src/discovery/net/http-fetch.ts";
import { selfSigned, startWebServer, type TestWebServer } from "./servers.ts";

const HOST = "127.61.0.1";
const NAME = "app.fetch.test";
const BOUND = 1024;
/** Lines that compress to a few KB, so a cut compressed body still holds decoded text. */
const TEXT = Array.from({ length: 400 }, (_, i) => `line ${i} ${(i * 7919) % 10007}`).join("\n");

describe("HttpClient.fetch", () => {
  let server: TestWebServer;
  let requests = 0;
  /** The server's side of the connections "/track" came on. */
  const tracked: Socket[] = [];
  const clients: HttpClient[] = [];
  const client = (signal = new AbortController().signal) => {
    const made = new HttpClient({
      pins: { [NAME]: HOST },
      limits: { timeoutMs: 2000, maxBodyBytes: 64 * 1024 },
      signal,
      mayTouch: () => true,
    });
    clients.push(made);
    return made;
  };
  const url = (path: string) => `http://${NAME}:${server.port}${path}`;

  before(async () => {
    const gzip = gzipSync(TEXT);
    server = await startWebServer(
      (request, response) => {
        requests++;
        const path = request.url ?? "/";
        if (path === "/cookies") {
          response.writeHead(200, [
            "Set-Cookie",
            "a=1",
            "X-Mid",
            "m",
            "set-cookie",
            "b=2",
            "Content-Type",
            "text/plain",
          ]);
          response.end("ok");
        } else if (path === "/gzip") {
          response.writeHead(200, { "content-encoding": "gzip", "content-length": gzip.length });
          response.end(request.method === "HEAD" ? undefined : gzip);
        } else if (path === "/deflate") {
          response.writeHead(200, { "content-encoding": "Deflate" }).end(deflateSync(TEXT));
        } else if (path === "/br") {
          response.writeHead(200, { "content-encoding": "br" }).end(brotliCompressSync(TEXT));
        } else if (path === "/no-content") {
          response.writeHead(204, { "content-encoding": "gzip" }).end();
        } else if (path.startsWith("/bytes/")) {
          response.writeHead(200, { "content-type": "text/plain" }).end("b".repeat(Number(path.slice(7))));
        } else if (path === "/gzip-exact") {
          response.writeHead(200, { "content-encoding": "x-gzip" }).end(gzipSync("z".repeat(BOUND)));
        } else if (path === "/gzip-half") {
          response.writeHead(200, { "content-encoding": "gzip" }).end(gzip.subarray(0, gzip.length >> 1));
        } else if (path === "/gzip-noise") {
          // Random bytes do not compress: the compressed body itself is far over the bound.
          const noise = Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => (i * 2654435761) >>> 24));
          response.writeHead(200, { "content-encoding": "gzip" }).end(gzipSync(noise, { level: 0 }));
        } else if (path === "/reset") {
          response.writeHead(200, { "content-length": "100000" });
          response.write("x".repeat(1000));
          setTimeout(() => response.socket?.resetAndDestroy(), 50);
        } else if (path === "/reset-early") {
          request.socket.resetAndDestroy();
        } else if (path === "/hints") {
          response.writeEarlyHints({ link: "</style.css>; rel=preload" });
          response.writeHead(200, { "x-final": "yes" }).end("final");
        } else if (path === "/echo") {
          const chunks: Buffer[] = [];
          request.on("data", (chunk: Buffer) => chunks.push(chunk));
          request.on("end", () =>
            response.end(`${request.method} ${request.headers["x-extra"]} ${Buffer.concat(chunks)}`),
          );
        } else if (path === "/track") {
          tracked.push(request.socket);
          response.end("tracked");
        } else if (path === "/slow") {
          setTimeout(() => response.end("slow"), 200);
        } else if (path === "/hang") {
          response.writeHead(200, { "content-type": "text/plain" });
          response.write("start");
        } else response.writeHead(404).end("not found");
      },
      { host: HOST },
    );
  });
  after(async () => {
    for (const made of clients) await made.close();
    await server.close();
  });

  it("gives header pairs lower-cased, in the order received, repeated headers repeated", async () => {
    const exchange = await client().fetch(url("/cookies"));
    assert.deepEqual(
      exchange.headers.filter(([name]) => ["set-cookie", "x-mid", "content-type"].includes(name)),
      [
        ["set-cookie", "a=1"],
        ["x-mid", "m"],
        ["set-cookie", "b=2"],
        ["content-type", "text/plain"],
      ],
    );
    assert.equal(exchange.body.toString(), "ok");
    assert.equal(exchange.url, url("/cookies"));
    assert.equal(exchange.truncated, false);
  });

  it("decompresses gzip, deflate and br bodies", async () => {
    const http = client();
    for (const path of ["/gzip", "/deflate", "/br"]) {
      const exchange = await http.fetch(url(path));
      assert.equal(exchange.body.toString(), TEXT, path);
      assert.equal(exchange.truncated, false, path);
    }
  });

  it("takes an empty compressed body (a HEAD, a 204) as empty, not cut", async () => {
    const http = client();
    const head = await http.fetch(url("/gzip"), "HEAD");
    assert.deepEqual([head.status, head.body.length, head.truncated], [200, 0, false]);
    const none = await http.fetch(url("/no-content"));
    assert.deepEqual([none.status, none.body.length, none.truncated], [204, 0, false]);
  });

  it("keeps a body exactly at the bound whole, and cuts one byte more", async () => {
    const http = client();
    const limit = { maxBodyBytes: BOUND };
    const exact = await http.fetch(url(`/bytes/${BOUND}`), "GET", {}, limit);
    assert.deepEqual([exact.body.length, exact.truncated], [BOUND, false]);
    const over = await http.fetch(url(`/bytes/${BOUND + 1}`), "GET", {}, limit);
    assert.deepEqual([over.body.length, over.truncated], [BOUND, true]);
    const inflated = await http.fetch(url("/gzip-exact"), "GET", {}, limit);
    assert.deepEqual([inflated.body.toString(), inflated.truncated], ["z".repeat(BOUND), false]);
    const after = await http.fetch(url("/bytes/10"));
    assert.equal(after.body.toString(), "b".repeat(10), "the client goes on after a cut response");
  });

  it("keeps what broken compression decoded, and says it was cut", async () => {
    const exchange = await client().fetch(url("/gzip-half"));
    assert.equal(exchange.truncated, true);
    assert.ok(exchange.body.length > 0, "some text was decoded");
    assert.ok(TEXT.startsWith(exchange.body.toString()), "what was decoded is the start of the text");
  });

  it("reads no more than the bound of a compressed body off the wire", async () => {
    const exchange = await client().fetch(url("/gzip-noise"), "GET", {}, { maxBodyBytes: BOUND });
    assert.equal(exchange.truncated, true);
    assert.ok(exchange.body.length <= BOUND, `${exchange.body.length} bytes`);
  });

  it("keeps what arrived of a body cut by a reset, and fails a request reset before its response", async () => {
    const http = client();
    const exchange = await http.fetch(url("/reset"));
    assert.deepEqual(
      [exchange.status, exchange.body.toString(), exchange.truncated],
      [200, "x".repeat(1000), true],
    );
    await assert.rejects(http.fetch(url("/reset-early")));
  });

  it("skips interim responses to the final one", async () => {
    const exchange = await client().fetch(url("/hints"));
    assert.equal(exchange.status, 200);
    assert.deepEqual(
      exchange.headers.filter(([name]) => name === "x-final" || name === "link"),
      [["x-final", "yes"]],
    );
    assert.equal(exchange.body.toString(), "final");
  });

  it("sends a template's body and headers, and gives back what it sent", async () => {
    const exchange = await client().fetch(url("/echo"), "POST", { "x-extra": "1" }, { body: "a=b" });
    assert.equal(exchange.body.toString(), "POST 1 a=b");
    assert.equal(exchange.method, "POST");
    assert.equal(exchange.requestHeaders["x-extra"], "1");
    assert.match(exchange.requestHeaders["user-agent"] ?? "", /Sightline/);
  });

  it("answers many requests at once, each with its own body", async () => {
    const http = client();
    const sizes = Array.from({ length: 12 }, (_, i) => i + 1);
    const exchanges = await Promise.all(sizes.map((size) => http.fetch(url(`/bytes/${size}`))));
    assert.deepEqual(
      exchanges.map((exchange) => exchange.body.length),
      sizes,
    );
  });

  it("throws the run's reason when the run ends mid-body, and sends nothing once it has ended", async () => {
    const run = new AbortController();
    const http = client(run.signal);
    const reason = new Error("run cancelled");
    setTimeout(() => run.abort(reason), 100);
    await assert.rejects(http.fetch(url("/hang")), (error) => error === reason);
    const before = requests;
    await assert.rejects(http.fetch(url("/bytes/10")), (error) => error === reason);
    assert.equal(requests, before, "no request reached the server");
  });

  it("cuts a body that stops arriving at the time bound, keeping what arrived", async () => {
    const http = new HttpClient({
      pins: { [NAME]: HOST },
      limits: { timeoutMs: 200 },
      signal: new AbortController().signal,
      mayTouch: () => true,
    });
    clients.push(http);
    const exchange = await http.fetch(url("/hang"));
    assert.deepEqual([exchange.status, exchange.body.toString(), exchange.truncated], [200, "start", true]);
  });

  it("closes with a request in flight by letting it finish, and idle connections at once", async () => {
    const http = client();
    const slow = http.fetch(url("/slow"));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await http.close();
    assert.equal((await slow).body.toString(), "slow");

    const idle = client();
    await idle.fetch(url("/track"));
    const [socket] = tracked.splice(0);
    assert.ok(socket && !socket.destroyed, "the connection is kept alive after its request");
    const ended = new Promise((resolve) => socket.once("close", resolve));
    await idle.close();
    await ended;
    await assert.rejects(idle.fetch(url("/track")));
  });

  it("refuses a host outside what discovery may touch", async () => {
    const http = new HttpClient({
      pins: { [NAME]: HOST },
      signal: new AbortController().signal,
      mayTouch: (address) => address !== HOST,
    });
    clients.push(http);
    const before = requests;
    await assert.rejects(http.fetch(url("/bytes/1")), /outside what discovery may touch/);
    assert.equal(requests, before);
  });

  it("reads HTTP/2 when a TLS server offers it: repeated headers, compression, the bound", async () => {
    const h2 = createSecureServer({ ...(await selfSigned()), allowHTTP1: true }, (request, response) => {
      response.setHeader("set-cookie", ["a=1", "b=2"]);
      response.setHeader("x-version", request.httpVersion);
      if (request.url === "/big") response.end("q".repeat(4 * BOUND));
      else {
        response.setHeader("content-encoding", "gzip");
        response.end(gzipSync(TEXT));
      }
    });
    await new Promise<void>((resolve) => h2.listen(0, "127.61.0.2", resolve));
    // Closed before the server, which waits for its sessions to end.
    const http = new HttpClient({ signal: new AbortController().signal, mayTouch: () => true });
    try {
      const base = `https://127.61.0.2:${(h2.address() as AddressInfo).port}`;
      const exchange = await http.fetch(`${base}/`);
      assert.deepEqual(
        exchange.headers.filter(([name]) => name === "set-cookie" || name === "x-version"),
        [
          ["set-cookie", "a=1"],
          ["set-cookie", "b=2"],
          ["x-version", "2.0"],
        ],
      );
      assert.deepEqual([exchange.body.toString(), exchange.truncated], [TEXT, false]);
      const big = await http.fetch(`${base}/big`, "GET", {}, { maxBodyBytes: BOUND });
      assert.deepEqual([big.body.length, big.truncated], [BOUND, true]);
      const head = await http.fetch(`${base}/`, "HEAD");
      assert.deepEqual([head.body.length, head.truncated], [0, false]);
    } finally {
      await http.close();
      await new Promise((resolve) => h2.close(resolve));
    }
  });
});
