/** The DNS modules, each alone, against the lab's authoritative server. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { dnsRecords } from "../../src/discovery/modules/dns.ts";
import { zoneTransfer } from "../../src/discovery/modules/dns-axfr.ts";
import { dnsBruteforce } from "../../src/discovery/modules/dns-brute.ts";
import { reverseDns } from "../../src/discovery/modules/dns-reverse.ts";
import { namesOf, runModule } from "../helpers/discovery.ts";
import { type Lab, startLab } from "../lab/index.ts";

describe("DNS modules against the lab", () => {
  let lab: Lab;
  let settings: { dnsServers: string[] };
  before(async () => {
    lab = await startLab();
    settings = { dnsServers: [lab.resolver] };
  });
  after(() => lab?.stop());

  const issueNames = (outcome: { issues: Array<{ name: string }> }) =>
    outcome.issues.map((i) => i.name).sort();

  test("records of a domain: its addresses, the names its records point at, its mail policy", async () => {
    const outcome = await runModule(dnsRecords, { kind: "Domain", name: "acme.test" }, settings);
    const apex = lab.truth.hosts.find((host) => host.names.includes("acme.test"))!;
    assert.deepEqual(namesOf(outcome, "IpAddress"), [apex.ip, apex.ipv6].sort());
    assert.deepEqual(namesOf(outcome, "Nameserver"), ["ns1.acme.test", "ns2.acme.test"]);
    const names = namesOf(outcome, "DnsRecord");
    for (const expected of ["mail.acme.test", "_dmarc.acme.test", "_sip._tcp.acme.test", "sip.acme.test"])
      assert.ok(names.includes(expected), `${expected} in ${names}`);
    const self = outcome.entities.find((e) => e.kind === "Domain" && e.details?.records)!;
    assert.match(String(self.details!.spf), /^v=spf1 /);
    // The mail provider its policy includes, and the one that provider's policy includes in turn.
    assert.deepEqual(self.details!.spf_includes, ["_spf.mailhost.test", "_spf2.mailhost.test"]);
    assert.equal(self.details!.spf_lookups, 3, "mx and two includes");
    assert.match(String(self.details!.dmarc), /^v=DMARC1; p=none/);
    // acme.test has SPF and CAA; its DMARC policy only reports.
    assert.deepEqual(issueNames(outcome), ["email_dmarc_policy_none"]);
    const address = outcome.entities.find((e) => e.kind === "IpAddress" && e.name === apex.ip)!;
    assert.deepEqual(address.aliases, [{ kind: "Domain", name: "acme.test" }]);
  });

  test("record sets read the same however the server orders them, so an unchanged domain is unchanged", async () => {
    // The lab answers each record set one record further on every time, as BIND does.
    const [first, second] = [
      await runModule(dnsRecords, { kind: "Domain", name: "acme.test" }, settings),
      await runModule(dnsRecords, { kind: "Domain", name: "acme.test" }, settings),
    ].map((outcome) => outcome.entities.find((e) => e.kind === "Domain" && e.details?.records)!.details!);
    const records = first.records as Record<string, string[]>;
    assert.ok(records.txt.length > 2 && records.ns.length === 2, "sets of several records");
    assert.deepEqual(second, first);
    assert.deepEqual(records.txt, [...records.txt].sort());
  });

  test("a domain without DMARC and CAA raises both; one without SPF raises that too", async () => {
    const open = await runModule(dnsRecords, { kind: "Domain", name: "open.test" }, settings);
    assert.deepEqual(issueNames(open), ["dns_caa_missing", "email_dmarc_missing"]);
    const wild = await runModule(dnsRecords, { kind: "Domain", name: "wild.test" }, settings);
    assert.deepEqual(issueNames(wild), ["dns_caa_missing", "email_dmarc_missing", "email_spf_missing"]);
  });

  test("a dangling CNAME is raised and its missing target is not reported; a live one is followed", async () => {
    const [dangling] = lab.truth.danglingCnames;
    const dead = await runModule(dnsRecords, { kind: "DnsRecord", name: dangling.name }, settings);
    assert.deepEqual(issueNames(dead), ["dns_dangling_cname"]);
    assert.equal(dead.issues[0].details.target, dangling.target);
    assert.deepEqual(
      namesOf(dead, "DnsRecord"),
      [dangling.name],
      "only the alias itself, not its missing target",
    );

    const live = await runModule(dnsRecords, { kind: "DnsRecord", name: "app.acme.test" }, settings);
    const target = lab.truth.hosts.find((host) => host.names.includes("acme-prod.cloudapp.test"))!;
    assert.deepEqual(namesOf(live, "IpAddress"), [target.ip]);
    assert.deepEqual(namesOf(live, "DnsRecord"), ["acme-prod.cloudapp.test", "app.acme.test"]);
    assert.deepEqual(live.issues, []);
  });

  test("a seed that does not resolve is a note; a name found on the way is silent", async () => {
    const seed = await runModule(
      dnsRecords,
      { kind: "Domain", name: "ghost.acme.test" },
      { ...settings, depth: 0 },
    );
    assert.deepEqual(seed.entities, []);
    assert.match(seed.notes.join(), /ghost\.acme\.test does not resolve/);
    const found = await runModule(dnsRecords, { kind: "DnsRecord", name: "ghost.acme.test" }, settings);
    assert.deepEqual(found.notes, []);
  });

  test("a silent name server is a note after the timeout, not a hang or a failure", async () => {
    const silent = `${lab.silentNameserver.host}:${lab.silentNameserver.port}`;
    const outcome = await runModule(
      dnsRecords,
      { kind: "Domain", name: "acme.test" },
      { dnsServers: [silent], timeoutMs: 200 },
    );
    assert.deepEqual(outcome.entities, []);
    assert.match(outcome.notes.join(), /No DNS server answered for acme\.test/);
  });

  test("brute force finds every guessable name of the zone and nothing else", async () => {
    const outcome = await runModule(dnsBruteforce, { kind: "Domain", name: "acme.test" }, settings);
    const truth = lab.truth;
    const words = new Set(truth.bruteforceWords);
    const guessable = truth.names
      .filter((n) => n.zone === "acme.test" && words.has(n.name.slice(0, -".acme.test".length)))
      .map((n) => n.name)
      .sort();
    const found = namesOf(outcome, "DnsRecord");
    for (const name of guessable) assert.ok(found.includes(name), `brute force missed ${name}`);
    const real = new Set(truth.names.map((n) => n.name));
    for (const name of found) assert.ok(real.has(name), `brute force invented ${name}`);
    assert.ok(found.includes("old.acme.test"), "a dangling alias exists and is found");
  });

  test("a wildcard zone does not explode into names; the wildcard is recorded with its addresses", async () => {
    const outcome = await runModule(dnsBruteforce, { kind: "Domain", name: "wild.test" }, settings);
    const truth = lab.truth;
    const real = truth.names.filter((n) => n.zone === "wild.test").map((n) => n.name);
    const found = namesOf(outcome, "DnsRecord");
    assert.ok(found.length > 0);
    for (const name of found) assert.ok(real.includes(name), `wildcard answer reported as a name: ${name}`);
    const [wildcard] = truth.wildcards;
    const domain = outcome.entities.find((e) => e.kind === "Domain" && e.details?.wildcard)!;
    assert.deepEqual((domain.details!.wildcard as { addresses: string[] }).addresses, wildcard.addresses);
    assert.deepEqual(namesOf(outcome, "IpAddress"), wildcard.addresses);
  });

  test("brute force under a silent name server stops at the wildcard probe with a note", async () => {
    const silent = `${lab.silentNameserver.host}:${lab.silentNameserver.port}`;
    const outcome = await runModule(
      dnsBruteforce,
      { kind: "Domain", name: "acme.test" },
      { dnsServers: [silent], timeoutMs: 200 },
    );
    assert.deepEqual(outcome.entities, []);
    assert.match(outcome.notes.join(), /not brute-forced/);
  });

  test("an open zone transfer is raised and yields every name of the zone", async () => {
    const outcome = await runModule(zoneTransfer, { kind: "Domain", name: "open.test" }, settings);
    assert.deepEqual(issueNames(outcome), ["dns_zone_transfer_allowed"]);
    const zone = lab.truth.names
      .filter((n) => n.zone === "open.test" && n.name !== "open.test")
      .map((n) => n.name);
    assert.deepEqual(namesOf(outcome, "DnsRecord"), zone.sort());
    for (const hidden of lab.truth.onlyVia.axfr ?? []) assert.ok(zone.includes(hidden));
    const addresses = lab.truth.hosts
      .filter((h) => h.names.some((n) => n.endsWith("open.test")))
      .map((h) => h.ip);
    assert.deepEqual(namesOf(outcome, "IpAddress"), addresses.sort());
  });

  test("a refused zone transfer is recorded on the domain, not raised", async () => {
    const outcome = await runModule(zoneTransfer, { kind: "Domain", name: "acme.test" }, settings);
    assert.deepEqual(outcome.issues, []);
    const domain = outcome.entities.find((e) => e.kind === "Domain")!;
    const transfer = domain.details!.zone_transfer as { open: boolean; attempts: Array<{ result: string }> };
    assert.equal(transfer.open, false);
    assert.equal(transfer.attempts.length, 2);
    for (const attempt of transfer.attempts) assert.match(attempt.result, /^refused/);
  });

  test("reverse DNS names the host; an address without PTR yields nothing", async () => {
    const named = lab.truth.hosts.find((h) => h.ptr === "www.acme.test")!;
    const outcome = await runModule(reverseDns, { kind: "IpAddress", name: named.ip }, settings);
    assert.deepEqual(namesOf(outcome, "DnsRecord"), ["www.acme.test"]);
    const unnamed = lab.truth.hosts.find((h) => h.ptr === null)!;
    const none = await runModule(reverseDns, { kind: "IpAddress", name: unnamed.ip }, settings);
    assert.deepEqual(namesOf(none, "DnsRecord"), []);
  });
});
