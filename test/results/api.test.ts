/** The result endpoints over real HTTP, on SQLite and PostgreSQL, after a discovery run on the lab. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { formatDecimalExponent, parseDecimalExponent } from "../../src/core/formats.ts";
import { type LabServer, startLabServer } from "../helpers/lab-server.ts";
import type { Keys, TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import type { Lab } from "../lab/index.ts";
import { waitFor } from "../runs/helpers.ts";
import { HOST } from "./helpers.ts";

const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/;
const PATHS = ["hosts", "domains", "netblocks", "recent", "services"];

for (const { dialect, skip } of await dialects()) {
  describe(`results API on ${dialect}`, { skip }, () => {
    let lab: Lab;
    let t: TestServer;
    let stranger: Keys;
    let server: LabServer;

    before(async () => {
      server = await startLabServer(dialect);
      ({ lab, t, stranger } = server);
    });
    after(() => server?.close());

    /** Forces a run through the API and waits until /runs lists it finished. */
    async function runDiscovery(): Promise<number> {
      const forced = await t.request("POST", "/api/collections/lab/schedule");
      assert.equal(forced.status, 200, forced.text);
      const id = Number(forced.body.result.id);
      await waitFor(
        async () => {
          const runs = await t.request("GET", "/api/collections/lab/runs");
          const run = runs.body.result.find((r: { id: number }) => r.id === id);
          assert.notEqual(run?.status, "failed", JSON.stringify(run));
          return run?.status === "finished";
        },
        `run ${id} to finish`,
        60_000,
      );
      return id;
    }

    test("before any finished run: {} for hosts, [] for the lists", async () => {
      for (const path of PATHS) {
        const response = await t.request("GET", `/api/collections/lab/${path}`);
        assert.equal(response.status, 200, response.text);
        assert.deepEqual(response.body, {
          success: true,
          message: "success",
          result: path === "hosts" ? {} : [],
        });
        assert.equal(response.headers.get("x-total-count"), "0");
      }
    });

    test("the OpenAPI document describes the result shapes", async () => {
      const doc = (await t.request("GET", "/api/openapi.json", { keys: null })).body;
      const schema = (path: string) =>
        doc.paths[`/api/collections/{collection_name}/${path}`].get.responses["200"].content[
          "application/json"
        ].schema.properties.result;
      const host =
        schema("hosts").additionalProperties ?? Object.values(schema("hosts").patternProperties)[0];
      assert.deepEqual(Object.keys(host.properties).sort(), Object.keys(HOST).sort());
      assert.ok(schema("domains").items.properties.records.properties.mx);
      assert.ok(schema("netblocks").items.properties.asn);
      assert.ok(schema("recent").items.properties.alias_group);
      assert.ok(
        doc.paths["/api/collections/{collection_name}/recent"].get.parameters.some(
          (p: { name: string }) => p.name === "limit",
        ),
      );
    });

    test("a collection the user cannot see answers 404 in the error envelope", async () => {
      for (const path of PATHS) {
        const hidden = await t.request("GET", `/api/collections/lab/${path}`, { keys: stranger });
        assert.equal(hidden.status, 404);
        assert.equal(hidden.body.success, false);
        assert.equal(hidden.body.error.code, "not_found");
        const missing = await t.request("GET", `/api/collections/nope/${path}`);
        assert.equal(missing.status, 404);
      }
    });

    test("after a run: hosts, domains, netblocks and recent in the spec's shapes and formats", async () => {
      await runDiscovery();
      const truth = lab.truth;

      const hosts = await t.request("GET", "/api/collections/lab/hosts");
      assert.equal(hosts.status, 200, hosts.text);
      const www = truth.hosts.find((h) => h.names.includes("www.acme.test"))!;
      const host = hosts.body.result[www.ip];
      assert.deepEqual(Object.keys(host).sort(), Object.keys(HOST).sort());
      assert.deepEqual(
        host.ports,
        www.ports.map((port) => ({ number: formatDecimalExponent(port), protocol: "tcp" })),
      );
      assert.equal(host.ports[0].number, "0.8e2");
      assert.match(host.first_seen, TIMESTAMP);
      assert.equal(host.net_name, "Loopback");
      assert.deepEqual(host.geolocation, {
        continent: "",
        country: "",
        country_code: "",
        continent_code: "",
      });
      assert.equal(host.os, "");
      assert.equal(host.scoped, true);
      assert.equal(host.hidden, false);
      assert.ok(host.resolutions.includes("www.acme.test"));
      const dev = truth.hosts.find((h) => h.names.includes("dev.acme.test"))!;
      assert.equal(hosts.body.result[dev.ip].os, "Ubuntu", "the SSH banner names the OS");

      const domains = await t.request("GET", "/api/collections/lab/domains");
      const acme = domains.body.result.find((d: { name: string }) => d.name === "acme.test");
      assert.equal(acme.type, "Service::Entity::Domain");
      assert.match(acme.spf, /^v=spf1/);
      assert.deepEqual(acme.records.a, [www.ip]);
      parseDecimalExponent(acme.alias_group);

      const netblocks = await t.request("GET", "/api/collections/lab/netblocks");
      const loopback = netblocks.body.result.find((b: { name: string }) => b.name === "127.0.0.0/8");
      assert.equal(loopback.type, "Service::Entity::NetBlock");
      assert.equal(loopback.net_name, "Loopback");
      assert.ok(loopback.hosts.includes(www.ip));

      const recent = await t.request("GET", "/api/collections/lab/recent");
      assert.ok(recent.body.result.length > 0);
      for (const entity of recent.body.result) {
        assert.deepEqual(Object.keys(entity).sort(), [
          "alias_group",
          "first_seen",
          "hidden",
          "last_seen",
          "name",
          "scoped",
          "type",
        ]);
        assert.match(entity.type, /^Service::Entity::[A-Za-z]+$/);
        assert.match(entity.last_seen, TIMESTAMP);
        assert.ok(parseDecimalExponent(entity.alias_group) >= 1);
      }
      const certificate = truth.certificates.find((c) => c.subjectCommonName === "www.acme.test")!;
      assert.ok(
        recent.body.result.some(
          (e: { name: string; type: string }) =>
            e.type === "Service::Entity::SslCertificate" &&
            e.name === `www.acme.test (${certificate.sha256})`,
        ),
      );
    });

    test("services: every open port with what it answered, filtered, paged and exported", async () => {
      const truth = lab.truth;
      const services = await t.request("GET", "/api/collections/lab/services");
      assert.equal(services.status, 200, services.text);
      const byName = new Map(services.body.result.map((s: { name: string }) => [s.name, s]));
      const tcp = truth.services.filter((s) => s.transport === "tcp");
      for (const expected of tcp) {
        const item = byName.get(`${expected.ip}:${expected.port}/tcp`) as Record<string, unknown>;
        assert.ok(item, `${expected.ip}:${expected.port}`);
        assert.equal(item.address, expected.ip);
        assert.equal(item.port, expected.port);
        assert.equal(item.protocol, "tcp");
        assert.match(String(item.first_seen), TIMESTAMP);
        if (["ssh", "smtp", "ftp", "mysql", "redis"].includes(expected.service))
          assert.equal(item.service, expected.service, JSON.stringify(item));
      }
      const ssh = services.body.result.find((s: { service: string }) => s.service === "ssh");
      assert.equal(ssh.product, "OpenSSH");
      assert.match(ssh.cpe, /^cpe:2\.3:a:openbsd:openssh:/);
      assert.equal(ssh.identified_by, "greeting");
      const https = services.body.result.find((s: { tls: boolean }) => s.tls);
      assert.ok(https, "a TLS service says so");
      assert.match(https.tls_protocol, /^TLSv1/);

      const only22 = await t.request("GET", "/api/collections/lab/services?port=22");
      assert.ok(only22.body.result.length > 0);
      assert.ok(only22.body.result.every((s: { port: number }) => s.port === 22));
      const paged = await t.request("GET", "/api/collections/lab/services?limit=1");
      assert.equal(paged.body.result.length, 1);
      const csv = await t.request("GET", "/api/collections/lab/services?format=csv");
      assert.equal(csv.status, 200);
      const [header, ...rows] = csv.text.trim().split("\n");
      assert.match(header, /address.*port.*protocol.*service.*product.*version.*cpe.*tls/);
      assert.equal(rows.length, services.body.result.length);
      const unknown = await t.request("GET", "/api/collections/lab/services?colour=red");
      assert.equal(unknown.status, 400);
    });

    test("through the API, every lab host, port, certificate and netblock, and nothing else", async () => {
      const truth = lab.truth;
      const hosts = (await t.request("GET", "/api/collections/lab/hosts")).body.result;
      const expectedHosts = truth.hosts.flatMap((h) => (h.ipv6 ? [h.ip, h.ipv6] : [h.ip]));
      assert.deepEqual(Object.keys(hosts).sort(), expectedHosts.sort());
      type Port = { number: string; protocol: string };
      for (const host of truth.hosts) {
        const ports = (protocol: string) =>
          hosts[host.ip].ports
            .filter((p: Port) => p.protocol === protocol)
            .map((p: Port) => parseDecimalExponent(p.number));
        assert.deepEqual(ports("tcp"), host.ports, host.ip);
        // The UDP pass finds what answers over UDP: the name servers' port 53.
        const udp = truth.services
          .filter((s) => s.ip === host.ip && s.transport === "udp")
          .map((s) => s.port);
        assert.deepEqual(ports("udp"), udp, `${host.ip} over UDP`);
      }
      const recent = (await t.request("GET", "/api/collections/lab/recent")).body.result;
      const certificates = recent
        .filter((e: { type: string }) => e.type === "Service::Entity::SslCertificate")
        .map((e: { name: string }) => e.name)
        .sort();
      assert.deepEqual(
        certificates,
        truth.certificates.map((c) => `${c.subjectCommonName} (${c.sha256})`).sort(),
      );
      const netblocks = (await t.request("GET", "/api/collections/lab/netblocks")).body.result;
      assert.deepEqual(netblocks.map((b: { name: string }) => b.name).sort(), [
        "127.0.0.0/8",
        "2001:db8::/32",
      ]);
      const names = (await t.request("GET", "/api/collections/lab/domains")).body.result.map(
        (d: { name: string }) => d.name,
      );
      const real = new Set([...truth.names.map((n) => n.name)]);
      for (const name of names) assert.ok(real.has(name), `invented name ${name}`);
      for (const wild of truth.names.filter((n) => n.zone === "wild.test"))
        assert.ok(names.includes(wild.name));
    });

    test("limit and offset page a list without changing its shape", async () => {
      const all = await t.request("GET", "/api/collections/lab/recent");
      const total = Number(all.headers.get("x-total-count"));
      assert.equal(total, all.body.result.length);
      const first = await t.request("GET", "/api/collections/lab/recent?limit=5");
      assert.equal(first.body.result.length, 5);
      assert.equal(first.headers.get("x-total-count"), String(total));
      assert.equal(first.headers.get("link"), '</api/collections/lab/recent?limit=5&offset=5>; rel="next"');
      const second = await t.request("GET", "/api/collections/lab/recent?limit=5&offset=5");
      assert.deepEqual(second.body.result, all.body.result.slice(5, 10));
      const hosts = await t.request("GET", "/api/collections/lab/hosts?limit=2");
      assert.equal(Object.keys(hosts.body.result).length, 2);
      const domains = await t.request("GET", "/api/collections/lab/domains?limit=3&offset=1");
      const allDomains = await t.request("GET", "/api/collections/lab/domains");
      assert.deepEqual(domains.body.result, allDomains.body.result.slice(1, 4));
      const bad = await t.request("GET", "/api/collections/lab/recent?limit=0");
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, "bad_request");
    });
    test("a second run after the lab changes: the new host is recent, last_seen moves", async () => {
      const before = (await t.request("GET", "/api/collections/lab/hosts")).body.result;
      const added = lab.ip("0.41");
      await lab.addHost({ ip: added, names: ["new.acme.test"], services: [{ kind: "ftp", port: 21 }] });
      // Timestamps have one-second resolution: make the second run's visibly later.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await runDiscovery();
      const recent = (await t.request("GET", "/api/collections/lab/recent")).body.result;
      assert.deepEqual(recent.map((e: { name: string }) => e.name).sort(), [
        `${added}`,
        `${added}:21/tcp`,
        "new.acme.test",
      ]);
      const hosts = (await t.request("GET", "/api/collections/lab/hosts")).body.result;
      const www = lab.truth.hosts.find((h) => h.names.includes("www.acme.test"))!.ip;
      assert.equal(hosts[www].first_seen, before[www].first_seen);
      assert.ok(hosts[www].last_seen > before[www].last_seen, "last_seen moves");
      assert.deepEqual(hosts[added].ports, [{ number: "0.21e2", protocol: "tcp" }]);
    });
  });
}
