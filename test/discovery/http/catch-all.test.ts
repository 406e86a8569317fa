/**
 * Catch-all web servers on real HTTP servers (127.117.7.1): a single-page application that answers
 * every path with its page (echoing the path, a fresh token on every visit), one that redirects every
 * path to its login, and a plain one that says 404. Web probing marks the first two; a template that
 * accepts any 200 is not raised on their answers, and still is on a file really there.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type RequestListener, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { answersLikeCatchAll, probeCatchAll } from "../../../src/discovery/http/catch-all.ts";
import { probeWebTarget } from "../../../src/discovery/modules/http.ts";
import { createTemplatesModule } from "../../../src/discovery/modules/templates.ts";
import { HttpClient } from "../../../src/discovery/net/http-fetch.ts";
import { listenTcp, withRandomPort } from "../../lab/sockets.ts";
import { application, context } from "../templates/helpers.ts";

const HOST = "127.117.7.1";

const spaPage = (path: string) =>
  `<!doctype html><html><head><title>Acme Shop</title><meta name="csrf-token" content="${randomBytes(8).toString("hex")}"></head>` +
  `<body><div id="app" data-route="${path}"></div><script src="/app.js"></script></body></html>`;

/** Every path is the application's page, except one file really served. */
const spa: RequestListener = (request, response) => {
  const path = new URL(request.url ?? "/", "http://x").pathname;
  if (path === "/.env") {
    response
      .writeHead(200, { "content-type": "text/plain" })
      .end("APP_KEY=base64:c2VjcmV0\nDB_PASSWORD=hunter2\n");
    return;
  }
  response.writeHead(200, { "content-type": "text/html" }).end(spaPage(path));
};

/** Every path but the login redirects to it, saying where it came from. */
const loginWall: RequestListener = (request, response) => {
  const path = new URL(request.url ?? "/", "http://x").pathname;
  if (path === "/login")
    response.writeHead(200, { "content-type": "text/html" }).end("<title>Log in</title>");
  else response.writeHead(302, { location: `/login?next=${encodeURIComponent(path)}` }).end();
};

const plain: RequestListener = (request, response) => {
  const path = new URL(request.url ?? "/", "http://x").pathname;
  if (path === "/") response.writeHead(200, { "content-type": "text/html" }).end("<title>Plain</title>");
  else response.writeHead(404, { "content-type": "text/plain" }).end("not found");
};

describe("web servers that answer every path alike", () => {
  const servers: Array<{ server: Server; close: () => Promise<void> }> = [];
  const bases: Record<"spa" | "loginWall" | "plain", string> = { spa: "", loginWall: "", plain: "" };
  let directory: string;

  before(async () => {
    for (const [name, listener] of Object.entries({ spa, loginWall, plain })) {
      const server = createServer(listener);
      const port = await withRandomPort(async (p) => {
        servers.push({ server, close: (await listenTcp(server, HOST, p)).close });
        return p;
      });
      bases[name as keyof typeof bases] = `http://${HOST}:${port}`;
    }
    directory = mkdtempSync(join(tmpdir(), "sightline-catch-all-"));
  });
  after(async () => {
    for (const { server, close } of servers) {
      server.closeAllConnections();
      await close();
    }
    rmSync(directory, { recursive: true, force: true });
  });

  const client = () =>
    new HttpClient({
      pins: {},
      signal: new AbortController().signal,
      mayTouch: (address) => address === HOST,
    });

  test("a path that does not exist: a baseline from the catch-alls, the same on every probe; none from a 404", async () => {
    const http = client();
    try {
      const first = await probeCatchAll(http, `${bases.spa}/`);
      assert.ok(first);
      assert.equal(first.status, 200);
      assert.equal(first.title, "Acme Shop");
      assert.deepEqual(
        await probeCatchAll(http, `${bases.spa}/`),
        first,
        "the echoed path and token are left out",
      );
      const wall = await probeCatchAll(http, `${bases.loginWall}/`);
      assert.equal(wall?.status, 302);
      assert.equal(wall?.location, `${bases.loginWall}/login?next=`);
      assert.equal(await probeCatchAll(http, `${bases.plain}/`), undefined);
    } finally {
      await http.close();
    }
  });

  test("another path's answer reads like the baseline; a file really served does not", async () => {
    const http = client();
    try {
      const baseline = (await probeCatchAll(http, `${bases.spa}/`))!;
      assert.equal(answersLikeCatchAll(baseline, await http.fetch(`${bases.spa}/backup.zip`)), true);
      assert.equal(answersLikeCatchAll(baseline, await http.fetch(`${bases.spa}/admin/config.php`)), true);
      assert.equal(answersLikeCatchAll(baseline, await http.fetch(`${bases.spa}/.env`)), false);
      const wall = (await probeCatchAll(http, `${bases.loginWall}/`))!;
      assert.equal(answersLikeCatchAll(wall, await http.fetch(`${bases.loginWall}/server-status`)), true);
    } finally {
      await http.close();
    }
  });

  test("web probing marks the catch-all application, and not the plain one", async () => {
    const options = { signal: new AbortController().signal, mayTouch: (address: string) => address === HOST };
    const port = (base: string) => Number(new URL(base).port);
    const marked = await probeWebTarget(
      { host: HOST, address: HOST, port: port(bases.spa), scheme: "http" },
      options,
    );
    assert.equal((marked?.entity.details?.catch_all as { status: number } | undefined)?.status, 200);
    const unmarked = await probeWebTarget(
      { host: HOST, address: HOST, port: port(bases.plain), scheme: "http" },
      options,
    );
    assert.ok(unmarked);
    assert.equal(unmarked.entity.details?.catch_all, undefined);
  });

  test("a template that takes any 200 is raised only on what the catch-all really serves", async () => {
    const dir = mkdtempSync(join(directory, "t-"));
    writeFileSync(
      join(dir, "weak.yaml"),
      `id: weak-files
info:
  name: Backup and config files
  author: test
  severity: medium
  tags: exposure
http:
  - method: GET
    path:
      - "{{BaseURL}}/backup.zip"
      - "{{BaseURL}}/admin/config.php"
      - "{{BaseURL}}/.env"
    matchers:
      - type: status
        status:
          - 200
`,
    );
    const templates = { builtIn: false, directories: [dir] };
    const http = client();
    const baseline = await probeCatchAll(http, `${bases.spa}/`);
    await http.close();
    const marked = {
      ...application(bases.spa, HOST),
      details: { ...application(bases.spa, HOST).details, catch_all: baseline },
    };

    const ctx = context({ templates });
    await createTemplatesModule().run(marked, ctx);
    assert.equal(ctx.issues.length, 1);
    assert.equal(ctx.issues[0].details.uri, `${bases.spa}/.env`);
    assert.equal(ctx.issues[0].details.matched_at, undefined, "one hit: the file really there");
    assert.ok(
      ctx.notes.some((note) => /answers any path alike \(HTTP 200 .*2 template match\(es\)/.test(note)),
      ctx.notes.join("\n"),
    );

    const unmarked = context({ templates });
    await createTemplatesModule().run(application(bases.spa, HOST), unmarked);
    assert.deepEqual(
      unmarked.issues[0].details.matched_at,
      [`${bases.spa}/backup.zip`, `${bases.spa}/admin/config.php`, `${bases.spa}/.env`],
      "without the mark, every 200 is a hit",
    );
  });
});
