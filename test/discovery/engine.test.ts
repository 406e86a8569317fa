/**
 * The engine end to end on the lab: seeded with the lab's domains, a run reports every host, open
 * port, certificate and netblock of the lab and nothing that is not there; a second run after the lab
 * changes shows what is new; bad seeds end in a finished run with notes.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type DiscoveryFixture, discoveryFixture } from "../helpers/discovery.ts";
import { domainsView, hostsView, netblocksView, recentView } from "../helpers/result-views.ts";
import { type Lab, startLab } from "../lab/index.ts";

const LAB_SEEDS = [
  { type: "Domain" as const, name: "acme.test" },
  { type: "Domain" as const, name: "open.test" },
  { type: "Domain" as const, name: "wild.test" },
  { type: "Domain" as const, name: "globex.test" },
];

/** Recall and precision of `found` against `expected`, with what is missing and extra. */
function compare(found: Iterable<string>, expected: Iterable<string>) {
  const f = new Set(found);
  const e = new Set(expected);
  return { missing: [...e].filter((x) => !f.has(x)).sort(), extra: [...f].filter((x) => !e.has(x)).sort() };
}

describe("discovery engine on the lab", () => {
  let lab: Lab;
  let fixture: DiscoveryFixture;
  let firstRunId: number;

  before(async () => {
    lab = await startLab();
    fixture = await discoveryFixture("sqlite", LAB_SEEDS, {
      dnsServers: [lab.resolver],
      scanAllow: ["127.0.0.0/8"],
      ports: lab.ports,
      timeoutMs: 1000,
    });
  });
  after(async () => {
    await fixture?.close();
    await lab?.stop();
  });

  test("before any run, results are empty", async () => {
    assert.deepEqual(await hostsView(fixture.entities, fixture.collectionId), {});
    assert.deepEqual(await domainsView(fixture.entities, fixture.collectionId), []);
    assert.deepEqual(await recentView(fixture.entities, fixture.collectionId), []);
  });

  test("a run reports every lab host, port, certificate and netblock, and nothing else", async () => {
    const { run, finished, tasks } = await fixture.run();
    firstRunId = run.id;
    assert.equal(finished, true);
    const truth = lab.truth;
    const hosts = await hostsView(fixture.entities, fixture.collectionId);

    const expectedHosts = truth.hosts.flatMap((h) => (h.ipv6 ? [h.ip, h.ipv6] : [h.ip]));
    assert.deepEqual(compare(Object.keys(hosts), expectedHosts), { missing: [], extra: [] }, "hosts");

    const ports = (ip: string) => hosts[ip].ports.map((p) => `${ip}:${Number(p.number)}/${p.protocol}`);
    const foundPorts = Object.keys(hosts).flatMap(ports);
    const expectedPorts = [
      ...truth.hosts.flatMap((h) => h.ports.map((port) => `${h.ip}:${port}/tcp`)),
      // The UDP pass finds the name servers' UDP port 53 (and nothing else answers over UDP).
      ...truth.services.filter((s) => s.transport === "udp").map((s) => `${s.ip}:${s.port}/udp`),
    ];
    assert.deepEqual(compare(foundPorts, expectedPorts), { missing: [], extra: [] }, "ports");

    const certificates = await fixture.entities.current(fixture.collectionId, { kinds: ["SslCertificate"] });
    assert.deepEqual(
      compare(
        certificates.map((c) => c.name),
        truth.certificates.map((c) => `${c.subjectCommonName} (${c.sha256})`),
      ),
      { missing: [], extra: [] },
      "certificates",
    );

    const netblocks = await netblocksView(fixture.entities, fixture.collectionId);
    assert.deepEqual(netblocks.map((b) => b.name).sort(), ["127.0.0.0/8", "2001:db8::/32"]);
    const loopback = netblocks.find((b) => b.name === "127.0.0.0/8")!;
    assert.equal(loopback.net_name, "Loopback");
    assert.deepEqual(
      compare(
        loopback.hosts,
        truth.hosts.map((h) => h.ip),
      ),
      { missing: [], extra: [] },
    );
    for (const host of Object.values(hosts)) {
      assert.ok(["Loopback", "Documentation"].includes(host.net_name));
      assert.deepEqual(host.geolocation, {
        continent: "",
        country: "",
        country_code: "",
        continent_code: "",
      });
    }

    // Names: every name of the seeded zones is found (brute force, records, certificates, AXFR,
    // well-known names), the wildcard zone yields only its real names, and nothing is invented.
    const domains = await domainsView(fixture.entities, fixture.collectionId);
    const seeded = new Set(LAB_SEEDS.map((s) => s.name));
    const expectedNames = truth.names.filter((n) => seeded.has(n.zone)).map((n) => n.name);
    const visible = domains.filter((d) => !d.hidden).map((d) => d.name);
    const { missing, extra } = compare(visible, [...expectedNames, "acme-prod.cloudapp.test"]);
    assert.deepEqual({ missing, extra }, { missing: [], extra: [] }, "names");
    const outside = domains.find((d) => d.name === "acme-prod.cloudapp.test")!;
    assert.equal(outside.scoped, false, "a name outside the seeds is kept but unscoped");
    assert.ok(!tasks.some((task) => task.key.endsWith(":acme-prod.cloudapp.test")), "and never explored");
    assert.equal(new Set(tasks.map((task) => task.key)).size, tasks.length, "no work twice");
    const wild = domains.find((d) => d.name === "wild.test")!;
    assert.equal(wild.wildcard, true);
    assert.deepEqual(wild.wildcard_addresses, truth.wildcards[0].addresses);
    assert.equal(domains.find((d) => d.name === "open.test")!.zone_transfer, true);
    assert.equal(domains.find((d) => d.name === "ns1.acme.test")!.name_server, true);

    // The lab's IPv6 addresses are documentation addresses: recorded as hosts, never connected to.
    const notes = await fixture.entities.notes(run.id);
    for (const host of truth.hosts.filter((h) => h.ipv6))
      assert.ok(
        notes.includes(
          `${host.ipv6} was not port-scanned: the deny list covers it (allow it with SIGHTLINE_SCAN_ALLOW).`,
        ),
      );

    const www = hosts[truth.hosts.find((h) => h.names.includes("www.acme.test"))!.ip];
    assert.deepEqual(www.resolutions, ["acme.test", "shop.acme.test", "store.acme.test", "www.acme.test"]);
  });

  test("the dangling CNAME, the open zone transfer and the certificate problems are issues", async () => {
    const findings = await fixture.entities.currentFindings(fixture.collectionId);
    const has = (name: string, entity: string) =>
      findings.some((f) => f.name === name && f.entityName === entity);
    const truth = lab.truth;
    for (const dangling of truth.danglingCnames)
      assert.ok(has("dns_dangling_cname", dangling.name), dangling.name);
    for (const zone of truth.axfrZones) assert.ok(has("dns_zone_transfer_allowed", zone), zone);
    for (const certificate of truth.certificates) {
      const service = `${certificate.endpoint}/tcp`;
      assert.equal(has("tls_certificate_expired", service), certificate.expired, service);
      assert.equal(has("tls_certificate_self_signed", service), certificate.selfSigned, service);
    }
    assert.ok(!has("dns_zone_transfer_allowed", "acme.test"));
  });

  test("entities carry provenance: ancestors from a seed and task results with depth", async () => {
    const [backup] = await fixture.entities
      .current(fixture.collectionId, { kinds: ["NetworkService"] })
      .then((all) =>
        all.filter(
          (s) => s.name.endsWith(":6379/tcp") && s.ancestors.some((a) => a.name === "backup.acme.test"),
        ),
      );
    assert.ok(backup, "the redis service of backup.acme.test");
    assert.deepEqual(backup.ancestors[0], { name: "acme.test", type: "Service::Entity::Domain" });
    const [result] = backup.taskResults;
    assert.equal(result.task, "ports");
    assert.equal(result.entity_type, "Service::Entity::IpAddress");
    assert.equal(
      result.depth,
      1,
      "a brute-forced name is one step from the seed; its address and services share it",
    );
    const seed = (await fixture.entities.current(fixture.collectionId, { kinds: ["Domain"] })).find(
      (d) => d.name === "acme.test",
    )!;
    assert.deepEqual(seed.ancestors, []);
    // A name and the addresses it resolves to share an alias group.
    const [address] = (await fixture.entities.current(fixture.collectionId, { kinds: ["IpAddress"] })).filter(
      (a) => (a.details.resolutions as string[]).includes("backup.acme.test"),
    );
    const name = (await fixture.entities.current(fixture.collectionId, { kinds: ["DnsRecord"] })).find(
      (d) => d.name === "backup.acme.test",
    )!;
    assert.equal(address.aliasGroup, name.aliasGroup);
    assert.notEqual(address.aliasGroup, seed.aliasGroup);
  });

  test("a second run after the lab changes shows the new host in recent and moves last_seen", async () => {
    const before = await fixture.entities.current(fixture.collectionId, { kinds: ["IpAddress"] });
    const removed = lab.truth.hosts.find((h) => h.names.includes("backup.acme.test"))!.ip;
    const added = lab.ip("0.40");
    await lab.removeHost(removed);
    await lab.addHost({
      ip: added,
      names: ["new.acme.test"],
      services: [{ kind: "ssh", port: 22, banner: "SSH-2.0-OpenSSH_9.6" }],
    });
    const { finished } = await fixture.run();
    assert.equal(finished, true);

    const recent = await recentView(fixture.entities, fixture.collectionId);
    const recentNames = recent.map((e) => `${e.type.split("::").at(-1)}:${e.name}`).sort();
    assert.deepEqual(recentNames, [
      `DnsRecord:new.acme.test`,
      `IpAddress:${added}`,
      `NetworkService:${added}:22/tcp`,
    ]);
    const hosts = await hostsView(fixture.entities, fixture.collectionId);
    assert.ok(hosts[added], "the new host is a host");
    assert.equal(hosts[removed], undefined, "a host gone from the lab is gone from the results");

    const after = await fixture.entities.current(fixture.collectionId, { kinds: ["IpAddress"] });
    const www = lab.truth.hosts.find((h) => h.names.includes("www.acme.test"))!.ip;
    const [first, second] = [before, after].map((list) => list.find((a) => a.name === www)!);
    assert.equal(second.firstSeen, first.firstSeen, "first_seen is kept");
    assert.equal(second.firstRunId, firstRunId);
    assert.ok(second.lastSeen > first.lastSeen, "last_seen moves");
  });
});

describe("discovery engine with bad seeds", () => {
  let lab: Lab;
  before(async () => {
    lab = await startLab();
  });
  after(() => lab?.stop());

  test("an unresolvable domain and a denied address end in a finished run with notes", async () => {
    const fixture = await discoveryFixture(
      "sqlite",
      [
        { type: "Domain", name: "ghost.acme.test" },
        { type: "IpAddress", name: "169.254.169.254" },
        { type: "DnsRecord", name: "www.acme.test" },
      ],
      { dnsServers: [lab.resolver], scanAllow: ["127.0.0.0/8"], ports: lab.ports, timeoutMs: 500 },
    );
    try {
      const { run, finished } = await fixture.run();
      assert.equal(finished, true);
      const notes = (await fixture.entities.notes(run.id)).join("\n");
      assert.match(notes, /Seed ghost\.acme\.test does not resolve/);
      assert.match(notes, /169\.254\.169\.254 was not port-scanned: the deny list covers it/);
      const hosts = await hostsView(fixture.entities, fixture.collectionId);
      assert.deepEqual(hosts["169.254.169.254"].ports, [], "recorded, never touched");
      assert.equal(hosts["169.254.169.254"].net_name, "Link-local");
      const www = lab.truth.hosts.find((h) => h.names.includes("www.acme.test"))!;
      assert.deepEqual(
        hosts[www.ip].ports.map((p) => Number(p.number)),
        www.ports,
        "what could be found is found",
      );
    } finally {
      await fixture.close();
    }
  });

  test("a name server that never answers ends in a finished run with notes, not a hang", async () => {
    const silent = `${lab.silentNameserver.host}:${lab.silentNameserver.port}`;
    const fixture = await discoveryFixture("sqlite", [{ type: "Domain", name: "acme.test" }], {
      dnsServers: [silent],
      scanAllow: ["127.0.0.0/8"],
      ports: lab.ports,
      timeoutMs: 200,
    });
    try {
      const { run, finished } = await fixture.run();
      assert.equal(finished, true);
      const notes = (await fixture.entities.notes(run.id)).join("\n");
      assert.match(notes, /No DNS server answered for acme\.test/);
      assert.match(notes, /not brute-forced/);
      const domains = await domainsView(fixture.entities, fixture.collectionId);
      assert.deepEqual(
        domains.map((d) => d.name),
        ["acme.test"],
        "the seed is recorded even when nothing else could be found",
      );
    } finally {
      await fixture.close();
    }
  });
});

describe("discovery engine limits", () => {
  let lab: Lab;
  before(async () => {
    lab = await startLab();
  });
  after(() => lab?.stop());

  test("the depth limit records what lies beyond it without exploring it", async () => {
    const fixture = await discoveryFixture("sqlite", [{ type: "Domain", name: "acme.test" }], {
      dnsServers: [lab.resolver],
      scanAllow: ["127.0.0.0/8"],
      ports: lab.ports,
      depth: 1,
    });
    try {
      const { tasks } = await fixture.run();
      assert.ok(
        tasks.every((task) => task.depth === 0),
        "only depth-0 entities were explored",
      );
      const hosts = await hostsView(fixture.entities, fixture.collectionId);
      const apex = lab.truth.hosts.find((h) => h.names.includes("acme.test"))!;
      // The apex's own addresses are a closer look at the seed (depth 0), so they are scanned.
      assert.deepEqual(
        hosts[apex.ip].ports.map((p) => Number(p.number)),
        apex.ports,
      );
      const domains = (await domainsView(fixture.entities, fixture.collectionId)).map((d) => d.name);
      assert.ok(domains.includes("backup.acme.test"), "found by brute force at depth 1, recorded");
      const backup = lab.truth.hosts.find((h) => h.names.includes("backup.acme.test"))!;
      assert.equal(hosts[backup.ip], undefined, "but not resolved further");
    } finally {
      await fixture.close();
    }
  });

  test("a seed block is expanded into its addresses and scanned; a module failure is a note; an address's modules share a task", async () => {
    const broken = {
      name: "broken",
      consumes: ["IpAddress" as const],
      produces: [],
      async run() {
        throw new Error("cannot parse this");
      },
    };
    const { MODULES } = await import("../../src/discovery/modules.ts");
    const block = `${lab.base}.0.8/29`;
    const fixture = await discoveryFixture(
      "sqlite",
      [{ type: "NetBlock", name: block }],
      { dnsServers: [lab.resolver], scanAllow: ["127.0.0.0/8"], ports: lab.ports },
      [...MODULES, broken],
    );
    try {
      const { run, finished, tasks } = await fixture.run();
      assert.equal(finished, true);
      const hosts = await hostsView(fixture.entities, fixture.collectionId);
      assert.equal(Object.keys(hosts).length, 8, "every address of the /29 is a host");
      const addressTasks = tasks.filter((task) => task.key.endsWith(`:IpAddress:${block.split("/")[0]}`));
      assert.deepEqual(
        addressTasks.map((task) => task.kind),
        ["dns-reverse+ports+udp+netblocks+broken"],
        "one task runs every module of an address",
      );
      // Each module's sightings still name its own work, and its notes its own kind.
      const [address] = (
        await fixture.entities.current(fixture.collectionId, { kinds: ["IpAddress"] })
      ).filter((entity) => entity.name === block.split("/")[0]);
      assert.ok(address.taskResults.some((result) => result.name === `netblocks:IpAddress:${address.name}`));
      assert.ok((await fixture.entities.noteKinds(run.id)).some((summary) => summary.kind === "broken"));
      for (const host of lab.truth.hosts.filter((h) => /\.0\.(8|9|1[0-5])$/.test(h.ip)))
        assert.deepEqual(
          hosts[host.ip].ports.map((p) => Number(p.number)),
          host.ports,
          host.ip,
        );
      const notes = await fixture.entities.notes(run.id);
      assert.ok(notes.some((note) => /^broken failed on IpAddress .*: cannot parse this$/.test(note)));
    } finally {
      await fixture.close();
    }
  });
});
