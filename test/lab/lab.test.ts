import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createSocket } from "node:dgram";
import { Resolver } from "node:dns/promises";
import { once } from "node:events";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { type DetailedPeerCertificate, connect as tlsConnect } from "node:tls";
import dnsPacket, { type DecodedPacket, type Packet, type RecordType } from "dns-packet";
import {
  type Endpoint,
  type Lab,
  type LabRecord,
  type LabTruth,
  type ServiceTruth,
  startLab,
} from "./index.ts";

describe("the lab", () => {
  let lab: Lab;
  let truth: LabTruth;
  let resolver: Resolver;

  before(async () => {
    lab = await startLab();
    truth = lab.truth;
    resolver = new Resolver({ timeout: 2000, tries: 1 });
    resolver.setServers([lab.resolver]);
  });
  after(() => lab.stop());

  const recordsOf = (name: string, type: RecordType) =>
    truth.zones.flatMap((zone) => zone.records).filter((r) => r.name === name && r.type === type);
  const hostNamed = (name: string) => truth.hosts.find((host) => host.names.includes(name))!;

  describe("DNS", () => {
    const COMPARED: RecordType[] = ["A", "AAAA", "CNAME", "MX", "TXT", "CAA", "SRV", "NS"];

    test("every name answers exactly the record types and data of the truth", async () => {
      assert.ok(truth.names.length > 20);
      // A few names at a time: a burst of more than ~256 datagrams overflows a UDP socket's default
      // receive buffer, and the dropped queries would time out.
      for (let i = 0; i < truth.names.length; i += 16)
        await Promise.all(
          truth.names.slice(i, i + 16).flatMap(({ name, types }) =>
            COMPARED.filter((type) => type === "CNAME" || !types.includes("CNAME")).map(async (type) => {
              const expected = recordsOf(name, type).map(asNodeAnswer);
              if (expected.length === 0) {
                await assert.rejects(resolver.resolve(name, type), { code: "ENODATA" }, `${type} ${name}`);
              } else {
                const actual = ((await resolver.resolve(name, type)) as unknown[]).map(withoutType);
                assert.deepEqual(sorted(actual), sorted(expected), `${type} ${name}`);
              }
            }),
          ),
        );
    });

    test("the SOA names ns1 and its serial matches the truth", async () => {
      const soa = await resolver.resolveSoa("acme.test");
      assert.equal(soa.nsname, "ns1.acme.test");
      assert.equal(soa.hostmaster, "hostmaster.acme.test");
      assert.equal(soa.serial, truth.zones.find((zone) => zone.name === "acme.test")!.serial);
    });

    test("a CNAME chain resolves to its final addresses; names ignore case", async () => {
      assert.deepEqual(await resolver.resolveCname("store.acme.test"), ["shop.acme.test"]);
      assert.deepEqual(await resolver.resolve4("store.acme.test"), [hostNamed("www.acme.test").ip]);
      assert.deepEqual(await resolver.resolve4("WWW.Acme.TEST"), [hostNamed("www.acme.test").ip]);
    });

    test("the dangling CNAME points into an NXDOMAIN", async () => {
      assert.deepEqual(truth.danglingCnames, [
        { name: "old.acme.test", target: "acme-legacy.cloudapp.test" },
      ]);
      assert.deepEqual(await resolver.resolveCname("old.acme.test"), ["acme-legacy.cloudapp.test"]);
      await assert.rejects(resolver.resolve4("old.acme.test"), { code: "ENOTFOUND" });
      assert.equal((await udpQuery(lab.dnsServer, "acme-legacy.cloudapp.test", "A")).rcode, "NXDOMAIN");
    });

    test("reverse DNS names each host that publishes a PTR, and no other", async () => {
      for (const host of truth.hosts) {
        if (host.ptr) assert.deepEqual(await resolver.reverse(host.ip), [host.ptr]);
        else await assert.rejects(resolver.reverse(host.ip), { code: "ENOTFOUND" }, host.ip);
      }
    });

    test("answers are authoritative; unknown names NXDOMAIN with the SOA; other zones REFUSED", async () => {
      const found = await udpQuery(lab.dnsServer, "www.acme.test", "A");
      assert.equal(found.rcode, "NOERROR");
      assert.ok(found.flag_aa);
      const missing = await udpQuery(lab.dnsServer, `${randomUUID()}.acme.test`, "A");
      assert.equal(missing.rcode, "NXDOMAIN");
      assert.ok(missing.flag_aa);
      assert.equal(missing.authorities?.[0]?.type, "SOA");
      assert.equal((await udpQuery(lab.dnsServer, "example.com", "A")).rcode, "REFUSED");
      await assert.rejects(resolver.resolve4("example.com"), { code: "EREFUSED" });
    });

    test("TCP answers on the same port as UDP", async () => {
      const [reply] = await tcpExchange(lab.dnsServer, "www.acme.test", "A");
      assert.equal(reply?.rcode, "NOERROR");
      assert.deepEqual(
        ((reply?.answers ?? []) as LabRecord[]).map((answer) => answer.data),
        [hostNamed("www.acme.test").ip],
      );
    });

    test("a UDP answer over 512 bytes is truncated, and complete over TCP", async () => {
      const texts = recordsOf("acme.test", "TXT").length;
      const udp = await udpQuery(lab.dnsServer, "acme.test", "TXT");
      assert.ok(udp.flag_tc);
      assert.equal(udp.answers?.length, 0);
      const [tcp] = await tcpExchange(lab.dnsServer, "acme.test", "TXT");
      assert.equal(tcp?.answers?.length, texts);
      assert.equal((await resolver.resolveTxt("acme.test")).length, texts);
    });

    test("the wildcard zone answers any label, while its real names keep their own addresses", async () => {
      const [wildcard] = truth.wildcards;
      assert.equal(wildcard?.zone, "wild.test");
      for (const name of [`${randomUUID()}.wild.test`, `a.${randomUUID()}.wild.test`]) {
        assert.deepEqual(await resolver.resolve4(name), wildcard.addresses);
        await assert.rejects(resolver.resolveMx(name), { code: "ENODATA" });
      }
      assert.deepEqual(await resolver.resolve4("mail.wild.test"), [hostNamed("mail.wild.test").ip]);
      assert.notDeepEqual([hostNamed("mail.wild.test").ip], wildcard.addresses);
    });

    test("AXFR over TCP returns the open zone, SOA first and last", async () => {
      assert.deepEqual(truth.axfrZones, ["open.test"]);
      const ns1 = { host: hostNamed("ns1.acme.test").ip, port: 53 };
      for (const server of [lab.dnsServer, ns1]) {
        const messages = await tcpExchange(server, "open.test", "AXFR");
        const records = messages.flatMap((message) => (message.answers ?? []) as LabRecord[]);
        assert.ok(messages.length > 1, "a transfer spans several messages");
        assert.ok(messages.every((message) => message.rcode === "NOERROR" && message.flag_aa));
        assert.equal(records.at(0)?.type, "SOA");
        assert.equal(records.at(-1)?.type, "SOA");
        const zone = truth.zones.find((z) => z.name === "open.test")!;
        assert.deepEqual(sorted(records.slice(0, -1).map(recordKey)), sorted(zone.records.map(recordKey)));
        assert.ok(records.some((record) => record.name === "vault-q3.open.test"));
      }
    });

    test("AXFR is refused for acme.test, and for any zone over UDP", async () => {
      const [refused] = await tcpExchange(lab.dnsServer, "acme.test", "AXFR");
      assert.equal(refused?.rcode, "REFUSED");
      assert.equal(refused?.answers?.length, 0);
      assert.equal((await udpQuery(lab.dnsServer, "open.test", "AXFR")).rcode, "REFUSED");
    });

    test("the silent name server never answers", async () => {
      const silent = new Resolver({ timeout: 100, tries: 1 });
      silent.setServers([`${lab.silentNameserver.host}:${lab.silentNameserver.port}`]);
      await assert.rejects(silent.resolve4("www.acme.test"), { code: "ETIMEOUT" });
    });
  });

  describe("discovery paths", () => {
    const pathsOf = (name: string) => truth.names.find((n) => n.name === name)?.paths;

    test("some names are findable one way only", () => {
      assert.ok(truth.onlyVia.certificate?.includes("intranet-x7q.acme.test"));
      assert.ok(truth.onlyVia.bruteforce?.includes("backup.acme.test"));
      assert.ok(truth.onlyVia.axfr?.includes("vault-q3.open.test"));
      assert.deepEqual(pathsOf("acme.test"), ["apex", "certificate"]);
      assert.deepEqual(pathsOf("sip.acme.test"), ["record", "reverse-dns", "bruteforce"]);
    });

    test("the certificate-only name is in a served SAN and in no PTR", () => {
      const name = "intranet-x7q.acme.test";
      assert.ok(truth.certificates.some((c) => c.altNames.includes(name)));
      assert.equal(hostNamed(name).ptr, null);
      assert.ok(!truth.bruteforceWords.includes("intranet-x7q"));
    });
  });

  describe("services", () => {
    test("every open TCP port greets as the truth says", async () => {
      const tcp = truth.services.filter((service) => service.transport === "tcp");
      assert.deepEqual(
        new Set(tcp.map((s) => s.service)),
        new Set(["dns", "http", "https", "smtp", "ssh", "ftp", "mysql", "redis"]),
      );
      await Promise.all(tcp.map(checkService));
    });

    test("each host's open ports are its services' ports", () => {
      for (const host of truth.hosts) {
        const ports = truth.services
          .filter((s) => s.ip === host.ip && s.transport === "tcp")
          .map((s) => s.port);
        assert.deepEqual(
          host.ports,
          ports.sort((a, b) => a - b),
        );
      }
    });

    test("a host without services refuses connections", async () => {
      const sip = hostNamed("sip.acme.test");
      assert.deepEqual(sip.ports, []);
      await assert.rejects(greeting(sip.ip, 80), { code: "ECONNREFUSED" });
    });

    test("SMTP, FTP and Redis answer their first commands", async () => {
      const mail = hostNamed("mail.acme.test").ip;
      const ehlo = await talk(mail, 25, { send: "EHLO scanner.test\r\n", until: /^250 /m });
      assert.match(ehlo, /^250-mail\.acme\.test\r\n/);
      assert.match(await talk(mail, 25, { send: "QUIT\r\n" }), /^221 /);
      const staging = hostNamed("staging.acme.test").ip;
      assert.match(await talk(staging, 21, { send: "USER anonymous\r\n" }), /^331 /);
      const backup = hostNamed("backup.acme.test").ip;
      const info = await talk(backup, 6379, {
        greets: false,
        send: "*1\r\n$4\r\nINFO\r\n",
        until: /\r\n\r\n$/,
      });
      assert.match(info, /redis_version:6\.0\.16/);
    });

    test("each HTTPS port serves the certificate of the truth", async () => {
      assert.equal(truth.certificates.length, 6);
      for (const expected of truth.certificates) {
        const { certificate } = await handshake(expected.ip, expected.port, expected.subjectCommonName);
        assert.equal(certificate.fingerprint256.replaceAll(":", "").toLowerCase(), expected.sha256);
        assert.equal(certificate.serialNumber.toLowerCase(), expected.serialNumber);
        assert.equal(certificate.subject.CN, expected.subjectCommonName);
        assert.equal(certificate.issuer.CN, expected.issuerCommonName);
        assert.deepEqual(
          certificate.subjectaltname?.split(", ").map((san) => san.replace(/^DNS:/, "")) ?? [],
          expected.altNames,
        );
        assert.equal(new Date(certificate.valid_to).toISOString(), expected.notAfter);
        assert.equal(new Date(certificate.valid_to).getTime() < Date.now(), expected.expired);
      }
    });

    test("every web application of the truth answers as the truth says, by address and by name", async () => {
      const byName = new Map(truth.applications.map((app) => [app.name, app]));
      assert.equal(byName.size, truth.applications.length, "one application per scheme, host and port");
      for (const app of truth.applications) {
        const response = await httpGet(`${app.scheme}://${app.ip}:${app.port}/`, app.host);
        assert.equal(response.statusCode, 200, app.name);
        assert.ok(response.body.includes(`<title>${app.title}</title>`), `${app.name}: ${app.title}`);
        for (const party of app.thirdParties)
          assert.ok(response.body.includes(`https://${party.host}/`), `${app.name} loads from ${party.host}`);
      }
      // One address, three sites: the Host header picks one.
      const portal = byName.get("http://portal.globex.test:80")!;
      const titles = truth.applications.filter((app) => app.ip === portal.ip).map((app) => app.title);
      assert.deepEqual(titles.sort(), ["Globex Corporation", "Globex Employee Portal", "Welcome to nginx!"]);
      const legacy = byName.get("http://legacy.globex.test:80")!;
      assert.equal((await httpGet(`http://${legacy.ip}/.git/HEAD`)).body, "ref: refs/heads/master\n");
    });

    test("the certificates are CA-signed, expired and self-signed as labelled", async () => {
      const kinds = truth.certificates.map((c) => [c.subjectCommonName, c.keyType, c.selfSigned, c.expired]);
      assert.deepEqual(kinds, [
        ["www.acme.test", "rsa-2048", false, false],
        ["api.acme.test", "ecdsa-p256", false, false],
        ["vpn.acme.test", "rsa-2048", true, false],
        ["dev.acme.test", "ecdsa-p256", false, true],
        ["shop.globex.test", "ecdsa-p256", false, false],
        ["status.globex.test", "ecdsa-p256", false, false],
      ]);
      for (const expected of truth.certificates) {
        const { authorized, error } = await handshake(
          expected.ip,
          expected.port,
          expected.subjectCommonName,
          lab.caPem,
        );
        const want = expected.selfSigned
          ? "DEPTH_ZERO_SELF_SIGNED_CERT"
          : expected.expired
            ? "CERT_HAS_EXPIRED"
            : undefined;
        assert.equal(authorized, want === undefined, expected.endpoint);
        assert.equal(error, want, expected.endpoint);
      }
    });
  });

  describe("mutation", () => {
    test("addHost publishes a host and removeHost withdraws it", async () => {
      const ip = lab.ip("0.99");
      const spec = {
        ip,
        names: ["new.acme.test"],
        services: [{ kind: "http" as const, port: 80, server: "nginx/1.25.3", title: "New" }],
      };
      const serial = (await resolver.resolveSoa("acme.test")).serial;

      await lab.addHost(spec);
      assert.deepEqual(await resolver.resolve4("new.acme.test"), [ip]);
      assert.deepEqual(await resolver.reverse(ip), ["new.acme.test"]);
      assert.equal((await resolver.resolveSoa("acme.test")).serial, serial + 1);
      assert.equal((await httpGet(`http://${ip}/`)).headers.server, "nginx/1.25.3");
      const added = lab.truth;
      assert.ok(added.names.some((n) => n.name === "new.acme.test"));
      assert.deepEqual(
        added.services.filter((s) => s.ip === ip),
        [{ ip, port: 80, transport: "tcp", service: "http", tls: false, product: "nginx/1.25.3" }],
      );
      await assert.rejects(lab.addHost(spec), /already exists/);

      await lab.removeHost(ip);
      await assert.rejects(resolver.resolve4("new.acme.test"), { code: "ENOTFOUND" });
      await assert.rejects(resolver.reverse(ip), { code: "ENOTFOUND" });
      assert.equal((await resolver.resolveSoa("acme.test")).serial, serial + 2);
      await assert.rejects(greeting(ip, 80), { code: "ECONNREFUSED" });
      const removed = lab.truth;
      assert.ok(!removed.names.some((n) => n.name === "new.acme.test"));
      assert.ok(!removed.hosts.some((h) => h.ip === ip));
      await assert.rejects(lab.removeHost(ip), /does not exist/);
    });

    test("a host named outside the lab's zones is rejected before anything listens", async () => {
      const ip = lab.ip("0.98");
      const spec = { ip, names: ["www.example.com"], services: [{ kind: "ssh" as const, port: 22 }] };
      await assert.rejects(lab.addHost(spec), /no lab zone holds www\.example\.com/);
      await assert.rejects(greeting(ip, 22), { code: "ECONNREFUSED" });
    });
  });
});

test("two labs run side by side, stop releases every socket, and the block can start again", async () => {
  const listeners = () =>
    process.getActiveResourcesInfo().filter((kind) => kind === "TCPServerWrap" || kind === "UDPWrap").length;
  const idle = listeners();
  const [a, b] = await Promise.all([startLab(), startLab()]);
  try {
    assert.notEqual(a.base, b.base);
    assert.notEqual(a.dnsServer.port, b.dnsServer.port);
    for (const lab of [a, b]) {
      const resolver = new Resolver({ timeout: 2000, tries: 1 });
      resolver.setServers([lab.resolver]);
      assert.deepEqual(await resolver.resolve4("www.acme.test"), [lab.ip("0.10")]);
    }
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
  await a.stop();
  assert.equal(listeners(), idle);
  const again = await startLab({ base: a.base });
  assert.equal(again.base, a.base);
  await again.stop();
  assert.equal(listeners(), idle);
});

test("an explicit base must be a 127.x prefix not already in use", async () => {
  await assert.rejects(startLab({ base: "10.0" }), /lab base must look like/);
  const lab = await startLab();
  try {
    await assert.rejects(startLab({ base: lab.base }), /already running in this process/);
  } finally {
    await lab.stop();
  }
});

// --- helpers ---------------------------------------------------------------------------------------

type Reply = DecodedPacket & { rcode: string };

/** A TCP connection that fails instead of hanging when the other side goes quiet. */
function dial(host: string, port: number): Socket {
  const socket = connect(port, host);
  socket.setTimeout(3000, () => socket.destroy(new Error(`no answer from ${host}:${port}`)));
  return socket;
}

async function udpQuery(server: Endpoint, name: string, type: RecordType): Promise<Reply> {
  const socket = createSocket("udp4");
  try {
    socket.send(dnsPacket.encode(queryPacket(name, type)), server.port, server.host);
    const [message] = await once(socket, "message", { signal: AbortSignal.timeout(3000) });
    return dnsPacket.decode(message) as Reply;
  } finally {
    socket.close();
  }
}

/** Sends one query over TCP; reads one reply, or for AXFR every message up to the closing SOA. */
async function tcpExchange(server: Endpoint, name: string, type: RecordType): Promise<Reply[]> {
  const socket = dial(server.host, server.port);
  const replies: Reply[] = [];
  let pending = Buffer.alloc(0);
  let soas = 0;
  try {
    socket.write(dnsPacket.streamEncode(queryPacket(name, type)));
    for await (const chunk of socket as AsyncIterable<Buffer>) {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const reply = dnsPacket.streamDecode(pending) as Reply;
        pending = pending.subarray(2 + pending.readUInt16BE(0));
        replies.push(reply);
        soas += reply.answers?.filter((answer) => answer.type === "SOA").length ?? 0;
        if (type !== "AXFR" || reply.rcode !== "NOERROR" || soas >= 2) return replies;
      }
    }
    throw new Error("connection closed before the reply was complete");
  } finally {
    socket.destroy();
  }
}

function queryPacket(name: string, type: RecordType): Packet {
  return {
    type: "query",
    id: Math.floor(Math.random() * 65536),
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ name, type }],
  };
}

/** The shape Node's resolver gives for a record, to compare with the truth. */
function asNodeAnswer(record: LabRecord): unknown {
  switch (record.type) {
    case "MX":
      return { exchange: record.data.exchange, priority: record.data.preference };
    case "TXT":
      return [String(record.data)];
    case "CAA":
      return { critical: record.data.flags ?? 0, [record.data.tag]: record.data.value };
    case "SRV": {
      const { target, ...rest } = record.data;
      return { name: target, ...rest };
    }
    default:
      return record.data;
  }
}

function withoutType(answer: unknown): unknown {
  if (typeof answer !== "object" || answer === null || Array.isArray(answer)) return answer;
  const { type: _, ...rest } = answer as Record<string, unknown>;
  return rest;
}

function recordKey(record: LabRecord): string {
  const data = record.type === "TXT" ? [record.data].flat().map(String).join("") : record.data;
  return `${record.name} ${record.type} ${JSON.stringify(data)}`;
}

/** Canonical JSON (object keys sorted), sorted, so answer order and key order do not matter. */
function sorted(values: unknown[]): string[] {
  const canonical = (_: string, value: unknown) =>
    value && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)))
      : value;
  return values.map((value) => JSON.stringify(value, canonical)).sort();
}

/**
 * Connects, reads the greeting when the service `greets`, writes `send`, and resolves with what
 * arrived after that once `until` matches (by default: the first line).
 */
async function talk(
  ip: string,
  port: number,
  { greets = true, send, until = /\n/ }: { greets?: boolean; send?: string; until?: RegExp } = {},
): Promise<string> {
  const socket = dial(ip, port);
  try {
    await once(socket, "connect");
    if (send === undefined) return await readUntil(socket, until);
    if (greets) await readUntil(socket, /\n/);
    socket.write(send);
    return await readUntil(socket, until);
  } finally {
    socket.destroy();
  }
}

async function readUntil(socket: Socket, until: RegExp): Promise<string> {
  let text = "";
  while (!until.test(text)) {
    const chunk = socket.read() as Buffer | null;
    if (chunk) text += chunk.toString("latin1");
    else await once(socket, "readable");
  }
  return text;
}

function greeting(ip: string, port: number): Promise<string> {
  return talk(ip, port);
}

/** GET a URL, optionally for another host than the URL's (a name-based virtual host, by Host and SNI). */
function httpGet(url: string, host?: string): Promise<IncomingMessage & { body: string }> {
  const request = url.startsWith("https:") ? httpsRequest : httpRequest;
  const named = host && !/^[\d.]+$/.test(host) ? { headers: { host }, servername: host } : {};
  return new Promise((resolve, reject) => {
    request(
      url,
      { agent: false, rejectUnauthorized: false, signal: AbortSignal.timeout(3000), ...named },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk) => {
          body += chunk;
        });
        response.on("end", () => resolve(Object.assign(response, { body })));
        response.on("error", reject);
      },
    )
      .on("error", reject)
      .end();
  });
}

async function handshake(
  ip: string,
  port: number,
  servername: string,
  ca?: string,
): Promise<{ certificate: DetailedPeerCertificate; authorized: boolean; error: string | undefined }> {
  const socket = tlsConnect({ host: ip, port, servername, ca, rejectUnauthorized: false });
  socket.setTimeout(3000, () => socket.destroy(new Error(`no TLS handshake with ${ip}:${port}`)));
  try {
    await once(socket, "secureConnect");
    return {
      certificate: socket.getPeerCertificate(true),
      authorized: socket.authorized,
      error: socket.authorizationError?.toString() ?? undefined,
    };
  } finally {
    socket.destroy();
  }
}

async function checkService(service: ServiceTruth): Promise<void> {
  const where = `${service.service} on ${service.ip}:${service.port}`;
  switch (service.service) {
    case "ssh":
    case "smtp":
    case "ftp": {
      let said = await greeting(service.ip, service.port);
      // A greeting with the time (Sendmail's) is known up to the time, which truth shows as "…".
      if (service.banner?.endsWith("; …"))
        said = said.replace(/; \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000\r\n$/, "; …\r\n");
      assert.equal(said, `${service.banner}\r\n`, where);
      return;
    }
    case "http":
    case "https": {
      const response = await httpGet(`${service.service}://${service.ip}:${service.port}/`);
      assert.equal(response.statusCode, 200, where);
      assert.equal(response.headers.server, service.product, where);
      assert.match(response.body, /<title>[^<]+<\/title>/, where);
      return;
    }
    case "mysql": {
      const socket = dial(service.ip, service.port);
      try {
        const [packet] = (await once(socket, "data")) as [Buffer];
        assert.equal(packet[4], 10, `${where}: protocol version`);
        const version = packet.subarray(5, packet.indexOf(0, 5)).toString("latin1");
        assert.equal(`MySQL ${version}`, service.product, where);
      } finally {
        socket.destroy();
      }
      return;
    }
    case "redis":
      assert.equal(
        await talk(service.ip, service.port, { greets: false, send: "PING\r\n" }),
        "+PONG\r\n",
        where,
      );
      return;
    case "dns": {
      const [reply] = await tcpExchange({ host: service.ip, port: service.port }, "acme.test", "SOA");
      assert.equal(reply?.rcode, "NOERROR", where);
      return;
    }
    default:
      assert.fail(`no check for ${service.service satisfies never}`);
  }
}
