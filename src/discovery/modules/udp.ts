/**
 * The UDP probe pass: for each address, one protocol-correct question per well-known UDP service
 * (DNS, SNMP v1/v2c and SNMPv3 engine discovery, NTP, the RPC portmapper, SSDP, mDNS, NetBIOS name
 * service, IKE, TFTP, memcached, SIP, OpenVPN). UDP has no
 * handshake, so a port is reported only when it answered — as a NetworkService "1.2.3.4:161/udp" with
 * `protocol: "udp"`, named by what it said when the answer has the protocol's shape (`unknown` when
 * it does not). An address's questions go out together in one throttle slot; each answer is read
 * within the caps of `udpAsk` (a flood is cut off, not read). No question writes anything: TFTP is a
 * read request of a file name made up for the probe, SNMP a GET of sysDescr.0. What Recog's database
 * for the protocol reads in an answer (SNMP's sysDescr, SIP's Server) names its product and machine.
 */
import { randomBytes } from "node:crypto";
import { isIPv6 } from "node:net";
import {
  describeRegistrations,
  parsePortmapperDump,
  portmapperDump,
  portmapperXid,
} from "../checks/exposures/rpc.ts";
import {
  enterpriseName,
  parseSnmpResponse,
  parseSnmpV3Report,
  snmpGet,
  snmpV3Discovery,
  snmpV3MessageId,
} from "../checks/exposures/snmp.ts";
import type { DiscoveryModule } from "../module.ts";
import { roundTrips } from "../net/round-trips.ts";
import { udpAsk } from "../net/udp.ts";
import { withRecog } from "../service-id.ts";

export interface UdpProbe {
  service: string;
  port: number;
  /** The probe's name where a port has several (`identified_by`); the service's otherwise. */
  name?: string;
  /** The question, fresh per use (ids and nonces). */
  payload(): Buffer;
  /** A short description of the answer when it has the protocol's shape; undefined otherwise. */
  read(answer: Buffer, payload: Buffer): string | undefined;
  /** The text of the answer Recog's database for the service reads (SNMP's sysDescr, SIP's Server). */
  text?(answer: Buffer, payload: Buffer): string | undefined;
}

const u16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const u32 = (n: number) => Buffer.from([(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]);
const printable = (bytes: Buffer, length = 120) =>
  bytes
    .toString("latin1", 0, length)
    .replace(/[^\x20-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);

/** A DNS query (one question) with a random id; `labels` already split. */
function dnsQuery(name: string, type: number, klass: number, recursion: boolean): Buffer {
  const labels = name
    .split(".")
    .filter(Boolean)
    .map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label)]));
  return Buffer.concat([
    randomBytes(2),
    Buffer.from([recursion ? 0x01 : 0x00, 0x00]),
    u16(1),
    u16(0),
    u16(0),
    u16(0),
    ...labels,
    Buffer.from([0]),
    u16(type),
    u16(klass),
  ]);
}

/** A DNS answer to our query: same id, QR set. */
const dnsAnswer = (answer: Buffer, query: Buffer) =>
  answer.length >= 12 && answer.readUInt16BE(0) === query.readUInt16BE(0) && (answer[2] & 0x80) !== 0
    ? `DNS response, rcode ${answer[3] & 0x0f}, ${answer.readUInt16BE(6)} answers`
    : undefined;

/** ISAKMP (IKEv1) Main Mode with one proposal: AES-128-CBC, SHA1, PSK, MODP-1024, as IKE scanners send. */
function ikePayload(): Buffer {
  const transform = Buffer.concat([
    Buffer.from([0, 0]), // last transform, reserved
    u16(8 + 4 * 5),
    Buffer.from([1, 1, 0, 0]), // transform 1, KEY_IKE
    Buffer.from([0x80, 0x01, 0x00, 0x07]), // encryption AES-CBC
    Buffer.from([0x80, 0x0e, 0x00, 0x80]), // key length 128
    Buffer.from([0x80, 0x02, 0x00, 0x02]), // hash SHA1
    Buffer.from([0x80, 0x03, 0x00, 0x01]), // auth pre-shared key
    Buffer.from([0x80, 0x04, 0x00, 0x02]), // group MODP-1024
  ]);
  const proposal = Buffer.concat([
    Buffer.from([0, 0]),
    u16(8 + transform.length),
    Buffer.from([1, 1, 0, 1]), // proposal 1, ISAKMP, no SPI, one transform
    transform,
  ]);
  const sa = Buffer.concat([Buffer.from([0, 0]), u16(12 + proposal.length), u32(1), u32(1), proposal]);
  const header = Buffer.concat([
    randomBytes(8), // initiator cookie
    Buffer.alloc(8), // responder cookie
    Buffer.from([1, 0x10, 2, 0]), // next payload SA, version 1.0, Main Mode, flags
    Buffer.alloc(4), // message id
    u32(28 + sa.length),
  ]);
  return Buffer.concat([header, sa]);
}

function netbiosStatusQuery(): Buffer {
  // NBSTAT for the name "*" (encoded as 32 half-bytes of 'A'+nibble), class IN.
  const name = Buffer.alloc(32, "A".charCodeAt(0));
  name[0] = "C".charCodeAt(0);
  name[1] = "K".charCodeAt(0);
  return Buffer.concat([
    randomBytes(2),
    Buffer.from([0x00, 0x00]),
    u16(1),
    u16(0),
    u16(0),
    u16(0),
    Buffer.from([32]),
    name,
    Buffer.from([0]),
    u16(0x21),
    u16(1),
  ]);
}

/** The first names of a NetBIOS node status answer. */
function netbiosNames(answer: Buffer): string[] {
  // header 12, name 34, type/class/ttl/length 10, then a count and 18-byte entries
  const at = 12 + 34 + 10;
  const count = answer[at] ?? 0;
  const names: string[] = [];
  for (let i = 0; i < Math.min(count, 8); i++) {
    const start = at + 1 + i * 18;
    if (start + 15 > answer.length) break;
    names.push(answer.toString("latin1", start, start + 15).trim());
  }
  return names;
}

/** A SIP answer's Server (or User-Agent) header. */
const sipAgent = (answer: Buffer) =>
  /^(?:server|user-agent):\s*(.+?)\r?$/im.exec(answer.toString("latin1"))?.[1];

export const UDP_PROBES: readonly UdpProbe[] = [
  {
    service: "domain",
    port: 53,
    payload: () => dnsQuery("", 2, 1, false), // NS of the root, no recursion asked
    read: dnsAnswer,
  },
  {
    service: "ntp",
    port: 123,
    payload: () => Buffer.concat([Buffer.from([0x23]), Buffer.alloc(39), randomBytes(8)]), // v4, mode 3 client
    read: (answer, payload) =>
      answer.length >= 48 &&
      (answer[0] & 0x07) === 4 &&
      answer.subarray(24, 32).equals(payload.subarray(40, 48))
        ? `NTP v${(answer[0] >> 3) & 0x07} server, stratum ${answer[1]}`
        : undefined,
  },
  {
    service: "netbios-ns",
    port: 137,
    payload: netbiosStatusQuery,
    read: (answer, payload) =>
      answer.length >= 12 && answer.readUInt16BE(0) === payload.readUInt16BE(0) && (answer[2] & 0x80) !== 0
        ? `NetBIOS node status: ${netbiosNames(answer).join(", ")}`
        : undefined,
  },
  {
    service: "snmp",
    port: 161,
    payload: () => snmpGet("public", 1, 1 + Math.floor(Math.random() * 0x7fff_ffff)),
    read: (answer) => {
      const response = parseSnmpResponse(answer);
      return response
        ? `SNMP GetResponse${response.value ? `: ${printable(Buffer.from(response.value))}` : ""}`
        : undefined;
    },
    text: (answer) => parseSnmpResponse(answer)?.value,
  },
  {
    // An agent that knows no default community still answers SNMPv3 engine discovery.
    service: "snmp",
    name: "snmpv3-discovery",
    port: 161,
    payload: () => snmpV3Discovery(1 + Math.floor(Math.random() * 0x7fff_ffff)),
    read: (answer, payload) => {
      const engine = parseSnmpV3Report(answer, snmpV3MessageId(payload));
      if (!engine) return undefined;
      const vendor = enterpriseName(engine.enterprise);
      const enterprise =
        engine.enterprise === undefined
          ? ""
          : `, enterprise ${engine.enterprise}${vendor ? ` (${vendor})` : ""}`;
      return `SNMPv3 engine ${engine.engineId}${enterprise}, boots ${engine.boots}`;
    },
  },
  {
    service: "rpcbind",
    port: 111,
    payload: () => portmapperDump(1 + Math.floor(Math.random() * 0x7fff_fffe)),
    read: (answer, payload) => {
      const registrations = parsePortmapperDump(answer, portmapperXid(payload));
      return registrations ? `RPC portmapper: ${describeRegistrations(registrations)}` : undefined;
    },
  },
  {
    service: "isakmp",
    port: 500,
    payload: ikePayload,
    read: (answer, payload) =>
      answer.length >= 28 && answer.subarray(0, 8).equals(payload.subarray(0, 8))
        ? `ISAKMP response, exchange ${answer[18]}, next payload ${answer[16]}`
        : undefined,
  },
  {
    service: "tftp",
    port: 69,
    payload: () =>
      Buffer.concat([u16(1), Buffer.from(`sightline-probe-${randomBytes(6).toString("hex")}\0octet\0`)]),
    read: (answer) =>
      answer.length >= 4 && [3, 5, 6].includes(answer.readUInt16BE(0))
        ? answer.readUInt16BE(0) === 5
          ? `TFTP error ${answer.readUInt16BE(2)}: ${printable(answer.subarray(4)).replace(/\\x00.*/, "")}`
          : "TFTP answered the read request"
        : undefined,
  },
  {
    service: "ssdp",
    port: 1900,
    payload: () =>
      Buffer.from(
        'M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: "ssdp:discover"\r\nMX: 1\r\nST: ssdp:all\r\n\r\n',
      ),
    read: (answer) => {
      const text = answer.toString("latin1");
      if (!/^HTTP\/1\.1 200/.test(text)) return undefined;
      const server = /^server:\s*(.+?)\r?$/im.exec(text)?.[1];
      return `SSDP answer${server ? `, server ${server}` : ""}`;
    },
  },
  {
    service: "openvpn",
    port: 1194,
    // P_CONTROL_HARD_RESET_CLIENT_V2, key id 0, a session id, no acks, packet id 0 (no tls-auth).
    payload: () => Buffer.concat([Buffer.from([0x38]), randomBytes(8), Buffer.from([0]), u32(0)]),
    read: (answer) =>
      answer.length >= 14 && answer[0] >> 3 === 8 ? "OpenVPN P_CONTROL_HARD_RESET_SERVER_V2" : undefined,
  },
  {
    service: "sip",
    port: 5060,
    payload: () => {
      const tag = randomBytes(6).toString("hex");
      return Buffer.from(
        `OPTIONS sip:nm SIP/2.0\r\nVia: SIP/2.0/UDP nm;branch=z9hG4bK${tag};rport\r\nFrom: <sip:nm@nm>;tag=${tag}\r\nTo: <sip:nm2@nm2>\r\nCall-ID: ${tag}@sightline\r\nCSeq: 42 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n`,
      );
    },
    read: (answer) => {
      const text = answer.toString("latin1");
      if (!/^SIP\/2\.0 \d{3}/.test(text)) return undefined;
      const agent = sipAgent(answer);
      return `${text.split("\r\n")[0]}${agent ? `, ${agent}` : ""}`;
    },
    text: sipAgent,
  },
  {
    service: "mdns",
    port: 5353,
    payload: () => dnsQuery("_services._dns-sd._udp.local", 12, 1, false),
    read: (answer, payload) =>
      // mDNS responders may answer with id 0; a response flag and a sane header are what count.
      answer.length >= 12 &&
      (answer[2] & 0x80) !== 0 &&
      [0, payload.readUInt16BE(0)].includes(answer.readUInt16BE(0))
        ? `mDNS response, ${answer.readUInt16BE(6)} answers`
        : undefined,
  },
  {
    service: "memcached",
    port: 11211,
    // The UDP frame header: request id, sequence 0, one datagram, reserved.
    payload: () => Buffer.concat([randomBytes(2), u16(0), u16(1), u16(0), Buffer.from("version\r\n")]),
    read: (answer, payload) =>
      answer.length > 8 &&
      answer.readUInt16BE(0) === payload.readUInt16BE(0) &&
      answer.toString("latin1", 8).startsWith("VERSION ")
        ? answer.toString("latin1", 8).trim()
        : undefined,
  },
];

/** The entity name of a UDP service: "1.2.3.4:161/udp", "[2001:db8::1]:161/udp". */
export const udpServiceName = (address: string, port: number) =>
  `${isIPv6(address) ? `[${address}]` : address}:${port}/udp`;

/** The UDP pass over the given probes (the default: every probe above, on its well-known port). */
export function createUdpModule(probes: readonly UdpProbe[] = UDP_PROBES): DiscoveryModule {
  return {
    name: "udp",
    consumes: ["IpAddress"],
    produces: ["NetworkService"],
    waits: true,
    async run(entity, ctx) {
      const address = entity.name;
      if (!ctx.mayTouch(address)) return;
      const { timeoutMs, limits } = ctx.settings;
      // A UDP service answers a question at once, as a service that speaks first greets: an address
      // that says nothing (no answer, no port unreachable) costs the greeting wait, not the whole timeout.
      const answerMs = Math.min(limits.bannerTimeoutMs, timeoutMs);
      const answered: number[] = [];
      // All of an address's questions go out together in one throttle slot (one operation for the rate
      // limit, as a turn of the TCP scan is): a silent host then costs one time-out, not one per port.
      const asked = probes.map((probe) => ({ probe, payload: probe.payload() }));
      // An address none of whose questions is answered or refused within its network's learnt round trip
      // (host discovery's estimate, round-trips.ts) is taken to be unused, as the port scan takes it, and
      // its questions end then. Once anything answers or refuses, the address is in use and every question
      // gets the whole wait, so a slow service is not cut short.
      const floorMs =
        ctx.settings.hostDiscovery === false ? undefined : ctx.settings.hostDiscoveryMinTimeoutMs;
      const silentAfterMs = floorMs === undefined ? answerMs : roundTrips.wait(address, floorMs, answerMs);
      const learnt = silentAfterMs < answerMs;
      const unused = new AbortController();
      const signal = learnt ? AbortSignal.any([ctx.signal, unused.signal]) : ctx.signal;
      let answers: Array<Awaited<ReturnType<typeof udpAsk>>>;
      try {
        answers = await ctx.throttle.run(
          address,
          async () => {
            let heard = false;
            const judge = learnt ? setTimeout(() => heard || unused.abort(), silentAfterMs) : undefined;
            try {
              return await Promise.all(
                asked.map(({ probe, payload }) =>
                  udpAsk({
                    host: address,
                    port: probe.port,
                    payload,
                    timeoutMs: answerMs,
                    signal,
                    maxBytes: Math.max(limits.bannerMaxBytes, 4096),
                    heard: () => {
                      heard = true;
                    },
                  }),
                ),
              );
            } finally {
              clearTimeout(judge);
            }
          },
          ctx.signal,
        );
      } catch {
        return; // aborted while waiting for a slot
      }
      // A port several probes asked (SNMP v1/v2c and v3) is one service: what each answer told, together.
      const byPort = new Map<
        number,
        { probe: UdpProbe; described: string[]; text?: string; first: Buffer }
      >();
      for (const [index, answer] of answers.entries()) {
        if (!answer) continue;
        const { probe, payload } = asked[index]!;
        const described = answer.datagrams.map((datagram) => probe.read(datagram, payload)).find(Boolean);
        const text = described
          ? answer.datagrams.map((d) => probe.text?.(d, payload)).find(Boolean)
          : undefined;
        const port = byPort.get(probe.port);
        if (!port) {
          byPort.set(probe.port, {
            probe,
            described: described ? [described] : [],
            text,
            first: answer.datagrams[0]!,
          });
        } else if (described) {
          if (port.described.length === 0) port.probe = probe;
          port.described.push(described);
          port.text ??= text;
        }
      }
      for (const [port, { probe, described, text, first }] of [...byPort].sort(([a], [b]) => a - b)) {
        answered.push(port);
        const identity = withRecog(
          {
            service: described.length > 0 ? probe.service : "unknown",
            tls: false,
            banner:
              described.length > 0
                ? described.join("; ")
                : printable(first, Math.min(limits.bannerMaxBytes, 120)),
            identified_by: described.length > 0 ? (probe.name ?? probe.service) : "udp",
          },
          text ?? "",
        );
        const { tls: _tls, ...facts } = identity;
        ctx.emit({
          kind: "NetworkService",
          name: udpServiceName(address, port),
          details: { ip_address: address, port, protocol: "udp", ...facts },
        });
      }
      if (answered.length > 0)
        ctx.emit({
          kind: "IpAddress",
          name: address,
          details: { udp_scan: { ports_probed: probes.length, answered: answered.sort((a, b) => a - b) } },
        });
    },
  };
}

export const udpScan = createUdpModule();
