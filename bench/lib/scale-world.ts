/**
 * The scale benchmark's world, in a process of its own: every other address of 127.90.0.0/<prefix> is a
 * live host (HTTP on 80 on every live host, SSH on every 4th, TLS on every 8th with one shared
 * certificate, a second web port 8080 on every 16th), and a DNS server on 127.91.0.54:53 with one name
 * per live host (h<i>.scale.test) and its PTR record, the zone open to transfer (AXFR over TCP) for
 * runs seeded with the domain. One process holds every listener (raise `ulimit -n`
 * before starting it: a /16 is about 47,000 sockets); one HTTP and one HTTPS server answer for all of them.
 * Prints one JSON line when ready, serves until its standard input closes.
 *
 * `node bench/lib/scale-world.ts <prefix> [part parts]` (24, 20 or 16).
 */
import { createSocket } from "node:dgram";
import { createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer, type Server, type Socket } from "node:net";
import dnsPacket from "dns-packet";
import { createCertificateAuthority } from "../../test/lab/certificates.ts";

/** The world's /16 is 127.<octet>.0.0 (SIGHTLINE_BENCH_SCALE_OCTET, default 90; its name server in the next /16), so two benches can run at once. */
export const WORLD_OCTET = Number(process.env.SIGHTLINE_BENCH_SCALE_OCTET ?? 90);
export const WORLD_NET = `127.${WORLD_OCTET}.0.0`;
export const NAMESERVER = `127.${WORLD_OCTET + 1}.0.54`;
export const ZONE = "scale.test";
/** Records per message of a zone transfer. */
const AXFR_CHUNK = 500;

export interface WorldHost {
  index: number;
  ip: string;
  ports: number[];
}

/** The live hosts of the world at `prefix`, with their open ports. */
export function worldHosts(prefix: number): WorldHost[] {
  const size = 2 ** (32 - prefix);
  const hosts: WorldHost[] = [];
  for (let i = 1; i < size; i += 2) {
    const live = hosts.length;
    const ports = [80];
    if (live % 4 === 0) ports.unshift(22);
    if (live % 8 === 0) ports.push(443);
    if (live % 16 === 0) ports.push(8080);
    hosts.push({ index: live, ip: `127.${WORLD_OCTET}.${i >> 8}.${i & 255}`, ports });
  }
  return hosts;
}

const page = (host: string) =>
  `<!doctype html><html><head><title>${host}</title></head><body><h1>${host}</h1></body></html>`;

async function main() {
  const prefix = Number(process.argv[2] ?? 24);
  // A part of the world (runs of 16 hosts, the mix repeating every 16, dealt round the parts): one process cannot hold a /16's
  // listeners where the descriptor limit is 20,000. Part 0 also serves the zone.
  const part = Number(process.argv[3] ?? 0);
  const parts = Number(process.argv[4] ?? 1);
  const everyHost = worldHosts(prefix);
  const hosts = everyHost.filter((host) => Math.floor(host.index / 16) % parts === part);
  const web = createHttpServer((request, response) => {
    response.writeHead(200, { server: "nginx/1.24.0", "content-type": "text/html" });
    response.end(page(request.headers.host ?? ""));
  });
  const authority = await createCertificateAuthority();
  const shared = await authority.issue({ commonName: `www.${ZONE}`, key: "ecdsa-p256", issuer: "lab-ca" });
  const secure = createHttpsServer({ key: shared.keyPem, cert: shared.chainPem }, (request, response) => {
    response.writeHead(200, { server: "nginx/1.24.0", "content-type": "text/html" });
    response.end(page(request.headers.host ?? ""));
  });
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.once("close", () => sockets.delete(socket));
  };
  const handlers: Record<number, (socket: Socket) => void> = {
    22: (socket) => socket.end("SSH-2.0-OpenSSH_9.6p1 Debian-3\r\n"),
    80: (socket) => web.emit("connection", socket),
    8080: (socket) => web.emit("connection", socket),
    443: (socket) => secure.emit("connection", socket),
  };
  const servers: Server[] = [];
  const listen = (ip: string, port: number) =>
    new Promise<void>((resolve, reject) => {
      const server = createServer((socket) => {
        track(socket);
        handlers[port](socket);
      });
      server.once("error", reject);
      server.listen({ host: ip, port, backlog: 64 }, () => resolve());
      servers.push(server);
    });
  for (let i = 0; i < hosts.length; i += 256)
    await Promise.all(
      hosts.slice(i, i + 256).flatMap((host) => host.ports.map((port) => listen(host.ip, port))),
    );

  // DNS: one name per live host and its PTR, indexed (the lab's zone set scans its records per query).
  const forward = new Map<string, string>();
  const reverse = new Map<string, string>();
  for (const host of everyHost) {
    const name = `h${host.index}.${ZONE}`;
    forward.set(name, host.ip);
    reverse.set(`${host.ip.split(".").reverse().join(".")}.in-addr.arpa`, name);
  }
  const soa = {
    type: "SOA" as const,
    name: ZONE,
    ttl: 300,
    data: {
      mname: `ns1.${ZONE}`,
      rname: `hostmaster.${ZONE}`,
      serial: 1,
      refresh: 3600,
      retry: 600,
      expire: 86400,
      minimum: 300,
    },
  };
  forward.set(`ns1.${ZONE}`, NAMESERVER);
  const response = (query: dnsPacket.Packet, rcode: string, answers: dnsPacket.Answer[]): Buffer =>
    dnsPacket.encode({
      type: "response",
      id: query.id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED),
      rcode,
      questions: query.questions,
      answers,
      authorities: answers.length === 0 ? [soa] : [],
    } as dnsPacket.Packet);
  const answer = (query: dnsPacket.Packet): Buffer => {
    const question = query.questions?.[0];
    const name = (question?.name ?? "").toLowerCase().replace(/\.$/, "");
    const answers: dnsPacket.Answer[] = [];
    let rcode = "NOERROR";
    if (question?.type === "A" && forward.has(name))
      answers.push({ type: "A", name: question.name, ttl: 300, data: forward.get(name)! });
    else if (question?.type === "PTR" && reverse.has(name))
      answers.push({ type: "PTR", name: question.name, ttl: 300, data: reverse.get(name)! });
    else if (question?.type === "NS" && name === ZONE)
      answers.push({ type: "NS", name: question.name, ttl: 300, data: `ns1.${ZONE}` });
    else if (question?.type === "SOA" && name === ZONE) answers.push({ ...soa, name: question.name });
    else if (!forward.has(name) && !reverse.has(name) && name !== ZONE) rcode = "NXDOMAIN";
    return response(query, rcode, answers);
  };
  /** A transfer of the forward zone: SOA, every A record in messages of AXFR_CHUNK, SOA (RFC 5936). */
  const transfer = (query: dnsPacket.Packet): Buffer[] => {
    const records: dnsPacket.Answer[] = [{ ...soa }];
    for (const [name, ip] of forward) records.push({ type: "A", name, ttl: 300, data: ip });
    records.push({ ...soa });
    const messages: Buffer[] = [];
    for (let i = 0; i < records.length; i += AXFR_CHUNK)
      messages.push(response(query, "NOERROR", records.slice(i, i + AXFR_CHUNK)));
    return messages;
  };
  const replies = (query: dnsPacket.Packet): Buffer[] => {
    const question = query.questions?.[0];
    const zone = (question?.name ?? "").toLowerCase().replace(/\.$/, "") === ZONE;
    return question?.type === "AXFR" && zone ? transfer(query) : [answer(query)];
  };
  if (part !== 0) {
    process.stdout.write(
      `${JSON.stringify({ resolver: `${NAMESERVER}:53`, live: hosts.length, listeners: servers.length })}\n`,
    );
    process.stdin.resume();
    process.stdin.on("end", () => process.exit(0));
    return;
  }
  const udp = createSocket("udp4");
  udp.on("message", (message, client) => {
    try {
      udp.send(answer(dnsPacket.decode(message)), client.port, client.address);
    } catch {
      // A datagram that is not a DNS query gets no answer.
    }
  });
  await new Promise<void>((resolve) => udp.bind(53, NAMESERVER, resolve));
  const tcp = createServer((socket) => {
    track(socket);
    let buffered = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
        const length = buffered.readUInt16BE(0);
        const query = dnsPacket.decode(buffered.subarray(2, 2 + length));
        buffered = buffered.subarray(2 + length);
        for (const reply of replies(query)) {
          const framed = Buffer.alloc(2 + reply.length);
          framed.writeUInt16BE(reply.length, 0);
          reply.copy(framed, 2);
          socket.write(framed);
        }
      }
    });
  });
  await new Promise<void>((resolve) => tcp.listen(53, NAMESERVER, resolve));

  process.stdout.write(
    `${JSON.stringify({ resolver: `${NAMESERVER}:53`, live: hosts.length, listeners: servers.length })}\n`,
  );
  process.stdin.resume();
  process.stdin.on("end", async () => {
    for (const socket of sockets) socket.destroy();
    udp.close();
    await Promise.all([...servers, tcp].map((server) => new Promise((resolve) => server.close(resolve))));
    process.exit(0);
  });
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
