import type { RunningHost } from "./hosts.ts";
import type {
  CertificateFacts,
  CertificateTruth,
  DiscoveryPath,
  Endpoint,
  HostTruth,
  LabRecord,
  LabTruth,
  NameTruth,
  RecordType,
  ServiceTruth,
} from "./types.ts";
import { webTruth } from "./web-truth.ts";
import { normalizeName, soaOf, type Zone, type ZoneSet } from "./zones.ts";

export interface TruthInput {
  base: string;
  dnsServer: Endpoint;
  silentNameserver: Endpoint;
  zones: ZoneSet;
  hosts: Iterable<RunningHost>;
  ca: CertificateFacts;
  bruteforceWords: string[];
}

/** Derives the ground truth from what is actually served, so mutations can never leave it stale. */
export function buildTruth(input: TruthInput): LabTruth {
  const hosts = [...input.hosts];
  const zones = input.zones.zones;
  const forward = zones.filter((zone) => !zone.reverse);
  const forwardRecords = forward.flatMap((zone) => zone.records);
  const services = hosts.flatMap((host) => host.services.map((service) => ({ ip: host.spec.ip, service })));
  const certificates: CertificateTruth[] = services.flatMap(({ ip, service }) =>
    service.certificate
      ? [{ ...service.certificate, ip, port: service.spec.port, endpoint: `${ip}:${service.spec.port}` }]
      : [],
  );
  const names = forward.flatMap((zone) =>
    nameTruths(zone, {
      referenced: new Set(forwardRecords.flatMap(referencedName)),
      reverse: new Set(zones.filter((z) => z.reverse).flatMap((z) => z.records.flatMap(ptrTarget))),
      certified: new Set(
        certificates.flatMap((c) => [c.subjectCommonName, ...c.altNames].map(normalizeName)),
      ),
      words: new Set(input.bruteforceWords),
    }),
  );

  return {
    base: input.base,
    dnsServer: { ...input.dnsServer },
    resolver: `${input.dnsServer.host}:${input.dnsServer.port}`,
    silentNameserver: { ...input.silentNameserver },
    zones: zones.map((zone) => ({
      name: zone.name,
      reverse: zone.reverse,
      axfr: zone.axfr,
      serial: soaOf(zone).data.serial ?? 0,
      records: structuredClone(zone.records),
    })),
    names,
    hosts: hosts.map(
      ({ spec, services }): HostTruth => ({
        ip: spec.ip,
        ipv6: spec.ipv6 ?? null,
        names: [...spec.names],
        ptr: spec.ptr === undefined ? (spec.names[0] ?? null) : spec.ptr,
        ports: services.map((s) => s.spec.port).sort((a, b) => a - b),
      }),
    ),
    services: services.flatMap(({ ip, service }) => {
      const truth: ServiceTruth = {
        ip,
        port: service.spec.port,
        transport: "tcp",
        service: service.spec.kind,
        tls: service.spec.kind === "https",
        ...(service.banner === undefined ? {} : { banner: service.banner }),
        ...(service.product === undefined ? {} : { product: service.product }),
      };
      return service.spec.kind === "dns" ? [truth, { ...truth, transport: "udp" as const }] : [truth];
    }),
    certificates,
    ca: input.ca,
    wildcards: forward.flatMap((zone) => {
      const owners = [...new Set(zone.records.filter((r) => r.name.startsWith("*.")).map((r) => r.name))];
      return owners.map((name) => ({
        zone: zone.name,
        name,
        addresses: zone.records.filter((r) => r.name === name && r.type === "A").map((r) => r.data as string),
      }));
    }),
    axfrZones: zones.filter((zone) => zone.axfr).map((zone) => zone.name),
    danglingCnames: forwardRecords.flatMap((record) =>
      record.type === "CNAME" && input.zones.lookup(record.data, "A").rcode === "NXDOMAIN"
        ? [{ name: record.name, target: normalizeName(record.data) }]
        : [],
    ),
    onlyVia: onlyVia(names),
    bruteforceWords: [...input.bruteforceWords],
    ...webTruth({ hosts, zones: input.zones, names }),
  };
}

interface PathEvidence {
  referenced: Set<string>;
  reverse: Set<string>;
  certified: Set<string>;
  words: Set<string>;
}

function nameTruths(zone: Zone, evidence: PathEvidence): NameTruth[] {
  const byOwner = new Map<string, Set<RecordType>>();
  for (const record of zone.records) {
    if (record.name.startsWith("*.")) continue;
    byOwner.set(record.name, (byOwner.get(record.name) ?? new Set()).add(record.type));
  }
  return [...byOwner].map(([name, types]) => {
    const label = name === zone.name ? "" : name.slice(0, -zone.name.length - 1);
    const paths: [DiscoveryPath, boolean][] = [
      ["apex", name === zone.name],
      ["record", evidence.referenced.has(name)],
      ["reverse-dns", evidence.reverse.has(name)],
      ["certificate", evidence.certified.has(name)],
      ["axfr", zone.axfr],
      ["bruteforce", evidence.words.has(label)],
      ["well-known", label.startsWith("_")],
    ];
    return {
      name,
      zone: zone.name,
      types: [...types].sort(),
      paths: paths.filter(([, holds]) => holds).map(([path]) => path),
    };
  });
}

/** The owner name another record points at, if any. */
function referencedName(record: LabRecord): string[] {
  switch (record.type) {
    case "NS":
    case "CNAME":
      return [normalizeName(record.data)];
    case "MX":
      return [normalizeName(record.data.exchange)];
    case "SRV":
      return [normalizeName(record.data.target)];
    case "SOA":
      return [normalizeName(record.data.mname)];
    default:
      return [];
  }
}

function ptrTarget(record: LabRecord): string[] {
  return record.type === "PTR" ? [normalizeName(record.data)] : [];
}

function onlyVia(names: NameTruth[]): Partial<Record<DiscoveryPath, string[]>> {
  const result: Partial<Record<DiscoveryPath, string[]>> = {};
  for (const { name, paths } of names) {
    const [only] = paths;
    if (paths.length === 1 && only) result[only] = [...(result[only] ?? []), name];
  }
  return result;
}
