/**
 * Hostile targets on loopback, for the tests that prove discovery survives them with bounded memory and
 * time. Each target is a host of its own in zone `hostile.test`:
 * - web (port 80): a body that never ends, a gzip bomb (gigabytes of zeros, a few KB on the wire per
 *   GB), a header section that never ends, a redirect loop, headers trickled one byte a second, a body
 *   trickled one byte a second, malformed HTTP;
 * - TLS (port 443): a Certificate message holding garbage instead of DER, one announcing 16 MB and
 *   streaming it, and a real certificate naming thousands of hosts;
 * - banners (port 22): a service that never speaks and never closes, and one whose greeting never ends;
 * - services the exposure checks and the UDP pass meet (each on its service's usual port): garbage
 *   answering a Redis command, memcached statistics that never end, an FTP greeting trickled byte by
 *   byte, an MQTT broker that never answers, an LDAP server that closes at once, TLS where Redis was
 *   expected, an SNMP agent that floods replies, and a "proxy" answering 200 (with a Via header) to
 *   everything;
 * - DNS (its own server, the zone's only name server, port 53): a CNAME loop, an endless CNAME chain,
 *   oversized TXT records, a name with a thousand addresses, truncated and garbled answers, a name it
 *   never answers, and a zone transfer that never ends.
 *
 * It is not part of the default lab world, so the lab's recall and precision tests are undisturbed;
 * tests that need it call `startHostileLab()` and point discovery's resolver at `lab.resolver`.
 */
import { randomBytes } from "node:crypto";
import { createSocket, type RemoteInfo } from "node:dgram";
import { createServer as createHttpServer, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer, type Socket } from "node:net";
import { createServer as createTlsServer } from "node:tls";
import { gzipSync } from "node:zlib";
import dnsPacket, { type Answer, type DecodedPacket, type Packet } from "dns-packet";
import { createCertificateAuthority } from "./certificates.ts";
import { bindUdp, type Closable, handlesReleased, isAddressInUse, listenTcp } from "./sockets.ts";

export const HOSTILE_ZONE = "hostile.test";

/** The hostile hosts: the last octet of their address (`${base}.201.N`) and the port they serve. */
const HOSTS = {
  endless: { octet: 1, port: 80 },
  bomb: { octet: 2, port: 80 },
  headers: { octet: 3, port: 80 },
  redirects: { octet: 4, port: 80 },
  trickle: { octet: 5, port: 80 },
  drip: { octet: 6, port: 80 },
  garbage: { octet: 7, port: 80 },
  badcert: { octet: 11, port: 443 },
  hugecert: { octet: 12, port: 443 },
  sans: { octet: 13, port: 443 },
  mute: { octet: 21, port: 22 },
  chatter: { octet: 22, port: 22 },
  "garbage-redis": { octet: 31, port: 6379 },
  "endless-stats": { octet: 32, port: 11211 },
  "trickle-ftp": { octet: 33, port: 21 },
  "silent-mqtt": { octet: 34, port: 1883 },
  "closing-ldap": { octet: 35, port: 389 },
  "tls-redis": { octet: 36, port: 6379 },
  "snmp-flood": { octet: 37, port: 161 },
  "yes-proxy": { octet: 38, port: 8080 },
} as const;

export type HostileHost = keyof typeof HOSTS;

export interface HostileTarget {
  /** `<host>.hostile.test`. */
  name: string;
  ip: string;
  port: number;
}

/** Names whose DNS answers are the hostile part. */
export const HOSTILE_NAMES = {
  /** loop-a CNAME loop-b CNAME loop-a. */
  loop: `loop-a.${HOSTILE_ZONE}`,
  /** chain-N CNAME chain-(N+1), without end. */
  chain: `chain-0.${HOSTILE_ZONE}`,
  /** TXT records of some 50 KB in all, each far longer than a sane TXT record. */
  bigTxt: `bigtxt.${HOSTILE_ZONE}`,
  /** A thousand A records. */
  crowd: `crowd.${HOSTILE_ZONE}`,
  /** Every answer truncated (TC), over UDP and TCP alike. */
  truncated: `truncated.${HOSTILE_ZONE}`,
  /** Answers that are not DNS messages. */
  garbled: `garbled.${HOSTILE_ZONE}`,
  /** Never answered. */
  silent: `silent.${HOSTILE_ZONE}`,
} as const;

/**
 * Small caps for tests against the hostile lab (the same keys as the configuration's), so each
 * test takes moments and every cap is reached.
 */
export const SMALL_CAPS = {
  httpMaxBodyBytes: 64 * 1024,
  httpMaxHeaderBytes: 16 * 1024,
  httpMaxRedirects: 3,
  bannerMaxBytes: 64,
  bannerTimeoutMs: 300,
  dnsMaxRecords: 10,
  dnsMaxTxtLength: 300,
  axfrMaxRecords: 50,
  tlsMaxNames: 10,
};

export const CROWD_SIZE = 1000;
export const SAN_COUNT = 2000;
const BIG_TXT_RECORDS = 20;

export interface HostileLab {
  /** First two octets of the block, e.g. `127.42`. */
  readonly base: string;
  /** `${base}.0.0/16`: what a scan must be allowed to touch. */
  readonly block: string;
  /** The zone's name server, `ip:53`: discovery's resolver for hostile tests. */
  readonly resolver: string;
  readonly targets: Record<HostileHost, HostileTarget>;
  stop(): Promise<void>;
}

const activeBases = new Set<string>();

export async function startHostileLab(): Promise<HostileLab> {
  for (let attempt = 0; ; attempt++) {
    const base = `127.${10 + Math.floor(Math.random() * 241)}`;
    if (base === "127.53" || activeBases.has(base)) continue;
    activeBases.add(base);
    try {
      return await launch(base);
    } catch (error) {
      activeBases.delete(base);
      if (!isAddressInUse(error) || attempt >= 20) throw error;
    }
  }
}

async function launch(base: string): Promise<HostileLab> {
  const ip = (octet: number) => `${base}.201.${octet}`;
  const targets = Object.fromEntries(
    Object.entries(HOSTS).map(([host, { octet, port }]) => [
      host,
      { name: `${host}.${HOSTILE_ZONE}`, ip: ip(octet), port },
    ]),
  ) as Record<HostileHost, HostileTarget>;
  const dnsIp = ip(53);
  const crowd = Array.from(
    { length: CROWD_SIZE },
    (_, i) => `${base}.${202 + Math.floor(i / 256)}.${i % 256}`,
  );
  const zone = hostileZone({ targets, dnsIp, crowd });

  const ca = await createCertificateAuthority();
  const sans = await ca.issue({
    commonName: targets.sans.name,
    altNames: Array.from({ length: SAN_COUNT }, (_, i) => `n${i}.${HOSTILE_ZONE}`),
    key: "ecdsa-p256",
    issuer: "lab-ca",
  });

  const closables: Closable[] = [];
  const start = async (started: Promise<Closable>) => closables.push(await started);
  const stopAll = async () => {
    await Promise.all(closables.map((closable) => closable.close()));
    await handlesReleased();
  };
  try {
    await start(listenTcp(createHttpServer(endlessBody), targets.endless.ip, 80));
    await start(listenTcp(createHttpServer(gzipBomb()), targets.bomb.ip, 80));
    await start(listenTcp(createServer(endlessHeaders), targets.headers.ip, 80));
    await start(listenTcp(createHttpServer(redirectLoop), targets.redirects.ip, 80));
    await start(listenTcp(createServer(trickledHeaders), targets.trickle.ip, 80));
    await start(listenTcp(createHttpServer(trickledBody), targets.drip.ip, 80));
    await start(listenTcp(createServer(malformedHttp()), targets.garbage.ip, 80));
    await start(listenTcp(createServer(tlsServerHello(garbageCertificate)), targets.badcert.ip, 443));
    await start(listenTcp(createServer(tlsServerHello(enormousCertificate)), targets.hugecert.ip, 443));
    const https = createHttpsServer({ key: sans.keyPem, cert: sans.chainPem }, (_request, response) =>
      response.end("<title>Many names</title>"),
    );
    https.on("tlsClientError", () => {});
    await start(listenTcp(https, targets.sans.ip, 443));
    await start(listenTcp(createServer(muteBanner), targets.mute.ip, 22));
    await start(listenTcp(createServer(endlessBanner), targets.chatter.ip, 22));
    await start(listenTcp(createServer(garbageAnswers), targets["garbage-redis"].ip, 6379));
    await start(listenTcp(createServer(endlessStats), targets["endless-stats"].ip, 11211));
    await start(listenTcp(createServer(trickledFtpGreeting), targets["trickle-ftp"].ip, 21));
    await start(listenTcp(createServer(muteBanner), targets["silent-mqtt"].ip, 1883));
    await start(
      listenTcp(
        createServer((socket) => socket.destroy()),
        targets["closing-ldap"].ip,
        389,
      ),
    );
    const tlsRedis = createTlsServer({ key: sans.keyPem, cert: sans.chainPem }, (socket) => {
      socket.on("error", () => {});
      socket.on("data", () => socket.write("hello from a TLS service\r\n"));
    });
    tlsRedis.on("tlsClientError", () => {});
    await start(listenTcp(tlsRedis, targets["tls-redis"].ip, 6379));
    await start(bindUdp(floodingAgent(), targets["snmp-flood"].ip, 161));
    await start(listenTcp(createHttpServer(yesProxy), targets["yes-proxy"].ip, 8080));
    await start(startDnsServer(dnsIp, zone));
  } catch (error) {
    await stopAll();
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    base,
    block: `${base}.0.0/16`,
    resolver: `${dnsIp}:53`,
    targets,
    stop() {
      stopping ??= stopAll().finally(() => activeBases.delete(base));
      return stopping;
    },
  };
}

// --- writing without end ------------------------------------------------------------------------

interface Sink {
  write(chunk: Buffer | string): boolean;
  on(event: "drain" | "error" | "close", listener: () => void): unknown;
  readonly destroyed: boolean;
}

/** Writes `next()` for as long as the peer reads (respecting backpressure), until it goes away. */
function flood(sink: Sink, next: () => Buffer | string): void {
  const pump = () => {
    while (!sink.destroyed && sink.write(next()));
  };
  sink.on("error", () => {});
  sink.on("drain", pump);
  pump();
}

/** Writes `text` one byte a second, for ever, until the peer goes away. */
function trickle(socket: Sink, text: string): void {
  let index = 0;
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(text[index++ % text.length]!);
  }, 1000);
  socket.on("error", () => {});
  socket.on("close", () => clearInterval(timer));
}

// --- web ----------------------------------------------------------------------------------------

const KILOBYTES_64 = Buffer.alloc(64 * 1024, "a");

function endlessBody(_request: unknown, response: ServerResponse): void {
  response.writeHead(200, { "content-type": "text/html" });
  response.write("<html><head><title>Endless</title></head><body>");
  flood(response, () => KILOBYTES_64);
}

/** Gzip members of 16 MiB of zeros each (16 KB on the wire), sent back to back without end. */
function gzipBomb() {
  const member = gzipSync(Buffer.alloc(16 * 1024 * 1024), { level: 9 });
  return (_request: unknown, response: ServerResponse) => {
    response.writeHead(200, { "content-type": "text/html", "content-encoding": "gzip" });
    flood(response, () => member);
  };
}

const FILLER = `X-Filler: ${"h".repeat(1000)}\r\n`;

function endlessHeaders(socket: Socket): void {
  socket.once("data", () => {
    socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n");
    flood(socket, () => FILLER);
  });
  socket.on("error", () => {});
}

/** Every path redirects to the next one on the same host, for ever. */
function redirectLoop(request: { url?: string }, response: ServerResponse): void {
  const hop = Number(/^\/loop\/(\d+)$/.exec(request.url ?? "")?.[1] ?? 0);
  response.writeHead(302, { location: `/loop/${hop + 1}`, "content-type": "text/html" });
  response.end("<a>moved</a>");
}

function trickledHeaders(socket: Socket): void {
  socket.once("data", () => trickle(socket, "HTTP/1.1 200 OK\r\nX-Slow: yes\r\n"));
  socket.on("error", () => {});
}

function trickledBody(_request: unknown, response: ServerResponse): void {
  response.writeHead(200, { "content-type": "text/html" });
  response.write("<html><head><title>Drip</title></head><body>");
  trickle(response, "drip ");
}

/** Answers each connection with another kind of broken HTTP, and never closes. */
function malformedHttp() {
  const answers = [
    () => randomBytes(4096),
    () => "HTTP/1.1 two hundred OK\r\n\r\n",
    () =>
      "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    () => "HTTP/1.1 200 OK\r\nBad Header Without Colon\r\n\u0000\u0001\r\n\r\n",
  ];
  let connections = 0;
  return (socket: Socket) => {
    const answer = answers[connections++ % answers.length]!;
    socket.on("error", () => {});
    socket.once("data", () => socket.write(answer()));
  };
}

// --- TLS, spoken by hand --------------------------------------------------------------------------

const u16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
const u24 = (n: number) => Buffer.from([(n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]);
const tlsRecord = (type: number, body: Buffer) =>
  Buffer.concat([Buffer.from([type, 3, 3]), u16(body.length), body]);
const handshakeMessage = (type: number, body: Buffer, length = body.length) =>
  Buffer.concat([Buffer.from([type]), u24(length), body]);

/**
 * A TLS 1.2 ServerHello (ECDHE-RSA-AES128-GCM-SHA256, which every client offers, with secure
 * renegotiation so OpenSSL 3 goes on), followed by whatever certificate message `certificate` sends.
 */
function tlsServerHello(certificate: (socket: Socket) => void) {
  return (socket: Socket) => {
    socket.on("error", () => {});
    socket.once("data", () => {
      const extensions = Buffer.from([0xff, 0x01, 0x00, 0x01, 0x00]);
      const hello = Buffer.concat([
        Buffer.from([3, 3]),
        randomBytes(32),
        Buffer.from([0]),
        Buffer.from([0xc0, 0x2f, 0]),
        u16(extensions.length),
        extensions,
      ]);
      socket.write(tlsRecord(22, handshakeMessage(2, hello)));
      certificate(socket);
    });
  };
}

/** A Certificate message whose one certificate is a DER SEQUENCE of random bytes. */
function garbageCertificate(socket: Socket): void {
  const der = Buffer.concat([Buffer.from([0x30, 0x82, 0x02, 0x58]), randomBytes(600)]);
  const list = Buffer.concat([u24(der.length), der]);
  socket.write(tlsRecord(22, handshakeMessage(11, Buffer.concat([u24(list.length), list]))));
}

/** A Certificate message announcing 16 MB, then streamed record after record for as long as read. */
function enormousCertificate(socket: Socket): void {
  const total = 0xfffff0;
  socket.write(tlsRecord(22, handshakeMessage(11, Buffer.concat([u24(total - 3)]), total)));
  const filler = tlsRecord(22, randomBytes(16_000));
  flood(socket, () => filler);
}

// --- banners -------------------------------------------------------------------------------------

function muteBanner(socket: Socket): void {
  socket.on("error", () => {});
}

/** The identification line's start and then bytes without end, the first of them in one segment. */
function endlessBanner(socket: Socket): void {
  let first = true;
  flood(socket, () => {
    if (!first) return KILOBYTES_64;
    first = false;
    return Buffer.concat([Buffer.from("SSH-2.0-"), KILOBYTES_64]);
  });
}

// --- services the exposure checks meet -----------------------------------------------------------

/** Random bytes in answer to anything, and the connection left open. */
function garbageAnswers(socket: Socket): void {
  socket.on("error", () => {});
  socket.on("data", () => socket.write(randomBytes(512)));
}

/** memcached's `stats` answered with statistics that never reach END. */
function endlessStats(socket: Socket): void {
  socket.on("error", () => {});
  socket.once("data", () => {
    let n = 0;
    flood(socket, () =>
      n++ === 0 ? "STAT pid 1\r\nSTAT version 1.6.18\r\n" : `STAT filler_${n} ${"x".repeat(200)}\r\n`,
    );
  });
}

/** An FTP greeting, one byte every 200 ms, for ever. */
function trickledFtpGreeting(socket: Socket): void {
  const text = "220 Welcome to a very slow FTP server\r\n";
  let index = 0;
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(text[index++ % text.length]!);
  }, 200);
  socket.on("error", () => {});
  socket.on("close", () => clearInterval(timer));
}

/** Answers every datagram with a burst of 500 datagrams of garbage. */
function floodingAgent() {
  const socket = createSocket("udp4");
  const junk = randomBytes(1024);
  socket.on("message", (_message: Buffer, remote: RemoteInfo) => {
    for (let i = 0; i < 500; i++) socket.send(junk, remote.port, remote.address);
  });
  return socket;
}

/** 200 OK, with a Via header, to every request in every form: absolute-form, origin-form, anything. */
function yesProxy(_request: unknown, response: ServerResponse): void {
  response.writeHead(200, { "content-type": "text/html", via: "1.1 yes-proxy" });
  response.end("<html><body>OK</body></html>");
}

// --- DNS -----------------------------------------------------------------------------------------

type Records = (type: string) => Answer[] | undefined;

/** What the server knows: owner name → a function of the query type (undefined: the name does not exist). */
function hostileZone(setup: { targets: Record<HostileHost, HostileTarget>; dnsIp: string; crowd: string[] }) {
  const names = new Map<string, Records>();
  const a = (name: string, address: string): Answer => ({ name, type: "A", ttl: 60, data: address });
  const only =
    (type: string, records: Answer[]): Records =>
    (asked) =>
      asked === type ? records : [];
  const soa: Answer = {
    name: HOSTILE_ZONE,
    type: "SOA",
    ttl: 60,
    data: {
      mname: `ns.${HOSTILE_ZONE}`,
      rname: `hostmaster.${HOSTILE_ZONE}`,
      serial: 1,
      refresh: 3600,
      retry: 600,
      expire: 86400,
      minimum: 60,
    },
  };
  const ns: Answer = { name: HOSTILE_ZONE, type: "NS", ttl: 60, data: `ns.${HOSTILE_ZONE}` };
  names.set(HOSTILE_ZONE, (type) => (type === "SOA" ? [soa] : type === "NS" ? [ns] : []));
  names.set(`ns.${HOSTILE_ZONE}`, only("A", [a(`ns.${HOSTILE_ZONE}`, setup.dnsIp)]));
  for (const target of Object.values(setup.targets))
    names.set(target.name, only("A", [a(target.name, target.ip)]));
  names.set(
    HOSTILE_NAMES.crowd,
    only(
      "A",
      setup.crowd.map((address) => a(HOSTILE_NAMES.crowd, address)),
    ),
  );
  const longText = "t".repeat(255);
  names.set(
    HOSTILE_NAMES.bigTxt,
    only(
      "TXT",
      Array.from({ length: BIG_TXT_RECORDS }, (_, i) => ({
        name: HOSTILE_NAMES.bigTxt,
        type: "TXT" as const,
        ttl: 60,
        data: [`record-${i}`, ...Array.from({ length: 9 }, () => longText)],
      })),
    ),
  );
  for (const name of [HOSTILE_NAMES.truncated, HOSTILE_NAMES.garbled, HOSTILE_NAMES.silent])
    names.set(name, only("A", [a(name, setup.dnsIp)]));
  return names;
}

/** CNAME targets: a two-name loop and a chain without end. */
function cnameOf(name: string): string | undefined {
  if (name === `loop-a.${HOSTILE_ZONE}`) return `loop-b.${HOSTILE_ZONE}`;
  if (name === `loop-b.${HOSTILE_ZONE}`) return `loop-a.${HOSTILE_ZONE}`;
  const chain = /^chain-(\d+)\.hostile\.test$/.exec(name);
  return chain ? `chain-${Number(chain[1]) + 1}.${HOSTILE_ZONE}` : undefined;
}

/** An answer like an authoritative server's: CNAMEs followed (a loop until it repeats, a chain 8 hops). */
function answer(zone: Map<string, Records>, query: DecodedPacket): Packet {
  const question = query.questions![0]!;
  const base = {
    type: "response" as const,
    id: query.id,
    flags: dnsPacket.AUTHORITATIVE_ANSWER,
    questions: query.questions,
  };
  let name = question.name.toLowerCase();
  if (name !== HOSTILE_ZONE && !name.endsWith(`.${HOSTILE_ZONE}`)) return { ...base, flags: 5 };
  const answers: Answer[] = [];
  const seen = new Set<string>();
  while (!seen.has(name) && seen.size < 8) {
    seen.add(name);
    const target = cnameOf(name);
    if (!target) break;
    answers.push({ name, type: "CNAME", ttl: 60, data: target });
    if (question.type === "CNAME") return { ...base, answers };
    name = target;
  }
  const records = zone.get(name);
  if (!records && answers.length === 0) return { ...base, flags: base.flags | 3, authorities: [soaOf(zone)] };
  return { ...base, answers: [...answers, ...(records?.(question.type) ?? [])] };
}

const soaOf = (zone: Map<string, Records>) => zone.get(HOSTILE_ZONE)!("SOA")![0]!;

function decodeQuery(message: Buffer): DecodedPacket | undefined {
  try {
    const packet = dnsPacket.decode(message);
    return packet.type === "query" && packet.questions?.length === 1 ? packet : undefined;
  } catch {
    return undefined;
  }
}

/** The truncated answer of a query: header with TC, no records. */
const truncatedReply = (query: DecodedPacket) =>
  dnsPacket.encode({
    type: "response",
    id: query.id,
    flags: dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.TRUNCATED_RESPONSE,
    questions: query.questions,
  });

/** The query id, a response flag, and random bytes: not a DNS message. */
const garbledReply = (query: DecodedPacket) =>
  Buffer.concat([Buffer.from([query.id! >> 8, query.id! & 0xff, 0x84, 0x00]), randomBytes(9)]);

async function startDnsServer(host: string, zone: Map<string, Records>): Promise<Closable> {
  const udp = createSocket("udp4");
  udp.on("message", (message: Buffer, client: RemoteInfo) => {
    const query = decodeQuery(message);
    if (!query) return;
    const name = query.questions![0]!.name.toLowerCase();
    if (name === HOSTILE_NAMES.silent) return;
    let reply: Buffer;
    if (name === HOSTILE_NAMES.garbled) reply = garbledReply(query);
    else if (name === HOSTILE_NAMES.truncated) reply = truncatedReply(query);
    else {
      reply = dnsPacket.encode(answer(zone, query));
      if (reply.length > 512) reply = truncatedReply(query);
    }
    udp.send(reply, client.port, client.address);
  });
  const udpBound = await bindUdp(udp, host, 53);
  let tcpBound: Closable;
  try {
    tcpBound = await listenTcp(
      createServer((socket) => serveTcp(socket, zone)),
      host,
      53,
    );
  } catch (error) {
    await udpBound.close();
    throw error;
  }
  return { close: async () => void (await Promise.all([udpBound.close(), tcpBound.close()])) };
}

function serveTcp(socket: Socket, zone: Map<string, Records>): void {
  let pending = Buffer.alloc(0);
  socket.on("error", () => {});
  socket.on("data", (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
      const query = decodeQuery(pending.subarray(2, 2 + pending.readUInt16BE(0)));
      pending = pending.subarray(2 + pending.readUInt16BE(0));
      if (!query) return void socket.destroy();
      const question = query.questions![0]!;
      const name = question.name.toLowerCase();
      if (name === HOSTILE_NAMES.silent || name === HOSTILE_NAMES.garbled) continue;
      if (question.type === "AXFR") {
        if (name !== HOSTILE_ZONE) continue;
        endlessTransfer(socket, query, zone);
        return;
      }
      const reply =
        name === HOSTILE_NAMES.truncated ? truncatedReply(query) : dnsPacket.encode(answer(zone, query));
      socket.write(Buffer.concat([u16(reply.length), reply]));
    }
  });
}

/** The SOA, then message after message of new A records, never the closing SOA. */
function endlessTransfer(socket: Socket, query: DecodedPacket, zone: Map<string, Records>): void {
  let serial = 0;
  const message = (answers: Answer[]) => {
    const encoded = dnsPacket.encode({
      type: "response",
      id: query.id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER,
      questions: query.questions,
      answers,
    });
    return Buffer.concat([u16(encoded.length), encoded]);
  };
  socket.write(message([soaOf(zone)]));
  flood(socket, () =>
    message(
      Array.from({ length: 50 }, () => {
        const n = serial++;
        return {
          name: `r${n}.${HOSTILE_ZONE}`,
          type: "A" as const,
          ttl: 60,
          data: `198.51.100.${n % 256}`,
        };
      }),
    ),
  );
}
