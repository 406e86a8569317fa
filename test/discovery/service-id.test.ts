/**
 * Service identification against loopback fakes of the protocols no Debian package serves here
 * (MongoDB, SQL Server, Oracle, Cassandra, ZooKeeper, Kafka, NATS, RabbitMQ, etcd, Consul, Docker,
 * a registry, Kubernetes, kubelet, Prometheus, Elasticsearch, CouchDB, SMB, RDP, VNC, Telnet, SIP,
 * X11, SMTP), each answering as its specification says, and against hostile services. The real
 * servers are in test/lab/real/real.test.ts.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createServer as createTlsServer } from "node:tls";
import { parse } from "yaml";
import { identifyService, PROBE_MAX_BYTES } from "../../src/discovery/service-id.ts";
import { compileProbes, oracleVersion, serviceProbes } from "../../src/discovery/service-probes.ts";
import { writeSelfSignedCertificate } from "../lab/openssl-certificate.ts";

const HOST = "127.121.2.1";
const servers: Server[] = [];
const sockets = new Set<Socket>();
/** Every server of the test keeps its connections here, so the end of the test can end them. */
function track(server: Server): Server {
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  servers.push(server);
  return server;
}
let tlsKey = "";
let tlsCert = "";

/** A fake that greets with `greeting` and answers each request with `answer(request)` (undefined: say nothing). */
function fake(
  port: number,
  behaviour: {
    greeting?: Buffer | string;
    answer?: (request: Buffer, socket: Socket) => Buffer | string | undefined;
    close?: boolean;
  },
  tls = false,
): Promise<void> {
  const handle = (socket: Socket) => {
    socket.on("error", () => {});
    if (behaviour.greeting !== undefined) socket.write(behaviour.greeting);
    socket.on("data", (request: Buffer) => {
      const reply = behaviour.answer?.(request, socket);
      if (reply === undefined) return;
      socket.write(reply);
      if (behaviour.close) socket.end();
    });
  };
  const server = track(tls ? createTlsServer({ key: tlsKey, cert: tlsCert }, handle) : createServer(handle));
  return new Promise((resolve) => server.listen(port, HOST, resolve));
}

const http = (status: string, headers: Record<string, string>, body = "") =>
  `HTTP/1.1 ${status}\r\n${Object.entries({
    "Content-Length": String(Buffer.byteLength(body)),
    Connection: "close",
    ...headers,
  })
    .map(([k, v]) => `${k}: ${v}`)
    .join("\r\n")}\r\n\r\n${body}`;
/** An HTTP fake: path → response. */
const web = (
  routes: Record<string, string>,
  fallback = http("404 Not Found", { "Content-Type": "text/plain" }, "404 page not found\n"),
) => ({
  close: true,
  answer: (request: Buffer) => {
    const path = /^[A-Z]+ (\S+)/.exec(request.toString("latin1"))?.[1] ?? "";
    return routes[path] ?? fallback;
  },
});

function bsonString(name: string, value: string): Buffer {
  const text = Buffer.from(`${value}\0`);
  const length = Buffer.alloc(4);
  length.writeInt32LE(text.length);
  return Buffer.concat([Buffer.from([0x02]), Buffer.from(`${name}\0`), length, text]);
}
function mongoReply(request: Buffer): Buffer {
  const body = Buffer.concat([
    bsonString("version", "7.0.4"),
    Buffer.from([0x01]),
    Buffer.from("ok\0"),
    Buffer.from([0, 0, 0, 0, 0, 0, 0xf0, 0x3f]),
  ]);
  const doc = Buffer.concat([Buffer.alloc(4), body, Buffer.from([0])]);
  doc.writeInt32LE(doc.length);
  const header = Buffer.alloc(16);
  header.writeInt32LE(16 + 5 + doc.length, 0);
  header.writeInt32LE(99, 4);
  header.writeInt32LE(request.readInt32LE(4), 8); // responseTo: the request's id
  header.writeInt32LE(2013, 12);
  return Buffer.concat([header, Buffer.alloc(4), Buffer.from([0]), doc]);
}
function tdsPrelogin(): Buffer {
  // VERSION at offset 11 (6 bytes: 16.0.4105.0), ENCRYPTION at 17 (1 byte), terminator.
  const payload = Buffer.from([
    0x00, 0x00, 0x0b, 0x00, 0x06, 0x01, 0x00, 0x11, 0x00, 0x01, 0xff, 16, 0, 0x10, 0x09, 0, 0, 0x02,
  ]);
  const header = Buffer.from([0x04, 0x01, 0, 0, 0, 0, 0x01, 0x00]);
  header.writeUInt16BE(8 + payload.length, 2);
  return Buffer.concat([header, payload]);
}
function tnsRefuse(): Buffer {
  const text = Buffer.from(
    "(DESCRIPTION=(TMP=)(VSNNUM=318767104)(ERR=1189)(ERROR_STACK=(ERROR=(CODE=1189)(EMFI=4))))",
  );
  const header = Buffer.from([0, 0, 0, 0, 0x04, 0, 0, 0, 0, 0, 0, 0]);
  header.writeUInt16BE(header.length + text.length, 0);
  header.writeUInt16BE(text.length, 10);
  return Buffer.concat([header, text]);
}
function cqlSupported(): Buffer {
  const entry = (name: string, values: string[]) => {
    const parts = [Buffer.from([0, name.length]), Buffer.from(name), Buffer.from([0, values.length])];
    for (const v of values) parts.push(Buffer.from([0, v.length]), Buffer.from(v));
    return Buffer.concat(parts);
  };
  const body = Buffer.concat([
    Buffer.from([0, 2]),
    entry("CQL_VERSION", ["3.4.5"]),
    entry("COMPRESSION", ["snappy", "lz4"]),
  ]);
  const header = Buffer.from([0x84, 0, 0, 0, 0x06, 0, 0, 0, 0]);
  header.writeUInt32BE(body.length, 5);
  return Buffer.concat([header, body]);
}
function amqpStart(): Buffer {
  const longstr = (key: string, value: string) => {
    const v = Buffer.from(value);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(v.length);
    return Buffer.concat([Buffer.from([key.length]), Buffer.from(key), Buffer.from("S"), len, v]);
  };
  const table = Buffer.concat([
    longstr("product", "RabbitMQ"),
    longstr("version", "3.12.1"),
    longstr("platform", "Erlang/OTP 26"),
  ]);
  const tableLength = Buffer.alloc(4);
  tableLength.writeUInt32BE(table.length);
  const mechanisms = Buffer.from("\0\0\0\x05PLAIN\0\0\0\x05en_US", "latin1");
  const method = Buffer.concat([Buffer.from([0, 10, 0, 10, 0, 9]), tableLength, table, mechanisms]);
  const size = Buffer.alloc(4);
  size.writeUInt32BE(method.length);
  return Buffer.concat([Buffer.from([1, 0, 0]), size, method, Buffer.from([0xce])]);
}

interface Case {
  name: string;
  port: number;
  tls?: boolean;
  behaviour: Parameters<typeof fake>[1];
  expect: { service: string; product?: RegExp; version?: string; tls?: boolean; starttls?: boolean };
}

const CASES: Case[] = [
  {
    name: "MongoDB (OP_MSG buildinfo)",
    port: 27017,
    behaviour: { answer: mongoReply },
    expect: { service: "mongodb", product: /^MongoDB$/, version: "7.0.4" },
  },
  {
    name: "MongoDB on another port",
    port: 27999,
    behaviour: { answer: mongoReply },
    expect: { service: "mongodb", version: "7.0.4" },
  },
  {
    name: "SQL Server (TDS pre-login)",
    port: 1433,
    behaviour: { answer: () => tdsPrelogin(), close: true },
    expect: { service: "ms-sql-s", product: /SQL Server/, version: "16.0.4105" },
  },
  {
    name: "Oracle TNS listener",
    port: 1521,
    behaviour: { answer: () => tnsRefuse(), close: true },
    expect: { service: "oracle-tns", version: "19.0.0.0.0" },
  },
  {
    name: "Cassandra (OPTIONS)",
    port: 9042,
    behaviour: { answer: () => cqlSupported() },
    expect: { service: "cassandra", product: /Cassandra/ },
  },
  {
    name: "ZooKeeper (srvr)",
    port: 2181,
    behaviour: {
      answer: () =>
        "Zookeeper version: 3.8.3-6ad6d364c7c0bcf0de452d54ebefa3058098ab56, built on 2023-10-05 10:34 UTC\nLatency min/avg/max: 0/0.0/0\nMode: standalone\n",
      close: true,
    },
    expect: { service: "zookeeper", version: "3.8.3" },
  },
  {
    name: "Kafka (ApiVersions)",
    port: 9092,
    behaviour: {
      answer: (r) =>
        Buffer.concat([Buffer.from([0, 0, 0, 10]), r.subarray(8, 12), Buffer.from([0, 0, 0, 0, 0, 0])]),
    },
    expect: { service: "kafka", product: /Kafka/ },
  },
  {
    name: "NATS (INFO greeting)",
    port: 4222,
    behaviour: {
      greeting:
        'INFO {"server_id":"NABC","server_name":"lab","version":"2.10.7","proto":1,"go":"go1.21","host":"0.0.0.0","port":4222,"max_payload":1048576}\r\n',
    },
    expect: { service: "nats", version: "2.10.7" },
  },
  {
    name: "RabbitMQ (AMQP 0-9-1)",
    port: 5672,
    behaviour: { answer: () => amqpStart() },
    expect: { service: "amqp", product: /RabbitMQ/, version: "3.12.1" },
  },
  {
    name: "etcd (GET /version)",
    port: 2379,
    behaviour: web({
      "/version": http(
        "200 OK",
        { "Content-Type": "application/json" },
        '{"etcdserver":"3.5.9","etcdcluster":"3.5.0"}',
      ),
    }),
    expect: { service: "etcd", version: "3.5.9" },
  },
  {
    name: "etcd on a port not its own (an API server's plain 404 asks the API paths)",
    port: 12379,
    behaviour: web(
      {
        "/version": http(
          "200 OK",
          { "Content-Type": "application/json" },
          '{"etcdserver":"3.5.9","etcdcluster":"3.5.0"}',
        ),
      },
      http(
        "404 Not Found",
        { "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff" },
        "404 page not found\n",
      ),
    ),
    expect: { service: "etcd", version: "3.5.9" },
  },
  {
    name: "Consul (agent version)",
    port: 8500,
    behaviour: web({
      "/": http("301 Moved Permanently", { Location: "/ui/" }),
      "/v1/agent/version": http(
        "200 OK",
        { "Content-Type": "application/json" },
        '{"SHA":"","BuildDate":"2023-09-01T00:00:00Z","Version":"1.16.1","HumanVersion":"1.16.1","FIPS":""}',
      ),
    }),
    expect: { service: "consul", version: "1.16.1" },
  },
  {
    name: "Docker Engine API",
    port: 2375,
    behaviour: web(
      {},
      http(
        "404 Not Found",
        { "Api-Version": "1.43", "Content-Type": "application/json", Server: "Docker/24.0.7 (linux)" },
        '{"message":"page not found"}\n',
      ),
    ),
    expect: { service: "docker", product: /Docker Engine/, version: "24.0.7" },
  },
  {
    name: "Docker registry (/v2/)",
    port: 5000,
    behaviour: web(
      {
        "/v2/": http(
          "200 OK",
          { "Docker-Distribution-Api-Version": "registry/2.0", "Content-Type": "application/json" },
          "{}",
        ),
      },
      http("200 OK", {}),
    ),
    expect: { service: "docker-registry" },
  },
  {
    name: "Kubernetes API over TLS",
    port: 6443,
    tls: true,
    behaviour: web(
      {
        "/version": http(
          "200 OK",
          { "Content-Type": "application/json" },
          '{"major":"1","minor":"28","gitVersion":"v1.28.4","gitCommit":"x","platform":"linux/amd64"}',
        ),
      },
      http(
        "403 Forbidden",
        { "Content-Type": "application/json" },
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden","code":403}',
      ),
    ),
    expect: { service: "kubernetes", version: "1.28.4", tls: true },
  },
  {
    name: "kubelet over TLS",
    port: 10250,
    tls: true,
    behaviour: web({ "/pods": http("401 Unauthorized", { "Content-Type": "text/plain" }, "Unauthorized") }),
    expect: { service: "kubelet", tls: true },
  },
  {
    name: "Prometheus (build info)",
    port: 9090,
    behaviour: web({
      "/": http("302 Found", { Location: "/graph" }, '<a href="/graph">Found</a>.'),
      "/api/v1/status/buildinfo": http(
        "200 OK",
        { "Content-Type": "application/json" },
        '{"status":"success","data":{"version":"2.48.0","revision":"x","branch":"HEAD"}}',
      ),
    }),
    expect: { service: "prometheus", product: /^Prometheus$/, version: "2.48.0" },
  },
  {
    name: "a metrics endpoint (node_exporter)",
    port: 9100,
    behaviour: web({
      "/": http("200 OK", { "Content-Type": "text/html" }, "<h1>Node Exporter</h1>"),
      "/metrics": http(
        "200 OK",
        { "Content-Type": "text/plain; version=0.0.4" },
        '# HELP node_cpu_seconds_total x\n# TYPE node_cpu_seconds_total counter\nnode_cpu_seconds_total 1\n# HELP node_exporter_build_info x\n# TYPE node_exporter_build_info gauge\nnode_exporter_build_info{branch="",goversion="go1.21",revision="",tags="",version="1.7.0"} 1\n',
      ),
    }),
    expect: { service: "prometheus", version: "1.7.0" },
  },
  {
    name: "Elasticsearch",
    port: 9200,
    behaviour: web({
      "/": http(
        "200 OK",
        { "Content-Type": "application/json" },
        '{\n  "name" : "es01",\n  "cluster_name" : "lab",\n  "version" : {\n    "number" : "8.11.1",\n    "build_flavor" : "default"\n  },\n  "tagline" : "You Know, for Search"\n}\n',
      ),
    }),
    expect: { service: "elasticsearch", product: /^Elasticsearch$/, version: "8.11.1" },
  },
  {
    name: "OpenSearch",
    port: 9201,
    behaviour: web({
      "/": http(
        "200 OK",
        { "Content-Type": "application/json" },
        '{"name":"os1","version":{"distribution":"opensearch","number":"2.11.0"},"tagline":"The OpenSearch Project: https://opensearch.org/"}',
      ),
    }),
    expect: { service: "elasticsearch", product: /^OpenSearch$/, version: "2.11.0" },
  },
  {
    name: "CouchDB",
    port: 5984,
    behaviour: web({
      "/": http(
        "200 OK",
        { "Content-Type": "application/json", Server: "CouchDB/3.3.3 (Erlang OTP/24)" },
        '{"couchdb":"Welcome","version":"3.3.3","git_sha":"40afbcfc7","uuid":"x","features":[],"vendor":{"name":"The Apache Software Foundation"}}\n',
      ),
    }),
    expect: { service: "couchdb", version: "3.3.3" },
  },
  {
    name: "SMB (SMB2 negotiate answer)",
    port: 445,
    behaviour: {
      answer: () =>
        Buffer.concat([Buffer.from([0, 0, 0, 68]), Buffer.from("\xfeSMB", "latin1"), Buffer.alloc(64)]),
      close: true,
    },
    expect: { service: "microsoft-ds" },
  },
  {
    name: "RDP (X.224 connection confirm)",
    port: 3389,
    behaviour: { answer: () => Buffer.from("030000130ed000001234000201080002000000", "hex"), close: true },
    expect: { service: "ms-wbt-server" },
  },
  {
    name: "VNC (RFB greeting)",
    port: 5900,
    behaviour: { greeting: "RFB 003.008\n" },
    expect: { service: "vnc" },
  },
  {
    name: "Telnet (option negotiation)",
    port: 23,
    behaviour: { greeting: Buffer.from([0xff, 0xfd, 0x18, 0xff, 0xfd, 0x20]) },
    expect: { service: "telnet" },
  },
  {
    name: "SIP over TCP (OPTIONS)",
    port: 5060,
    behaviour: {
      answer: () =>
        "SIP/2.0 200 OK\r\nVia: SIP/2.0/TCP 127.121.2.1:5060;branch=z9hG4bK-sightline\r\nServer: Asterisk PBX 18.10.0\r\nAllow: INVITE, ACK, OPTIONS\r\nContent-Length: 0\r\n\r\n",
      close: true,
    },
    expect: { service: "sip", product: /Asterisk/, version: "18.10.0" },
  },
  {
    name: "X11 (connection refused for want of authorisation)",
    port: 6000,
    behaviour: {
      answer: () =>
        Buffer.concat([
          Buffer.from([0x00, 21, 11, 0, 0, 0, 6, 0]),
          Buffer.from("No protocol specified\n\0\0\0"),
        ]),
      close: true,
    },
    expect: { service: "x11" },
  },
  {
    name: "SMTP with STARTTLS (ESMTP from RFC 5321)",
    port: 25,
    behaviour: {
      greeting: "220 mx.lab.test ESMTP Postfix (Debian/GNU)\r\n",
      answer: (r) =>
        /^EHLO/i.test(r.toString())
          ? "250-mx.lab.test\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n250-STARTTLS\r\n250 8BITMIME\r\n221 2.0.0 Bye\r\n"
          : undefined,
    },
    expect: { service: "smtp", product: /Postfix/, starttls: true },
  },
  {
    name: "Redis answering an HTTP request on an odd port",
    port: 7000,
    behaviour: {
      answer: (r) =>
        r.toString().startsWith("INFO")
          ? "$60\r\n# Server\r\nredis_version:7.2.4\r\nredis_mode:standalone\r\nos:Linux\r\n\r\n"
          : "-ERR wrong number of arguments for 'get' command\r\n",
    },
    expect: { service: "redis", version: "7.2.4" },
  },
  {
    name: "HTTP on 9999",
    port: 9999,
    behaviour: web({ "/": http("200 OK", { Server: "lighttpd/1.4.69" }, "hi") }),
    expect: { service: "http", product: /lighttpd/, version: "1.4.69" },
  },
  {
    name: "HTTPS on 8443",
    port: 8443,
    tls: true,
    behaviour: web({ "/": http("200 OK", { Server: "nginx/1.25.3" }, "hi") }),
    expect: { service: "https", version: "1.25.3", tls: true },
  },
];

const identify = (port: number, options: { greeting?: Buffer; firstByteMs?: number } = {}) =>
  identifyService({
    host: HOST,
    port,
    greeting: options.greeting,
    connectMs: 2000,
    firstByteMs: options.firstByteMs ?? 800,
    signal: new AbortController().signal,
    slot: (work) => work(),
  });

let dir = "";
after(async () => {
  for (const socket of sockets) socket.destroy();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("service identification", () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "sightline-serviceid-"));
    writeSelfSignedCertificate({
      keyFile: `${dir}/key.pem`,
      certFile: `${dir}/cert.pem`,
      commonName: "lab.test",
      days: 2,
    });
    tlsKey = readFileSync(`${dir}/key.pem`, "utf8");
    tlsCert = readFileSync(`${dir}/cert.pem`, "utf8");
    for (const c of CASES) await fake(c.port, c.behaviour, c.tls);
  });

  for (const c of CASES)
    it(`names ${c.name}`, async () => {
      const identity = await identify(c.port);
      assert.equal(identity.service, c.expect.service, JSON.stringify(identity));
      if (c.expect.product) assert.match(identity.product ?? "", c.expect.product, JSON.stringify(identity));
      if (c.expect.version) assert.equal(identity.version, c.expect.version, JSON.stringify(identity));
      assert.equal(identity.tls, c.expect.tls ?? false);
      if (c.expect.starttls) assert.equal(identity.starttls, true, JSON.stringify(identity));
      if (identity.cpe) assert.match(identity.cpe, /^cpe:2\.3:[aoh]:[^:]+:[^:]+:/);
      assert.ok(identity.banner.length <= 512);
    });

  it("asks a web site that fronts no API one request, not every API's paths", async () => {
    let requests = 0;
    await fake(18080, {
      close: true,
      answer: (request) => {
        if (/^[A-Z]+ \//.test(request.toString("latin1"))) requests++;
        return http("200 OK", { "Content-Type": "text/html" }, "<html>shop</html>");
      },
    });
    const identity = await identify(18080);
    assert.equal(identity.service, "http");
    assert.equal(requests, 1, "one HTTP request (the TLS handshake that failed is not one)");
  });

  it("reads an Oracle VSNNUM as the release it encodes", () => {
    assert.equal(oracleVersion("318767104"), "19.0.0.0.0");
    assert.equal(oracleVersion("186647552"), "11.2.0.4.0");
    assert.equal(oracleVersion("nope"), undefined);
  });
});

describe("service identification of hostile services", () => {
  const PORTS = { garbage: 40001, endless: 40002, slow: 40003, silent: 40004, closes: 40005, allOk: 40006 };
  before(async () => {
    await fake(PORTS.garbage, {
      answer: () => Buffer.from("a8f3\x00\x01\x02zz\xff\xfe", "latin1"),
      close: true,
    });
    const endless = createServer((socket) => {
      socket.on("error", () => {});
      const chunk = Buffer.alloc(4096, 0x41);
      const pump = () => {
        while (!socket.destroyed && socket.write(chunk));
        if (!socket.destroyed) socket.once("drain", pump);
      };
      pump();
    });
    track(endless);
    await new Promise<void>((resolve) => endless.listen(PORTS.endless, HOST, resolve));
    const slow = createServer((socket) => {
      socket.on("error", () => {});
      const text = Buffer.from("SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n");
      let i = 0;
      const timer = setInterval(() => {
        if (socket.destroyed || i >= text.length) return clearInterval(timer);
        socket.write(text.subarray(i, ++i));
      }, 10);
      socket.on("close", () => clearInterval(timer));
    });
    track(slow);
    await new Promise<void>((resolve) => slow.listen(PORTS.slow, HOST, resolve));
    await fake(PORTS.silent, {});
    const closes = createServer((socket) => socket.destroy());
    track(closes);
    await new Promise<void>((resolve) => closes.listen(PORTS.closes, HOST, resolve));
    await fake(PORTS.allOk, { answer: () => http("200 OK", {}, "OK"), close: true });
  });

  it("leaves garbage unidentified", async () => {
    const identity = await identify(PORTS.garbage);
    assert.equal(identity.service, "unknown");
    assert.equal(identity.product, undefined);
  });

  it("reads an endless stream only up to its bound", async () => {
    const started = Date.now();
    const identity = await identify(PORTS.endless);
    assert.equal(identity.service, "unknown");
    assert.ok(identity.banner.length <= 512);
    assert.ok(PROBE_MAX_BYTES <= 64 * 1024);
    assert.ok(Date.now() - started < 30_000);
  });

  it("reads a greeting sent byte by byte", async () => {
    const identity = await identify(PORTS.slow);
    assert.equal(identity.service, "ssh");
    assert.equal(identity.version, "9.6p1");
  });

  it("gives up on a silent service after a few short waits, not a timeout per probe", async () => {
    const started = Date.now();
    const identity = await identify(PORTS.silent, { greeting: Buffer.alloc(0), firstByteMs: 300 });
    assert.equal(identity.service, "unknown");
    // Three silent probes of 300 ms and a TLS handshake wait: far less than one probe per protocol.
    assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
  });

  it("names nothing on a service that closes at once", async () => {
    const identity = await identify(PORTS.closes);
    assert.equal(identity.service, "unknown");
    assert.equal(identity.identified_by, "port");
  });

  it("does not take a server that answers everything with 200 for any product", async () => {
    const identity = await identify(PORTS.allOk);
    assert.equal(identity.service, "http");
    assert.equal(identity.product, undefined);
  });
});

describe("the probe file", () => {
  it("loads, and every probe has a unique name", () => {
    const probes = serviceProbes();
    assert.ok(probes.length >= 30);
    assert.equal(new Set(probes.map((p) => p.name)).size, probes.length);
  });

  it("refuses an unknown field, a bad pattern and a bad CPE with the probe's name", () => {
    assert.throws(
      () => compileProbes(parse("probes:\n  - name: x\n    send: a\n    colour: red\n")),
      /probe "x": unknown field "colour"/,
    );
    assert.throws(
      () =>
        compileProbes(
          parse("probes:\n  - name: y\n    send: a\n    matches:\n      - {service: s, pattern: '('}\n"),
        ),
      /probe "y", match #1: pattern does not compile/,
    );
    assert.throws(
      () =>
        compileProbes(
          parse(
            "probes:\n  - name: z\n    send: a\n    matches:\n      - {service: s, pattern: 'a', cpe: 'redis'}\n",
          ),
        ),
      /cpe "redis" is not part:vendor:product/,
    );
  });
});
