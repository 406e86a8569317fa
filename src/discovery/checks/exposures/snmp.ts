/**
 * SNMP answering a default community: one GetRequest for sysDescr.0 per community (`public`, then
 * `private`), SNMPv2c then v1 — GET only, never SET. An agent that does not know the community stays
 * silent, so only a GetResponse carrying the value proves it.
 */
import { children, integer, integerValue, octets, readTlv, tlv } from "../../net/ber.ts";
import { udpAsk } from "../../net/udp.ts";
import { check, type ExposureCheck, excerpt } from "./check.ts";

/** sysDescr.0: 1.3.6.1.2.1.1.1.0 */
const SYS_DESCR = Buffer.from([0x2b, 0x06, 0x01, 0x02, 0x01, 0x01, 0x01, 0x00]);

/** An SNMP GetRequest for sysDescr.0. `version` 0 is SNMPv1, 1 is SNMPv2c. */
export function snmpGet(community: string, version: 0 | 1, requestId: number): Buffer {
  const varbind = tlv(0x30, tlv(0x06, SYS_DESCR), tlv(0x05));
  const pdu = tlv(0xa0, integer(requestId), integer(0), integer(0), tlv(0x30, varbind));
  return tlv(0x30, integer(version), octets(community), pdu);
}

export interface SnmpAnswer {
  version: number;
  community: string;
  requestId: number;
  errorStatus: number;
  value?: string;
}

/** Reads a GetResponse (or undefined when the datagram is not one). */
export function parseSnmpResponse(datagram: Buffer): SnmpAnswer | undefined {
  const message = readTlv(datagram, 0);
  if (message?.tag !== 0x30) return undefined;
  const [version, community, pdu] = children(message.value);
  if (version?.tag !== 0x02 || community?.tag !== 0x04 || pdu?.tag !== 0xa2) return undefined;
  const [requestId, errorStatus, , varbinds] = children(pdu.value);
  const [first] = varbinds ? children(varbinds.value) : [];
  const [, value] = first ? children(first.value) : [];
  return {
    version: integerValue(version) ?? -1,
    community: community.value.toString("latin1"),
    requestId: integerValue(requestId) ?? -1,
    errorStatus: integerValue(errorStatus) ?? -1,
    value: value?.tag === 0x04 ? value.value.toString("utf8") : undefined,
  };
}

/**
 * SNMPv3 engine discovery (RFC 3414 §4): a GetRequest with no user and an empty engine id, flagged
 * reportable. Every SNMPv3 agent answers it with a Report carrying its engine id, boots and time, before
 * any credential: an agent that refuses every community still shows itself this way.
 */
export function snmpV3Discovery(messageId: number): Buffer {
  const globalData = tlv(0x30, integer(messageId), integer(65507), octets(Buffer.from([0x04])), integer(3));
  const usm = tlv(0x30, octets(""), integer(0), integer(0), octets(""), octets(""), octets(""));
  const pdu = tlv(0xa0, integer(messageId), integer(0), integer(0), tlv(0x30));
  return tlv(0x30, integer(3), globalData, octets(usm), tlv(0x30, octets(""), octets(""), pdu));
}

/** The message id of an engine discovery request this module built. */
export function snmpV3MessageId(request: Buffer): number {
  const message = readTlv(request, 0);
  const globalData = message ? children(message.value)[1] : undefined;
  return (globalData && integerValue(children(globalData.value)[0])) ?? -1;
}

export interface SnmpV3Engine {
  /** The authoritative engine id, in hex. */
  engineId: string;
  /** The IANA enterprise number the engine id starts with (RFC 3411), when it has that format. */
  enterprise?: number;
  boots: number;
  /** Seconds since the engine last booted. */
  time: number;
}

/** Vendors of the enterprise numbers engine ids most often start with (IANA's registry). */
const ENTERPRISES: Record<number, string> = {
  9: "Cisco",
  11: "HP",
  43: "3Com",
  311: "Microsoft",
  674: "Dell",
  1991: "Brocade (Foundry)",
  2011: "Huawei",
  2636: "Juniper",
  3375: "F5",
  4526: "Netgear",
  6876: "VMware",
  8072: "net-snmp",
  12356: "Fortinet",
  14988: "MikroTik",
  25506: "H3C",
  30065: "Arista",
  41112: "Ubiquiti",
};

export const enterpriseName = (enterprise: number | undefined) =>
  enterprise === undefined ? undefined : ENTERPRISES[enterprise];

/** Reads the Report an agent answers engine discovery with (undefined for anything else). */
export function parseSnmpV3Report(datagram: Buffer, messageId: number): SnmpV3Engine | undefined {
  const message = readTlv(datagram, 0);
  if (message?.tag !== 0x30) return undefined;
  const [version, globalData, security] = children(message.value);
  if (integerValue(version) !== 3 || globalData?.tag !== 0x30 || security?.tag !== 0x04) return undefined;
  if (integerValue(children(globalData.value)[0]) !== messageId) return undefined;
  const usm = readTlv(security.value, 0);
  if (usm?.tag !== 0x30) return undefined;
  const [engineId, boots, time] = children(usm.value);
  if (engineId?.tag !== 0x04 || engineId.value.length === 0) return undefined;
  const id = engineId.value;
  // RFC 3411: the first bit set means the first four bytes are the enterprise number (bit cleared).
  const enterprise = id.length >= 5 && id[0] & 0x80 ? id.readUInt32BE(0) & 0x7fff_ffff : undefined;
  return {
    engineId: id.toString("hex"),
    ...(enterprise === undefined ? {} : { enterprise }),
    boots: integerValue(boots) ?? 0,
    time: integerValue(time) ?? 0,
  };
}

export const DEFAULT_COMMUNITIES = ["public", "private"] as const;

export const snmpDefaultCommunity = check({
  name: "snmp_default_community",
  prettyName: "SNMP answers a default community",
  severity: 3,
  confidence: "confirmed",
  category: "weak_credentials",
  description:
    "The SNMP agent answers requests made with a default community string (public or private): anyone can read the device's configuration, interfaces, routes, processes and often user names — and write them too if the community is read-write.",
  remediation:
    "Remove the default communities; use SNMPv3 with authentication and privacy, and allow SNMP only from the monitoring hosts.",
  references: [
    {
      type: "description",
      uri: "https://www.cisa.gov/news-events/alerts/2017/06/05/reducing-risk-snmp-abuse",
    },
  ],
  services: ["snmp"],
  ports: [161],
  transport: "udp",
  async prove(target) {
    // Every community and version at once: an agent that does not know one stays silent, so asking
    // one after another would cost a full time-out each.
    const asks = DEFAULT_COMMUNITIES.flatMap((community) =>
      ([1, 0] as const).map(async (version) => {
        const requestId = 1 + Math.floor(Math.random() * 0x7fff_ffff);
        const answer = await udpAsk({
          host: target.address,
          port: target.port,
          payload: snmpGet(community, version, requestId),
          timeoutMs: target.timeoutMs,
          signal: target.signal,
          complete: (datagrams) => datagrams.some((d) => parseSnmpResponse(d)?.requestId === requestId),
        });
        const response = answer?.datagrams.map(parseSnmpResponse).find((r) => r?.requestId === requestId);
        return response?.errorStatus === 0 && response.value !== undefined
          ? { community, version, response }
          : undefined;
      }),
    );
    const found = (await Promise.all(asks)).find(Boolean);
    if (!found) return undefined;
    const { community, version, response } = found;
    return {
      sent: `SNMPv${version === 1 ? "2c" : "1"} GetRequest sysDescr.0 (1.3.6.1.2.1.1.1.0), community "${community}"`,
      received: excerpt(`GetResponse: sysDescr.0 = ${response.value}`),
      community,
      snmp_version: version === 1 ? "2c" : "1",
      sys_descr: excerpt(response.value ?? "", 200),
    };
  },
});

export const SNMP_CHECKS: readonly ExposureCheck[] = [snmpDefaultCommunity];
