import { createSocket } from "node:dgram";
import { createServer, type Socket } from "node:net";
import dnsPacket, { type Answer, type DecodedPacket, type Packet } from "dns-packet";
import { bindUdp, type Closable, listenTcp, withRandomPort } from "./sockets.ts";
import type { Endpoint, LabRecord } from "./types.ts";
import type { ZoneSet } from "./zones.ts";

const RCODES = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
type RcodeName = keyof typeof RCODES;

/** Without EDNS a UDP answer may not exceed 512 bytes (RFC 1035); larger ones are truncated. */
const CLASSIC_UDP_LIMIT = 512;
const OUR_UDP_LIMIT = 1232;
/** Records per AXFR message: small, so transfer clients must handle several messages. */
const AXFR_CHUNK = 8;

export interface DnsEndpoint extends Endpoint, Closable {}

export interface DnsServer extends Closable {
  /** Serves the zones on UDP and TCP at `host:port`; without a port, a random free one shared by both. */
  listen(host: string, port?: number): Promise<DnsEndpoint>;
}

/** An authoritative server for a `ZoneSet`; reads the set on every query, so mutations apply at once. */
export function createDnsServer(zones: ZoneSet): DnsServer {
  const endpoints = new Set<DnsEndpoint>();
  return {
    async listen(host, port) {
      const endpoint =
        port === undefined
          ? await withRandomPort((p) => bindEndpoint(zones, host, p))
          : await bindEndpoint(zones, host, port);
      endpoints.add(endpoint);
      return endpoint;
    },
    async close() {
      await Promise.all([...endpoints].map((endpoint) => endpoint.close()));
    },
  };
}

/** A name server that reads every query and never answers, for resolver timeout tests. */
export function startSilentNameserver(host: string): Promise<DnsEndpoint> {
  return withRandomPort(async (port) => {
    const socket = createSocket("udp4");
    socket.on("message", () => {});
    const bound = await bindUdp(socket, host, port);
    return { host, port, close: bound.close };
  });
}

async function bindEndpoint(zones: ZoneSet, host: string, port: number): Promise<DnsEndpoint> {
  const udp = createSocket("udp4");
  udp.on("message", (message, client) => {
    const reply = answerDatagram(zones, message);
    if (reply) udp.send(reply, client.port, client.address);
  });
  const udpBound = await bindUdp(udp, host, port);
  let tcpBound: Closable;
  try {
    tcpBound = await listenTcp(
      createServer((socket) => serveStream(zones, socket)),
      host,
      port,
    );
  } catch (error) {
    await udpBound.close();
    throw error;
  }
  return { host, port, close: async () => void (await Promise.all([udpBound.close(), tcpBound.close()])) };
}

function answerDatagram(zones: ZoneSet, message: Buffer): Buffer | undefined {
  const query = decode(message);
  if (!query) return undefined;
  const [reply] = respond(zones, query, "udp");
  if (!reply) return undefined;
  const edns = query.additionals?.find((record) => record.type === "OPT");
  const limit = edns
    ? Math.max(CLASSIC_UDP_LIMIT, Math.min(edns.udpPayloadSize, OUR_UDP_LIMIT))
    : CLASSIC_UDP_LIMIT;
  const encoded = dnsPacket.encode(reply);
  if (encoded.length <= limit) return encoded;
  // Truncated: the client retries over TCP.
  return dnsPacket.encode({
    ...reply,
    flags: (reply.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE,
    answers: [],
    authorities: [],
  });
}

/** DNS over TCP: each message framed by a 2-byte length, several per connection. */
function serveStream(zones: ZoneSet, socket: Socket): void {
  let pending = Buffer.alloc(0);
  socket.on("error", () => {});
  socket.on("data", (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
      const message = pending.subarray(2, 2 + pending.readUInt16BE(0));
      pending = pending.subarray(2 + message.length);
      const query = decode(message);
      if (!query) {
        socket.destroy();
        return;
      }
      for (const reply of respond(zones, query, "tcp")) socket.write(dnsPacket.streamEncode(reply));
    }
  });
}

function decode(message: Buffer): DecodedPacket | undefined {
  try {
    const packet = dnsPacket.decode(message);
    return packet.type === "query" ? packet : undefined;
  } catch {
    return undefined;
  }
}

/** The reply messages to one query: one, or several for an AXFR. */
function respond(zones: ZoneSet, query: DecodedPacket, transport: "udp" | "tcp"): Packet[] {
  const question = query.questions?.[0];
  const opcode = (query as { opcode?: string }).opcode;
  const reply = (rcode: RcodeName, sections: Partial<Packet> = {}): Packet => ({
    type: "response",
    id: query.id,
    // Authoritative for what we serve; echo RD; never offer recursion.
    flags:
      RCODES[rcode] |
      ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) |
      (rcode === "NOERROR" || rcode === "NXDOMAIN" ? dnsPacket.AUTHORITATIVE_ANSWER : 0),
    questions: query.questions,
    additionals: query.additionals?.some((r) => r.type === "OPT")
      ? [
          {
            type: "OPT",
            name: ".",
            udpPayloadSize: OUR_UDP_LIMIT,
            extendedRcode: 0,
            ednsVersion: 0,
            flags: 0,
            flag_do: false,
            options: [],
          },
        ]
      : [],
    ...sections,
  });

  if (opcode !== "QUERY") return [reply("NOTIMP")];
  if (!question || query.questions?.length !== 1) return [reply("FORMERR")];
  if (question.type === "AXFR" || question.type === "IXFR") {
    // Zone transfers only over TCP, and only where the zone allows them.
    const records = transport === "tcp" ? zones.transfer(question.name) : undefined;
    if (!records) return [reply("REFUSED")];
    const messages: Packet[] = [];
    for (let i = 0; i < records.length; i += AXFR_CHUNK) {
      messages.push(reply("NOERROR", { answers: wire(records.slice(i, i + AXFR_CHUNK)) }));
    }
    return messages;
  }
  const result = zones.lookup(question.name, (question.type as string) === "ANY" ? "ANY" : question.type);
  try {
    const packet = reply(result.rcode, {
      answers: wire(rotate(zones, result.answers)),
      authorities: wire(result.authorities),
    });
    dnsPacket.encode(packet);
    return [packet];
  } catch {
    return [reply("SERVFAIL")];
  }
}

/** How often each record set was answered, per zone set: the next answer starts one record further on. */
const turns = new WeakMap<ZoneSet, Map<string, number>>();

/**
 * Each record set of an answer in cyclic order, as BIND answers (and round-robin addresses, name servers
 * and TXT sets of load-balanced zones): a scanner must not take the order of a set for a fact.
 */
function rotate(zones: ZoneSet, records: LabRecord[]): LabRecord[] {
  const turn = turns.get(zones) ?? new Map<string, number>();
  turns.set(zones, turn);
  const sets = new Map<string, LabRecord[]>();
  for (const record of records) {
    const key = `${record.name}\u0000${record.type}`;
    sets.set(key, [...(sets.get(key) ?? []), record]);
  }
  return [...sets].flatMap(([key, set]) => {
    const start = (turn.get(key) ?? 0) % set.length;
    turn.set(key, start + 1);
    return [...set.slice(start), ...set.slice(0, start)];
  });
}

/** dns-packet's TXT encoder turns strings into Buffers in place; hand it copies. */
function wire(records: LabRecord[]): Answer[] {
  return records.map((record) =>
    record.type === "TXT" && Array.isArray(record.data) ? { ...record, data: [...record.data] } : record,
  );
}
