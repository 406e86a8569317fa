/**
 * Web discovery through the engine on the lab: every web port is probed by address and by every name
 * resolving to the address, whichever of the name and the service is found first, and each application
 * (host and port) exactly once per run, even when a URI seed names one too.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { discoveryModules } from "../../src/discovery/modules.ts";
import { VulnerabilityRepository } from "../../src/store/vulns.ts";
import { type DiscoveryFixture, discoveryFixture } from "../helpers/discovery.ts";
import { applicationsView } from "../helpers/result-views.ts";
import { type Lab, startLab } from "../lab/index.ts";

describe("web discovery on the lab", () => {
  let lab: Lab;
  let fixture: DiscoveryFixture;

  before(async () => {
    lab = await startLab();
    const vhosts = lab.truth.hosts.find((host) => host.names.includes("portal.globex.test"))!;
    // The modules look CVEs up in the fixture's own database, which exists once the fixture does.
    let cves: VulnerabilityRepository | undefined;
    fixture = await discoveryFixture(
      "sqlite",
      [
        { type: "Domain", name: "globex.test" },
        // The address as a seed too, so its services may be found before the names resolving to it.
        { type: "IpAddress", name: vhosts.ip },
        { type: "Uri", name: "http://blog.globex.test/" },
      ],
      { dnsServers: [lab.resolver], scanAllow: ["127.0.0.0/8"], timeoutMs: 1000 },
      discoveryModules({ cves: { matchCpe: (cpe) => cves!.matchCpe(cpe) } }),
    );
    cves = new VulnerabilityRepository(fixture.store.db);
  });
  after(async () => {
    await fixture?.close();
    await lab?.stop();
  });

  test("each application is probed once, by address and by every name resolving to it", async () => {
    const { tasks, finished } = await fixture.run();
    assert.equal(finished, true);
    const probes = tasks.filter((task) => task.kind === "http").map((task) => task.key);
    assert.equal(new Set(probes).size, probes.length, "no application twice");
    const globex = new Set(
      lab.truth.hosts
        .filter((host) => host.names.some((name) => name.endsWith(".globex.test")))
        .map((h) => h.ip),
    );
    const expected = lab.truth.applications
      .filter((app) => globex.has(app.ip))
      .map((app) => `http:${app.host}:${app.port}`);
    assert.deepEqual(probes.sort(), expected.sort());

    const applications = await applicationsView(fixture.entities, fixture.collectionId);
    assert.deepEqual(
      applications.map((app) => app.name).sort(),
      lab.truth.applications
        .filter((app) => globex.has(app.ip))
        .map((app) => app.name)
        .sort(),
      "the URI seed is not an application of its own",
    );
    // A virtual host is reached from its name, whatever led to the service first.
    const portal = applications.find((app) => app.name === "http://portal.globex.test:80")!;
    const ip = portal.details.ip_address;
    assert.deepEqual(portal.ancestors, [
      { name: "globex.test", type: "Service::Entity::Domain" },
      { name: "portal.globex.test", type: "Service::Entity::DnsRecord" },
      { name: ip, type: "Service::Entity::IpAddress" },
      { name: `${ip}:80/tcp`, type: "Service::Entity::NetworkService" },
    ]);
    const blog = applications.find((app) => app.name === "http://blog.globex.test:80")!;
    assert.equal(blog.details.title, "Globex Blog");
    assert.ok(
      blog.details.fingerprint.some(
        (f) => f.product === "PHP" && f.vulns.some((v) => v.cve === "CVE-2019-11043"),
      ),
    );
  });
});
