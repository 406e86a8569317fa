/**
 * Exposure checks against loopback stand-ins for the services Debian does not package
 * (test/lab/exposure-fakes.ts), the UDP probe pass against responders written from each protocol's
 * specification, TLS versions and weak suites asked by hand-written ClientHellos, and the pieces the
 * proofs are made of (redaction, what applies to which service).
 */
import assert from "node:assert/strict";
import { createServer, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { createServer as createTlsServer } from "node:tls";
import { redact } from "../../src/discovery/checks/exposures/check.ts";
import { checksFor, exposureChecks, serviceFacts } from "../../src/discovery/modules/exposures.ts";
import { tlsCertificates } from "../../src/discovery/modules/tls.ts";
import { udpScan } from "../../src/discovery/modules/udp.ts";
import { runModule } from "../helpers/discovery.ts";
import { MARIADB_URL, POSTGRES_URL, serviceSkipReason } from "../helpers/services.ts";
import { createCertificateAuthority } from "../lab/certificates.ts";
import {
  FAKE_EXPOSED,
  FAKE_LOCKED,
  FAKE_UDP,
  FAKES,
  type FakeLab,
  startFakeLab,
  UDP_FAKES,
} from "../lab/exposure-fakes.ts";
import { listenTcp } from "../lab/sockets.ts";

const service = (ip: string, port: number, name: string, protocol = "tcp") => ({
  kind: "NetworkService" as const,
  name: `${ip}:${port}/${protocol}`,
  details: { ip_address: ip, port, protocol, service: name, banner: "" },
});

describe("exposure checks against protocol stand-ins", () => {
  let lab: FakeLab;
  before(async () => {
    lab = await startFakeLab();
  });
  after(() => lab?.stop());

  test("each exposed stand-in raises its issue with proof; each locked-down twin raises nothing", async () => {
    for (const fake of FAKES) {
      const exposed = await runModule(exposureChecks, service(FAKE_EXPOSED, fake.port, fake.service));
      assert.deepEqual(
        exposed.issues.map((issue) => issue.name),
        [fake.issue],
        `${fake.name} exposed`,
      );
      const [issue] = exposed.issues;
      assert.ok(
        String(issue.details.sent).length > 0 && String(issue.details.received).length > 0,
        fake.name,
      );
      assert.equal(issue.details.port, String(fake.port));
      if (!fake.twin) continue;
      const locked = await runModule(exposureChecks, service(FAKE_LOCKED, fake.port, fake.service));
      assert.deepEqual(locked.issues, [], `${fake.name} locked down`);
    }
  });

  test("the proofs carry the facts the answers gave", async () => {
    const issueOf = async (port: number, name: string) =>
      (await runModule(exposureChecks, service(FAKE_EXPOSED, port, name))).issues[0];
    assert.deepEqual((await issueOf(27017, "mongodb")).details.databases, ["admin", "shop"]);
    assert.equal((await issueOf(9200, "elasticsearch")).details.version, "8.11.1");
    assert.deepEqual((await issueOf(5000, "docker-registry")).details.repositories, ["billing/api", "web"]);
    assert.deepEqual((await issueOf(5900, "vnc")).details.security_types, ["None", "VNC Authentication"]);
    const kubelet = await issueOf(10250, "kubelet");
    assert.equal(kubelet.details.tls, true, "the kubelet is asked over TLS");
    assert.equal(kubelet.details.pods, 1);
    assert.equal((await issueOf(1433, "ms-sql-s")).details.version, "15.0.2000");
  });

  test("the UDP pass reports exactly the ports that answered, each with protocol udp and its service", async () => {
    const outcome = await runModule(udpScan, { kind: "IpAddress", name: FAKE_UDP }, { timeoutMs: 700 });
    const found = outcome.entities
      .filter((entity) => entity.kind === "NetworkService")
      .map((entity) => [entity.name, entity.details?.protocol, entity.details?.service])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0]), "en", { numeric: true }));
    const expected = UDP_FAKES.map(({ port, service: name }) => [
      `${FAKE_UDP}:${port}/udp`,
      "udp",
      name,
    ]).sort((a, b) => String(a[0]).localeCompare(String(b[0]), "en", { numeric: true }));
    assert.deepEqual(found, expected);
    const [address] = outcome.entities.filter((entity) => entity.kind === "IpAddress");
    assert.deepEqual(
      (address.details?.udp_scan as { answered: number[] } | undefined)?.answered,
      UDP_FAKES.map((fake) => fake.port).sort((a, b) => a - b),
    );
  });

  test("nothing is sent to an address the scope does not allow", async () => {
    const outcome = await runModule(exposureChecks, service(FAKE_EXPOSED, 9200, "elasticsearch"), {
      allow: ["10.0.0.0/8"],
    });
    assert.deepEqual(outcome.issues, []);
    const udp = await runModule(udpScan, { kind: "IpAddress", name: FAKE_UDP }, { allow: ["10.0.0.0/8"] });
    assert.deepEqual(udp.entities, []);
  });
});

describe("TLS versions and suites, asked by hand", () => {
  const closers: Array<() => Promise<void>> = [];
  after(async () => {
    for (const close of closers) await close();
  });

  async function tlsServer(ip: string, options: Parameters<typeof createTlsServer>[0]) {
    const ca = await createCertificateAuthority();
    const leaf = await ca.issue({
      commonName: "tls.lab.test",
      altNames: ["tls.lab.test"],
      key: "rsa-2048",
      issuer: "lab-ca",
    });
    const server = createTlsServer({ key: leaf.keyPem, cert: leaf.chainPem, ...options }, (socket) =>
      socket.end(),
    );
    server.on("tlsClientError", () => {});
    const closable = await listenTcp(server, ip, 4433);
    closers.push(() => closable.close());
  }

  const issuesOf = async (ip: string) =>
    (await runModule(tlsCertificates, service(ip, 4433, "https"))).issues.map((issue) => issue.name).sort();

  test("TLS 1.0 and 1.1 accepted are raised, though Node's own client would refuse them", async () => {
    await tlsServer("127.122.30.1", {
      minVersion: "TLSv1",
      maxVersion: "TLSv1.1",
      ciphers: "DEFAULT:@SECLEVEL=0",
    });
    const outcome = await runModule(tlsCertificates, service("127.122.30.1", 4433, "https"));
    const weak = outcome.issues.filter((issue) => issue.name === "tls_weak_protocol");
    assert.deepEqual(weak.map((issue) => issue.details.protocol).sort(), ["TLSv1", "TLSv1.1"]);
    assert.match(String(weak[0].details.received), /^ServerHello, version TLSv1/);
  });

  test("a NULL suite accepted is a weak cipher; a modern server raises neither", async () => {
    // A modern suite first (what Node's client gets), NULL still accepted for a client offering only
    // weak suites (Node's OpenSSL 3 has no 3DES or RC4 left to serve).
    await tlsServer("127.122.30.2", {
      ciphers: "ECDHE-RSA-AES128-GCM-SHA256:NULL-SHA256:@SECLEVEL=0",
      maxVersion: "TLSv1.2",
    });
    assert.deepEqual(await issuesOf("127.122.30.2"), ["tls_weak_cipher"]);
    await tlsServer("127.122.30.3", {});
    assert.deepEqual(await issuesOf("127.122.30.3"), []);
  });

  test("SSLv3 is read from the ServerHello of a server that still speaks it", async () => {
    // No Debian OpenSSL speaks SSLv3 any more: this stand-in answers any ClientHello with an SSLv3
    // ServerHello (RFC 6101, 5.6.1.3) choosing RC4-SHA, and a handshake on TLS 1.2 otherwise.
    await tlsServer("127.122.30.4", {});
    const server = createServer((socket: Socket) => {
      socket.on("error", () => {});
      socket.once("data", (hello: Buffer) => {
        const version = hello.readUInt16BE(9);
        if (version !== 0x0300) return socket.destroy();
        const body = Buffer.concat([
          Buffer.from([3, 0]),
          Buffer.alloc(32, 7),
          Buffer.from([0, 0x00, 0x05, 0]),
        ]);
        const handshake = Buffer.concat([Buffer.from([2, 0, 0, body.length]), body]);
        socket.end(Buffer.concat([Buffer.from([22, 3, 0, 0, handshake.length]), handshake]));
      });
    });
    const closable = await listenTcp(server, "127.122.30.5", 4433);
    closers.push(() => closable.close());
    const { helloProbe, TLS_VERSIONS } = await import("../../src/discovery/net/tls-hello.ts");
    const answer = await helloProbe(
      { host: "127.122.30.5", port: 4433, timeoutMs: 1000, signal: new AbortController().signal },
      TLS_VERSIONS.SSLv3,
    );
    assert.deepEqual(answer, { accepted: true, version: "SSLv3", cipher: 0x0005 });
    const refused = await helloProbe(
      { host: "127.122.30.4", port: 4433, timeoutMs: 1000, signal: new AbortController().signal },
      TLS_VERSIONS.SSLv3,
    );
    assert.equal(refused?.accepted, false);
  });
});

describe("what the proofs are made of", () => {
  test("secrets are redacted from proofs", () => {
    assert.equal(redact("requirepass:hunter2 port:6379"), "requirepass:[redacted] port:6379");
    assert.equal(redact('{"password": "s3cret", "user": "a"}'), '{"password": "[redacted]", "user": "a"}');
    assert.equal(redact("Authorization: Bearer abc.def"), "Authorization: Bearer [redacted]");
    assert.match(
      redact("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijk"),
      /\[redacted(-jwt)?\]/,
    );
  });

  test("checks apply by identified name, or by port while a service is named by its port", () => {
    const names = (entity: ReturnType<typeof service>) =>
      checksFor(serviceFacts(entity)!).map((check) => check.name);
    assert.deepEqual(names(service("192.0.2.1", 7000, "redis")), ["redis_unauthenticated"]);
    assert.deepEqual(names(service("192.0.2.1", 6379, "unknown")), ["redis_unauthenticated"]);
    assert.deepEqual(names(service("192.0.2.1", 161, "snmp", "udp")), ["snmp_default_community"]);
    assert.deepEqual(names(service("192.0.2.1", 22, "ssh")), []);
  });
});

describe("databases reachable: the machine's own PostgreSQL and MariaDB", () => {
  test("PostgreSQL answers the SSLRequest: reachable, with whether it offers TLS", async (t) => {
    const skip = await serviceSkipReason("PostgreSQL", POSTGRES_URL);
    if (skip) return t.skip(skip);
    const { hostname, port } = new URL(POSTGRES_URL);
    const outcome = await runModule(exposureChecks, service(hostname, Number(port), "postgresql"));
    assert.deepEqual(
      outcome.issues.map((issue) => issue.name),
      ["database_exposed_postgresql"],
    );
    assert.equal(typeof outcome.issues[0].details.tls_offered, "boolean");
  });

  test("MariaDB greets with its version: reachable", async (t) => {
    // Skipped only where nothing listens there (never under CI): a check that finds nothing on a
    // reachable server fails.
    const skip = await serviceSkipReason("MariaDB", MARIADB_URL);
    if (skip) return t.skip(skip);
    const { hostname, port } = new URL(MARIADB_URL);
    const outcome = await runModule(exposureChecks, service(hostname, Number(port), "mysql"));
    assert.deepEqual(
      outcome.issues.map((issue) => issue.name),
      ["database_exposed_mysql"],
    );
    assert.match(String(outcome.issues[0].details.version), /^\d+\.\d+\.\d+/);
  });
});
