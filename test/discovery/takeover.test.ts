/**
 * Subdomain takeovers: the shipped fingerprints file, the matching of names and answers, and the
 * module on the lab's takeover world (an unclaimed GitHub Pages name, its claimed twin, a released
 * Azure app name, and a dangling CNAME into a zone no fingerprint names), alone and through the engine.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import {
  compileServices,
  createTakeoverModule,
  isUnclaimedAnswer,
  serviceOfName,
  TAKEOVER_SERVICES_FILE,
  takeoverServices,
} from "../../src/discovery/modules/takeover.ts";
import { discoveryModules } from "../../src/discovery/modules.ts";
import { discoveryFixture, runModule } from "../helpers/discovery.ts";
import { type Lab, startLab } from "../lab/index.ts";
import { takeoverWorld, UNCLAIMED_PAGE } from "../lab/takeover-world.ts";

describe("takeover fingerprints file", () => {
  it("names at least 25 services, each with suffixes and an unclaimed answer", () => {
    const services = takeoverServices();
    assert.ok(services.length >= 25, `${services.length} services`);
    for (const service of services) {
      assert.ok(service.cname.length > 0 || service.patterns.length > 0, service.name);
      const { unclaimed } = service;
      assert.ok(unclaimed.nxdomain || unclaimed.body?.length || unclaimed.status, service.name);
    }
    assert.equal(new Set(services.map((s) => s.name)).size, services.length, "one entry per service");
  });

  it("finds the service of a name by suffix or pattern, and not of a look-alike", () => {
    assert.equal(serviceOfName("globex.github.io")?.name, "GitHub Pages");
    assert.equal(serviceOfName("GLOBEX.GITHUB.IO.")?.name, "GitHub Pages");
    assert.equal(serviceOfName("assets.s3.amazonaws.com")?.name, "Amazon S3");
    assert.equal(serviceOfName("assets.s3-website-eu-west-1.amazonaws.com")?.name, "Amazon S3");
    assert.equal(serviceOfName("assets.s3.eu-west-1.amazonaws.com")?.name, "Amazon S3");
    assert.equal(serviceOfName("shop.myshopify.com")?.name, "Shopify");
    assert.equal(serviceOfName("old.azurewebsites.net")?.name, "Microsoft Azure App Service");
    assert.equal(serviceOfName("notgithub.io"), undefined);
    assert.equal(serviceOfName("github.io.evil.test"), undefined);
    assert.equal(serviceOfName("www.acme.test"), undefined);
  });

  it("compares status and words of an answer", () => {
    const pages = serviceOfName("x.github.io")!;
    assert.equal(isUnclaimedAnswer(pages, 404, UNCLAIMED_PAGE), true);
    assert.equal(isUnclaimedAnswer(pages, 200, UNCLAIMED_PAGE), false, "the status must match too");
    assert.equal(isUnclaimedAnswer(pages, 404, "<h1>Not Found</h1>"), false);
    const s3 = serviceOfName("b.s3.amazonaws.com")!;
    assert.equal(isUnclaimedAnswer(s3, 404, "<Error><Code>NoSuchBucket</Code></Error>"), true);
    const azure = serviceOfName("a.azurewebsites.net")!;
    assert.equal(isUnclaimedAnswer(azure, 404, "anything"), false, "an NXDOMAIN service has no page");
  });

  it("refuses a file that says nothing of an unclaimed answer", () => {
    assert.throws(
      () => compileServices({ services: [{ name: "X", cname: ["x.test"], unclaimed: {} }] }),
      /says nothing about how an unclaimed name answers/,
    );
    assert.throws(() => compileServices({}), /needs a "services" list/);
    assert.doesNotThrow(() => compileServices(JSON.parse(readFileSync(TAKEOVER_SERVICES_FILE, "utf8"))));
  });
});

describe("takeovers on the lab", () => {
  let lab: Lab;
  before(async () => {
    lab = await startLab({ world: takeoverWorld });
  });
  after(async () => {
    await lab?.stop();
  });

  const check = (name: string) =>
    runModule(
      createTakeoverModule(),
      { kind: "DnsRecord", name },
      { dnsServers: [lab.resolver], timeoutMs: 1000 },
    );

  it("raises the unclaimed GitHub Pages name with its proof", async () => {
    const { issues } = await check("assets.globex.test");
    assert.equal(issues.length, 1);
    const [issue] = issues;
    assert.equal(issue.name, "subdomain_takeover");
    assert.equal(issue.confidence, "confirmed");
    assert.deepEqual(issue.entity, { kind: "DnsRecord", name: "assets.globex.test" });
    assert.deepEqual(issue.details.cname_chain, ["globex-assets.github.io"]);
    assert.equal(issue.details.service, "GitHub Pages");
    assert.equal(issue.details.status, 404);
    assert.match(String(issue.details.answer), /There isn't a GitHub Pages site here\./);
    const request = issue.details.request as { method: string; url: string };
    assert.equal(request.method, "GET");
    assert.equal(request.url, "http://assets.globex.test/");
  });

  it("leaves the claimed twin alone", async () => {
    assert.deepEqual((await check("help.globex.test")).issues, []);
  });

  it("raises a released name at a service whose names vanish (NXDOMAIN)", async () => {
    const { issues } = await check("media.globex.test");
    assert.equal(issues.length, 1);
    assert.equal(issues[0].details.service, "Microsoft Azure App Service");
    assert.deepEqual(issues[0].details.cname_chain, ["globex-legacy.azurewebsites.net"]);
    assert.match(String(issues[0].details.answer), /NXDOMAIN/);
  });

  it("knows a service by its shared address when a name points at it without a CNAME", async () => {
    const pagesIp = lab.ip("5.10");
    const byAddress = createTakeoverModule({
      services: [
        {
          name: "Lab Pages",
          cname: ["pages.invalid"],
          addresses: [pagesIp],
          unclaimed: { status: 404, body: ["There isn't a GitHub Pages site here."] },
        },
      ],
    });
    const run = (name: string) =>
      runModule(byAddress, { kind: "DnsRecord", name }, { dnsServers: [lab.resolver], timeoutMs: 1000 });
    const unclaimed = await run("globex-assets.github.io");
    assert.deepEqual(
      unclaimed.issues.map((issue) => [issue.name, issue.details.service, issue.details.cname_chain]),
      [["subdomain_takeover", "Lab Pages", []]],
    );
    assert.deepEqual((await run("globex.github.io")).issues, [], "the claimed name");
  });

  it("says nothing of names outside any service, dangling or not", async () => {
    assert.deepEqual((await check("old.acme.test")).issues, [], "cloudapp.test is no known service");
    assert.deepEqual((await check("www.globex.test")).issues, []);
  });

  it("does not fetch a page the deny list covers", async () => {
    const { issues, notes } = await runModule(
      createTakeoverModule(),
      { kind: "DnsRecord", name: "assets.globex.test" },
      { dnsServers: [lab.resolver], timeoutMs: 1000, allow: [] },
    );
    assert.deepEqual(issues, []);
    assert.match(notes.join("\n"), /deny list/);
  });

  it("through the engine: the takeover apart from the dangling CNAME, the twin not at all", async () => {
    const fixture = await discoveryFixture(
      "sqlite",
      [{ type: "Domain", name: "globex.test" }],
      { dnsServers: [lab.resolver], scanAllow: ["127.0.0.0/8"], timeoutMs: 1000, ports: "80" },
      discoveryModules(),
    );
    try {
      const { finished } = await fixture.run();
      assert.equal(finished, true);
      const findings = await fixture.entities.currentFindings(fixture.collectionId);
      const raised = findings.map((finding) => `${finding.name} ${finding.entityName}`).sort();
      const takeovers = raised.filter((line) => line.startsWith("subdomain_takeover"));
      assert.deepEqual(takeovers, [
        "subdomain_takeover assets.globex.test",
        "subdomain_takeover media.globex.test",
      ]);
      assert.ok(raised.includes("dns_dangling_cname media.globex.test"), "the dangling CNAME too");
      assert.ok(
        !raised.some((line) => line.endsWith(" help.globex.test")),
        "the claimed twin raises nothing",
      );
    } finally {
      await fixture.close();
    }
  });
});
