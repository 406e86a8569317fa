import type { SoaAnswer } from "dns-packet";
import type { LabRecord, RecordType } from "./types.ts";

const DEFAULT_TTL = 300;
const MAX_CNAME_HOPS = 8;

export interface Zone {
  name: string;
  axfr: boolean;
  reverse: boolean;
  /** Owner names lower-case without the trailing dot; the first record is the SOA. */
  records: LabRecord[];
}

export type Rcode = "NOERROR" | "NXDOMAIN" | "REFUSED";

export interface LookupResult {
  rcode: Rcode;
  answers: LabRecord[];
  authorities: LabRecord[];
}

export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

/** `name` equals `zone` or lies below it. */
export function isAtOrBelow(name: string, zone: string): boolean {
  return name === zone || name.endsWith(`.${zone}`);
}

export function reverseName(ipv4: string): string {
  return `${ipv4.split(".").reverse().join(".")}.in-addr.arpa`;
}

export function soaOf(zone: Zone): SoaAnswer {
  return zone.records[0] as SoaAnswer;
}

/** The lab's zone data, and the lookups an authoritative server makes on it. */
export class ZoneSet {
  readonly #zones: Zone[] = [];

  addZone(zone: Zone): void {
    if (zone.records[0]?.type !== "SOA") throw new Error(`zone ${zone.name} must start with its SOA`);
    this.#zones.push({ ...zone, name: normalizeName(zone.name), records: zone.records.map(normalize) });
  }

  get zones(): readonly Zone[] {
    return this.#zones;
  }

  /** The most specific zone holding `name`. */
  zoneFor(name: string): Zone | undefined {
    const key = normalizeName(name);
    let best: Zone | undefined;
    for (const zone of this.#zones) {
      if (isAtOrBelow(key, zone.name) && zone.name.length > (best?.name.length ?? -1)) best = zone;
    }
    return best;
  }

  /** Adds records (each into its zone) and bumps the serials; returns the stored records for `remove`. */
  add(records: LabRecord[]): LabRecord[] {
    const placed = records.map((record) => {
      const zone = this.zoneFor(record.name);
      if (!zone) throw new Error(`the lab serves no zone for ${record.name}`);
      return { zone, record: normalize(record) };
    });
    for (const { zone, record } of placed) zone.records.push(record);
    this.#bumpSerials(new Set(placed.map((p) => p.zone)));
    return placed.map((p) => p.record);
  }

  /** Removes exactly the records `add` returned. */
  remove(records: LabRecord[]): void {
    const gone = new Set(records);
    const touched = new Set<Zone>();
    for (const zone of this.#zones) {
      const kept = zone.records.filter((record) => !gone.has(record));
      if (kept.length !== zone.records.length) touched.add(zone);
      zone.records = kept;
    }
    this.#bumpSerials(touched);
  }

  /**
   * Answers like an authoritative server: follows CNAMEs through every zone it serves, synthesises
   * wildcard answers, and takes the rcode from the last name in the chain (RFC 6604), so a CNAME
   * into a missing name answers NXDOMAIN. Answers carry the owner name as asked (0x20-safe).
   */
  lookup(qname: string, qtype: RecordType | "ANY"): LookupResult {
    const answers: LabRecord[] = [];
    let name = qname;
    for (let hop = 0; hop < MAX_CNAME_HOPS; hop++) {
      const zone = this.zoneFor(name);
      if (!zone) return { rcode: hop === 0 ? "REFUSED" : "NOERROR", answers, authorities: [] };
      const node = recordsAt(zone, name);
      if (!node) return { rcode: "NXDOMAIN", answers, authorities: [soaOf(zone)] };
      const matching = node.filter((record) => qtype === "ANY" || record.type === qtype);
      if (matching.length > 0)
        return { rcode: "NOERROR", answers: [...answers, ...matching], authorities: [] };
      const cname = node.find((record) => record.type === "CNAME");
      if (!cname) return { rcode: "NOERROR", answers, authorities: [soaOf(zone)] };
      answers.push(cname);
      name = cname.data as string;
    }
    return { rcode: "NOERROR", answers, authorities: [] };
  }

  /** The records of an AXFR, SOA first and last; undefined when the zone refuses transfers. */
  transfer(zoneName: string): LabRecord[] | undefined {
    const zone = this.#zones.find((z) => z.name === normalizeName(zoneName));
    if (!zone?.axfr) return undefined;
    return [...zone.records, soaOf(zone)];
  }

  #bumpSerials(zones: Set<Zone>): void {
    for (const zone of zones) {
      const soa = soaOf(zone);
      zone.records[0] = { ...soa, data: { ...soa.data, serial: (soa.data.serial ?? 0) + 1 } };
    }
  }
}

function normalize(record: LabRecord): LabRecord {
  return { ...record, name: normalizeName(record.name), ttl: record.ttl ?? DEFAULT_TTL } as LabRecord;
}

/**
 * The records at `name`, owned by `name` as spelled; [] for a name that exists without records
 * (an empty non-terminal such as `_tcp.acme.test`); undefined when the name does not exist.
 */
function recordsAt(zone: Zone, name: string): LabRecord[] | undefined {
  const key = normalizeName(name);
  const owned = (owner: string) => zone.records.filter((record) => record.name === owner);
  const exists = (owner: string) => zone.records.some((record) => isAtOrBelow(record.name, owner));
  const rename = (records: LabRecord[]) => records.map((record) => ({ ...record, name }) as LabRecord);

  if (exists(key)) return rename(owned(key));
  // RFC 4592: a wildcard applies at the closest existing ancestor only.
  let encloser = key;
  do encloser = encloser.slice(encloser.indexOf(".") + 1);
  while (encloser !== zone.name && !exists(encloser));
  const synthesised = owned(`*.${encloser}`);
  return synthesised.length > 0 ? rename(synthesised) : undefined;
}

/**
 * A zone open to transfer (AXFR) with `names` A records, h<i>.<zone> → `address(i)`, besides its SOA, NS
 * (ns1.<zone>) and the name server's own A record (`nameserver`).
 */
export function transferableZone(
  zone: string,
  nameserver: string,
  names: number,
  address: (i: number) => string,
): ZoneSet {
  const records: LabRecord[] = [
    {
      type: "SOA",
      name: zone,
      data: {
        mname: `ns1.${zone}`,
        rname: `hostmaster.${zone}`,
        serial: 1,
        refresh: 3600,
        retry: 600,
        expire: 86400,
        minimum: 300,
      },
    },
    { type: "NS", name: zone, data: `ns1.${zone}` },
    { type: "A", name: `ns1.${zone}`, data: nameserver },
  ];
  for (let i = 0; i < names; i++) records.push({ type: "A", name: `h${i}.${zone}`, data: address(i) });
  const zones = new ZoneSet();
  zones.addZone({ name: zone, axfr: true, reverse: false, records });
  return zones;
}
