/**
 * ONC RPC's portmapper (rpcbind, RFC 1833) answering anyone: one DUMP call (program 100000, version
 * 2, procedure 4, no credentials) over UDP lists every RPC service the host registered — NFS, mountd,
 * NIS, lock and status daemons — with their ports, and answers 40 bytes with hundreds (a reflector for
 * amplification). Read-only: DUMP changes nothing.
 */
import { randomInt } from "node:crypto";
import { udpAsk } from "../../net/udp.ts";
import { check, type ExposureCheck, excerpt } from "./check.ts";

const PORTMAPPER = 100000;
const PROCEDURE_DUMP = 4;

/** What a registration's program number names (the registry's common ones). */
const PROGRAMS: Record<number, string> = {
  100000: "portmapper",
  100001: "rstatd",
  100002: "rusersd",
  100003: "nfs",
  100004: "ypserv",
  100005: "mountd",
  100007: "ypbind",
  100008: "walld",
  100009: "yppasswdd",
  100011: "rquotad",
  100012: "sprayd",
  100021: "nlockmgr",
  100024: "status",
  100083: "ttdbserverd",
  100227: "nfs_acl",
  100232: "sadmind",
  150001: "pcnfsd",
  391002: "sgi_fam",
};

export interface RpcRegistration {
  program: number;
  name: string;
  version: number;
  protocol: "tcp" | "udp" | string;
  port: number;
}

/** A DUMP call to the portmapper with transaction id `xid` (40 bytes). */
export function portmapperDump(xid: number): Buffer {
  const call = Buffer.alloc(40);
  call.writeUInt32BE(xid >>> 0, 0);
  call.writeUInt32BE(0, 4); // CALL
  call.writeUInt32BE(2, 8); // RPC version 2
  call.writeUInt32BE(PORTMAPPER, 12);
  call.writeUInt32BE(2, 16); // portmapper version 2
  call.writeUInt32BE(PROCEDURE_DUMP, 20);
  // credentials and verifier: AUTH_NULL, empty (the last 16 bytes stay zero)
  return call;
}

export const portmapperXid = (call: Buffer) => call.readUInt32BE(0);

/** At most this many registrations are read from an answer. */
const MAX_REGISTRATIONS = 256;

/** The registrations a DUMP reply with `xid` lists; undefined when the datagram is not that reply. */
export function parsePortmapperDump(reply: Buffer, xid: number): RpcRegistration[] | undefined {
  if (reply.length < 24 || reply.readUInt32BE(0) !== xid >>> 0 || reply.readUInt32BE(4) !== 1)
    return undefined;
  if (reply.readUInt32BE(8) !== 0) return undefined; // MSG_ACCEPTED
  const verifierLength = reply.readUInt32BE(16);
  let at = 20 + Math.ceil(verifierLength / 4) * 4;
  if (at + 4 > reply.length || reply.readUInt32BE(at) !== 0) return undefined; // SUCCESS
  at += 4;
  const registrations: RpcRegistration[] = [];
  while (at + 4 <= reply.length && reply.readUInt32BE(at) === 1 && registrations.length < MAX_REGISTRATIONS) {
    if (at + 20 > reply.length) break;
    const program = reply.readUInt32BE(at + 4);
    const protocol = reply.readUInt32BE(at + 12);
    registrations.push({
      program,
      name: PROGRAMS[program] ?? `program ${program}`,
      version: reply.readUInt32BE(at + 8),
      protocol: protocol === 6 ? "tcp" : protocol === 17 ? "udp" : String(protocol),
      port: reply.readUInt32BE(at + 16),
    });
    at += 20;
  }
  return registrations;
}

/** "portmapper v2–4, nfs v3–4, mountd v1–3": what the registrations offer, each program once. */
export function describeRegistrations(registrations: RpcRegistration[]): string {
  const versions = new Map<string, number[]>();
  for (const { name, version } of registrations) versions.set(name, [...(versions.get(name) ?? []), version]);
  return [...versions]
    .map(([name, list]) => {
      const low = Math.min(...list);
      const high = Math.max(...list);
      return `${name} v${low === high ? low : `${low}–${high}`}`;
    })
    .join(", ");
}

export const rpcbindExposed = check({
  name: "rpcbind_exposed",
  prettyName: "RPC portmapper (rpcbind) answers anyone",
  severity: 3,
  confidence: "confirmed",
  category: "exposed_service",
  description:
    "The RPC portmapper answers a DUMP from any address: it lists the host's RPC services (NFS, mountd, NIS, lock and status daemons) and their ports, a map for attacking them, and it answers a 40-byte question with hundreds of bytes to a forged source address (amplification).",
  remediation:
    "Do not expose port 111: firewall it to the hosts that mount from this one, or stop rpcbind where no NFS or NIS is served (systemctl disable --now rpcbind.socket rpcbind).",
  references: [
    { type: "description", uri: "https://www.rfc-editor.org/rfc/rfc1833" },
    {
      type: "description",
      uri: "https://www.cisa.gov/news-events/alerts/2014/01/17/udp-based-amplification-attacks",
    },
  ],
  services: ["rpcbind", "sunrpc"],
  ports: [111],
  transport: "udp",
  async prove(target) {
    const xid = randomInt(1, 0x7fff_ffff);
    const call = portmapperDump(xid);
    const answer = await udpAsk({
      host: target.address,
      port: target.port,
      payload: call,
      timeoutMs: target.timeoutMs,
      signal: target.signal,
    });
    const reply = answer?.datagrams.find((datagram) => parsePortmapperDump(datagram, xid) !== undefined);
    const registrations = reply && parsePortmapperDump(reply, xid);
    if (!reply || !registrations || registrations.length === 0) return undefined;
    return {
      sent: `RPC portmapper v2 DUMP, no credentials (${call.length} bytes)`,
      received: excerpt(describeRegistrations(registrations)),
      bytes_answered: reply.length,
      programs: [...new Set(registrations.map((registration) => registration.name))],
      registrations: registrations
        .slice(0, 32)
        .map(({ name, version, protocol, port }) => `${name} v${version} ${port}/${protocol}`),
    };
  },
});

export const RPC_CHECKS: readonly ExposureCheck[] = [rpcbindExposed];
