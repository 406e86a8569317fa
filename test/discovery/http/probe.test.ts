import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DEFAULTS } from "../../../src/core/config.ts";
import type { FoundEntity, FoundIssue } from "../../../src/core/entities.ts";
import type { Fingerprint } from "../../../src/core/facts.ts";
import {
  type DiscoveryContext,
  type DiscoveryModule,
  discoveryLimits,
} from "../../../src/discovery/module.ts";
import { createHttpModule } from "../../../src/discovery/modules/http.ts";
import { createTemplatesModule } from "../../../src/discovery/modules/templates.ts";
import { Throttle } from "../../../src/discovery/net/throttle.ts";
import { openStore, type Store } from "../../../src/store/database.ts";
import { migrateToLatest } from "../../../src/store/migrate.ts";
import { VulnerabilityRepository } from "../../../src/store/vulns.ts";
import { createTestStore, type TestStore } from "../../helpers/stores.ts";
import { startWebServer, type TestWebServer } from "./servers.ts";

interface Collected {
  entities: FoundEntity[];
  issues: FoundIssue[];
  notes: string[];
}

function context(options: { deny?: string[]; signal?: AbortSignal } = {}): DiscoveryContext & Collected {
  const collected: Collected = { entities: [], issues: [], notes: [] };
  return {
    ...collected,
    signal: options.signal ?? new AbortController().signal,
    depth: 1,
    throttle: new Throttle({ concurrency: 8, perHostConcurrency: 4, rateLimit: 0 }),
    settings: {
      dnsServers: [],
      ports: [],
      wordlist: "small",
      timeoutMs: 2000,
      concurrency: 8,
      perHostConcurrency: 4,
      rateLimit: 0,
      limits: discoveryLimits(DEFAULTS),
    },
    emit: (entity) => collected.entities.push(entity),
    raise: (issue) => collected.issues.push(issue),
    note: (message) => collected.notes.push(message),
    mayTouch: (address) => !(options.deny ?? []).includes(address),
  };
}

/**
 * Web probing, then the templates that replaced the hand-written checks (tag sightline-check) on the
 * application it found: what one application's visit raises.
 */
async function probe(module: DiscoveryModule, entity: FoundEntity, ctx: DiscoveryContext & Collected) {
  await module.run(entity, ctx);
  const checks = createTemplatesModule({ settings: { tags: ["sightline-check"] } });
  for (const application of [...ctx.entities]) await checks.run(application, ctx);
}

const service = (port: number, extra: Record<string, unknown> = {}): FoundEntity => ({
  kind: "NetworkService",
  name: `127.0.0.1:${port}/tcp`,
  details: { ip_address: "127.0.0.1", port, protocol: "tcp", service: "http", banner: "", ...extra },
});

const LOGIN_PAGE = `<!doctype html><html><head><title>Acme  Staff
 Login</title><meta name="generator" content="WordPress 5.8.2">
<script src="https://cdn.example-cdn.test/libs/jquery-3.4.1.min.js"></script>
<link rel="stylesheet" href="/style.css"></head>
<body><form action="/session" method="post"><input name="user"><input type="password" name="pass"></form></body></html>`;

const issueNames = (issues: FoundIssue[]) => issues.map((issue) => issue.name).sort();

describe("web probing", () => {
  let testStore: TestStore;
  let store: Store;
  const servers: Record<string, TestWebServer> = {};

  before(async () => {
    testStore = await createTestStore("sqlite");
    store = openStore(testStore.config);
    await migrateToLatest(store);
    servers.planted = await startWebServer((request, response) => {
      const common = { server: "Apache/2.4.49 (Unix)", "x-powered-by": "PHP/7.3.10" };
      if (request.url === "/") {
        response.writeHead(302, { ...common, location: "/login" }).end();
      } else if (request.url === "/login") {
        response.writeHead(200, {
          ...common,
          "content-type": "text/html",
          "set-cookie": "PHPSESSID=abc123; path=/",
        });
        response.end(LOGIN_PAGE);
      } else if (request.url === "/.git/HEAD") {
        response.writeHead(200, { ...common, "content-type": "text/plain" }).end("ref: refs/heads/main\n");
      } else response.writeHead(404, common).end("not found");
    });
    servers.listing = await startWebServer((request, response) => {
      if (request.url !== "/") return response.writeHead(404).end();
      response.writeHead(200, { "content-type": "text/html", server: "nginx" });
      response.end(
        '<html><head><title>Index of /</title></head><body><h1>Index of /</h1><a href="backup.tar.gz">backup.tar.gz</a></body></html>',
      );
    });
    servers.weakTls = await startWebServer(
      (_request, response) => {
        response.writeHead(200, { "content-type": "text/html", "set-cookie": "session=s3cr3t; Path=/" });
        response.end("<html><head><title>Portal</title></head><body>Welcome</body></html>");
      },
      { tls: true },
    );
    servers.cleanTls = await startWebServer(
      (request, response) => {
        if (request.url !== "/")
          return response.writeHead(404, { "strict-transport-security": "max-age=31536000" }).end();
        response.writeHead(200, {
          "content-type": "application/json",
          server: "nginx",
          "strict-transport-security": "max-age=31536000; includeSubDomains",
          "set-cookie": "sid=1; Path=/; Secure; HttpOnly; SameSite=Lax",
          "x-amz-cf-id": "abc",
          "cf-ray": "8c1-LHR",
        });
        response.end('{"status":"ok"}');
      },
      { tls: true },
    );
    servers.cleanHttp = await startWebServer((request, response) => {
      if (request.url !== "/") return response.writeHead(404).end();
      response
        .writeHead(200, { "content-type": "text/html" })
        .end("<html><head><title>Hello</title></head><body>Hi</body></html>");
    });
    servers.vhosts = await startWebServer((request, response) => {
      const host = (request.headers.host ?? "").split(":")[0];
      response.writeHead(200, { "content-type": "text/html" });
      response.end(
        `<html><head><title>${host === "www.acme.test" ? "Acme WWW" : "Default site"}</title></head></html>`,
      );
    });
    servers.elsewhere = await startWebServer((_request, response) => {
      response.writeHead(301, { location: "https://login.other.test/start" }).end();
    });
    servers.huge = await startWebServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/plain" });
      response.end("x".repeat(3 * 1024 * 1024));
    });
  });
  after(async () => {
    for (const server of Object.values(servers)) await server.close();
    await store.close();
    await testStore.drop();
  });

  it("finds a planted application with its details, products, CVEs and weaknesses", async () => {
    const ctx = context();
    await probe(
      createHttpModule({ cves: new VulnerabilityRepository(store.db) }),
      service(servers.planted.port),
      ctx,
    );
    assert.equal(ctx.entities.length, 1);
    const [app] = ctx.entities;
    const port = servers.planted.port;
    assert.equal(app.kind, "Uri");
    assert.equal(app.name, `http://127.0.0.1:${port}`);
    const details = app.details ?? {};
    assert.equal(details.code, "200");
    assert.equal(details.title, "Acme Staff Login");
    assert.equal(details.uri, `http://127.0.0.1:${port}/login`);
    assert.deepEqual(details.redirect_chain, [`http://127.0.0.1:${port}/`]);
    assert.deepEqual(details.scripts, ["https://cdn.example-cdn.test/libs/jquery-3.4.1.min.js"]);
    assert.deepEqual(details.request_hosts, ["127.0.0.1", "cdn.example-cdn.test"]);
    assert.equal(details.forms, true);
    assert.equal(details.service, "http");
    assert.equal(details.port, port);
    assert.equal(details.cookies, "PHPSESSID=…; path=/", "a cookie's name and attributes, not its value");
    assert.ok((details.headers as string[]).includes("server: Apache/2.4.49 (Unix)"));
    assert.match(String(details.response_data_hash), /^[0-9a-f]{64}$/);
    const content = details.content as Array<{ name: string; result: boolean }>;
    assert.equal(content.find((check) => check.name === "Authentication - Login Form")?.result, true);
    assert.equal(content.find((check) => check.name === "Directory Listing")?.result, false);

    const fingerprints = details.fingerprint as Fingerprint[];
    const cpes = Object.fromEntries(fingerprints.map((fingerprint) => [fingerprint.product, fingerprint]));
    assert.equal(cpes["Apache HTTP Server"].cpe, "cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*");
    assert.equal(cpes["Apache HTTP Server"].inference, true);
    assert.equal(cpes.PHP.cpe, "cpe:2.3:a:php:php:7.3.10:*:*:*:*:*:*:*");
    assert.equal(cpes.jQuery.cpe, "cpe:2.3:a:jquery:jquery:3.4.1:*:*:*:*:*:*:*");
    assert.equal(cpes.WordPress.cpe, "cpe:2.3:a:wordpress:wordpress:5.8.2:*:*:*:*:*:*:*");
    assert.deepEqual(
      cpes["Apache HTTP Server"].vulns.map((vuln) => vuln.cve),
      ["CVE-2021-42013", "CVE-2021-41773"],
    );
    assert.ok(
      (details.products as string[][]).some(([name, version]) => name === "PHP" && version === "7.3.10"),
    );

    assert.deepEqual(issueNames(ctx.issues), [
      "exposed_git_repository",
      "inferred_cve_2019_11043",
      "inferred_cve_2020_11022",
      "inferred_cve_2020_11023",
      "inferred_cve_2021_41773",
      "inferred_cve_2021_42013",
      "login_form_without_tls",
      "server_version_disclosure",
    ]);
    const git = ctx.issues.find((issue) => issue.name === "exposed_git_repository");
    assert.deepEqual(git?.details.request, {
      method: "GET",
      url: `http://127.0.0.1:${port}/.git/HEAD`,
      headers: git?.details.request && (git.details.request as { headers: Record<string, string> }).headers,
      hostname: "127.0.0.1",
    });
    assert.equal(git?.details.status, "200");
    assert.equal(git?.entity.name, app.name);
    const login = ctx.issues.find((issue) => issue.name === "login_form_without_tls");
    assert.equal(login?.details.insecure_resource_url, `http://127.0.0.1:${port}/session`);
    const cve = ctx.issues.find((issue) => issue.name === "inferred_cve_2021_42013");
    assert.equal(cve?.confidence, "potential");
    assert.equal(cve?.severity, 1);
    assert.deepEqual(
      (cve?.details.affected_software as Array<{ cpe: string }> | undefined)?.[0].cpe,
      cpes["Apache HTTP Server"].cpe,
    );
  });

  it("raises directory listing on a listing", async () => {
    const ctx = context();
    await probe(createHttpModule(), service(servers.listing.port), ctx);
    assert.deepEqual(issueNames(ctx.issues), ["directory_listing"]);
    assert.equal(ctx.issues[0].details.uri, `http://127.0.0.1:${servers.listing.port}/`);
  });

  it("falls back to HTTPS and raises missing HSTS and insecure cookies there", async () => {
    const ctx = context();
    await probe(createHttpModule(), service(servers.weakTls.port), ctx);
    assert.equal(ctx.entities[0]?.name, `https://127.0.0.1:${servers.weakTls.port}`);
    assert.deepEqual(issueNames(ctx.issues), ["insecure_cookie", "missing_hsts_header"]);
    const cookie = ctx.issues.find((issue) => issue.name === "insecure_cookie");
    assert.deepEqual(cookie?.details.missing, ["Secure", "HttpOnly"]);
    assert.equal(cookie?.details.cookie, "session");
  });

  it("raises nothing on clean servers, and reads APIs and cloud providers", async () => {
    for (const server of [servers.cleanTls, servers.cleanHttp]) {
      const ctx = context();
      await probe(createHttpModule(), service(server.port), ctx);
      assert.equal(ctx.entities.length, 1);
      assert.deepEqual(ctx.issues, [], `no issue on ${ctx.entities[0].name}`);
    }
    const ctx = context();
    await createHttpModule().run(service(servers.cleanTls.port), ctx);
    const details = ctx.entities[0].details ?? {};
    assert.equal(details.api_endpoint, true);
    assert.equal(details.cloud_hosted, true);
    assert.deepEqual(details.cloud_providers, ["Cloudflare", "Amazon Web Services"]);
  });

  it("probes a service by its address, or by the name it is handed as a virtual host", async () => {
    const module = createHttpModule();
    const port = servers.vhosts.port;
    const byAddress = context();
    await module.run(service(port), byAddress);
    const byName = context();
    await module.run(service(port, { hostname: "www.acme.test" }), byName);
    const titles = Object.fromEntries(
      [...byAddress.entities, ...byName.entities].map((entity) => [entity.name, entity.details?.title]),
    );
    assert.deepEqual(titles, {
      [`http://127.0.0.1:${port}`]: "Default site",
      [`http://www.acme.test:${port}`]: "Acme WWW",
    });
    // One unit of work per host and port, however the module is reached.
    assert.equal(module.virtualHosts, true);
    assert.equal(module.workKey?.(service(port, { hostname: "www.acme.test" })), `www.acme.test:${port}`);
    assert.equal(
      module.workKey?.({ kind: "Uri", name: `http://www.acme.test:${port}` }),
      `www.acme.test:${port}`,
    );
    assert.equal(module.workKey?.({ kind: "Uri", name: "https://www.acme.test" }), "www.acme.test:443");
    assert.equal(module.workKey?.(service(port)), `127.0.0.1:${port}`);
    assert.equal(module.wants?.(service(port)), true);
    assert.equal(module.wants?.(service(22, { service: "ssh", banner: "SSH-2.0-OpenSSH_8.9" })), false);
  });

  it("records a redirect to another host without following it", async () => {
    const ctx = context();
    await createHttpModule().run(service(servers.elsewhere.port), ctx);
    const details = ctx.entities[0].details ?? {};
    assert.equal(details.code, "301");
    assert.deepEqual(details.redirect_chain, [
      `http://127.0.0.1:${servers.elsewhere.port}/`,
      "https://login.other.test/start",
    ]);
  });

  it("cuts large bodies at the bound", async () => {
    const ctx = context();
    await createHttpModule({ limits: { maxBodyBytes: 1024 } }).run(service(servers.huge.port), ctx);
    const { createHash } = await import("node:crypto");
    assert.equal(
      ctx.entities[0].details?.response_data_hash,
      createHash("sha256").update("x".repeat(1024)).digest("hex"),
    );
  });

  it("touches nothing the deny list covers, and nothing after the run is cancelled", async () => {
    const denied = context({ deny: ["127.0.0.1"] });
    await createHttpModule().run(service(servers.cleanHttp.port), denied);
    assert.deepEqual(denied.entities, []);
    assert.match(denied.notes[0], /deny list/);

    const controller = new AbortController();
    controller.abort();
    const cancelled = context({ signal: controller.signal });
    await createHttpModule().run(service(servers.cleanHttp.port), cancelled);
    assert.deepEqual(cancelled.entities, []);
  });

  it("does not probe again an application it found when it comes back as a Uri", async () => {
    const uri = `http://127.0.0.1:${servers.cleanHttp.port}`;
    const probed = context();
    await createHttpModule().run({ kind: "Uri", name: uri }, probed);
    const [application] = probed.entities;
    assert.equal(application?.name, `${uri}`.replace(/\/$/, ""));
    const again = context({ deny: ["127.0.0.1"] });
    await createHttpModule().run(application!, again);
    assert.deepEqual([again.entities, again.notes], [[], []], "no request was even considered");
  });

  it("leaves services that are not web alone", async () => {
    const ctx = context();
    await createHttpModule().run(
      service(servers.cleanHttp.port, { service: "ssh", banner: "SSH-2.0-OpenSSH_8.9" }),
      ctx,
    );
    assert.deepEqual(ctx.entities, []);
  });

  it("probes a Uri entity, its scheme first", async () => {
    const ctx = context();
    await createHttpModule().run({ kind: "Uri", name: `http://127.0.0.1:${servers.cleanHttp.port}/` }, ctx);
    assert.equal(ctx.entities[0]?.details?.title, "Hello");
    // The port speaks TLS whatever the URI says: it is the same application as its service.
    const wrong = context();
    await createHttpModule().run({ kind: "Uri", name: `http://127.0.0.1:${servers.weakTls.port}/` }, wrong);
    assert.equal(wrong.entities[0]?.name, `https://127.0.0.1:${servers.weakTls.port}`);
  });
});
