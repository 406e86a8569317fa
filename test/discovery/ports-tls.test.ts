/** The port scan and TLS modules, each alone, against the lab's hosts. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { portScan } from "../../src/discovery/modules/ports.ts";
import { tlsCertificates } from "../../src/discovery/modules/tls.ts";
import { namesOf, runModule } from "../helpers/discovery.ts";
import { type Lab, startLab } from "../lab/index.ts";

describe("port scan and TLS against the lab", () => {
  let lab: Lab;
  before(async () => {
    lab = await startLab();
  });
  after(() => lab?.stop());

  /** Every port any lab service uses, plus closed neighbours: the scan must tell them apart. */
  const portList = () => [...new Set([...lab.truth.services.map((s) => s.port), 23, 81, 444, 8081, 9999])];

  for (const probeEngine of ["auto", "js"])
    test(`every open port of every host is found, with the service's banner, and no closed one (probe engine ${probeEngine})`, async () => {
      const truth = lab.truth;
      const outcomes = await Promise.all(
        truth.hosts.map((host) =>
          runModule(portScan, { kind: "IpAddress", name: host.ip }, { ports: portList(), probeEngine }),
        ),
      );
      for (const [index, host] of truth.hosts.entries()) {
        const outcome = outcomes[index];
        const services = outcome.entities.filter((e) => e.kind === "NetworkService");
        assert.deepEqual(
          services.map((s) => s.details!.port).sort((a, b) => Number(a) - Number(b)),
          host.ports,
          `open ports of ${host.ip}`,
        );
        for (const service of services) {
          const expected = truth.services.find(
            (s) => s.ip === host.ip && s.port === service.details!.port && s.transport === "tcp",
          )!;
          assert.equal(service.name, `${host.ip}:${expected.port}/tcp`);
          assert.equal(service.details!.protocol, "tcp");
          if (expected.banner) assert.equal(service.details!.banner, expected.banner, service.name);
          if (expected.service === "mysql") assert.equal(service.details!.banner, expected.product);
          if (["ssh", "smtp", "ftp", "mysql", "redis"].includes(expected.service))
            assert.equal(service.details!.service, expected.service, service.name);
        }
      }
    });

  test("an address the deny list covers is not touched; the run gets a note", async () => {
    const host = lab.truth.hosts.find((h) => h.ports.length > 0)!;
    const outcome = await runModule(
      portScan,
      { kind: "IpAddress", name: host.ip },
      { ports: host.ports, allow: [] },
    );
    assert.deepEqual(outcome.entities, []);
    assert.match(outcome.notes.join(), /not port-scanned: the deny list covers it/);
  });

  test("an aborted scan stops at once and reports nothing", async () => {
    const host = lab.truth.hosts.find((h) => h.ports.length > 0)!;
    const controller = new AbortController();
    controller.abort();
    const outcome = await runModule(
      portScan,
      { kind: "IpAddress", name: host.ip },
      { ports: Array.from({ length: 5000 }, (_, i) => i + 1), signal: controller.signal },
    );
    assert.deepEqual(namesOf(outcome, "NetworkService"), []);
  });

  test("each TLS service's certificate is read exactly as the lab made it", async () => {
    for (const certificate of lab.truth.certificates) {
      const outcome = await runModule(tlsCertificates, {
        kind: "NetworkService",
        name: `${certificate.endpoint}/tcp`,
        details: { ip_address: certificate.ip, port: certificate.port, banner: "" },
      });
      const [found] = outcome.entities.filter((e) => e.kind === "SslCertificate");
      assert.equal(found.name, `${certificate.subjectCommonName} (${certificate.sha256})`);
      const details = found.details!;
      assert.equal(details.serial, certificate.serialNumber);
      assert.equal(details.subject, certificate.subject);
      assert.equal(details.issuer_common_name, certificate.issuerCommonName);
      assert.deepEqual(details.alt_names, certificate.altNames);
      assert.equal(details.not_after, certificate.notAfter);
      assert.equal(details.self_signed, certificate.selfSigned);
      assert.equal(details.expired, certificate.expired);
      const [type, size] = certificate.keyType === "rsa-2048" ? ["rsa", 2048] : ["ec", 256];
      assert.equal(details.key_type, type);
      assert.equal(details.key_size, size);
      assert.deepEqual(
        namesOf(outcome, "DnsRecord"),
        [...new Set([certificate.subjectCommonName, ...certificate.altNames])].sort(),
      );
      const expectedIssues = [
        ...(certificate.expired ? ["tls_certificate_expired"] : []),
        ...(certificate.selfSigned ? ["tls_certificate_self_signed"] : []),
      ];
      assert.deepEqual(outcome.issues.map((i) => i.name).sort(), expectedIssues, certificate.endpoint);
      for (const issue of outcome.issues)
        assert.deepEqual(issue.entity, { kind: "NetworkService", name: `${certificate.endpoint}/tcp` });
    }
  });

  test("a plain-text service yields no certificate", async () => {
    const web = lab.truth.services.find((s) => s.service === "http")!;
    const outcome = await runModule(tlsCertificates, {
      kind: "NetworkService",
      name: `${web.ip}:${web.port}/tcp`,
      details: { ip_address: web.ip, port: web.port, banner: "" },
    });
    assert.deepEqual(outcome.entities, []);
  });
});
