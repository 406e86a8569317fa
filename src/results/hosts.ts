/**
 * The hosts result: an object keyed by IP address with the spec's Host fields. Ports come from the
 * NetworkService entities of the address, names from the names that resolved to it.
 */
import { formatDecimalExponent, formatTimestamp } from "../core/formats.ts";
import type { EntitiesRepository, EntityRecord } from "../store/entities.ts";
import { compareAddresses, type Geolocation, geolocation, strings, text } from "./common.ts";

export interface Host {
  resolutions: string[];
  first_seen: string;
  last_seen: string;
  net_name: string;
  geolocation: Geolocation;
  ports: Array<{ number: string; protocol: string }>;
  os: string;
  scoped: boolean;
  hidden: boolean;
}

export async function hostsView(
  entities: EntitiesRepository,
  collectionId: number,
  page: { limit?: number; offset?: number } = {},
): Promise<Record<string, Host>> {
  const addresses = await entities.current(collectionId, { kinds: ["IpAddress"], ...page });
  if (addresses.length === 0) return {};
  const services = await entities.current(collectionId, { kinds: ["NetworkService"] });
  const portsOf = new Map<string, EntityRecord[]>();
  for (const service of services) {
    const address = text(service.details.ip_address);
    portsOf.set(address, [...(portsOf.get(address) ?? []), service]);
  }
  const hosts: Record<string, Host> = {};
  for (const address of addresses.sort((a, b) => compareAddresses(a.name, b.name))) {
    const ports = (portsOf.get(address.name) ?? [])
      .map((service) => ({
        port: Number(service.details.port),
        protocol: text(service.details.protocol) || "tcp",
      }))
      .sort((a, b) => a.port - b.port || a.protocol.localeCompare(b.protocol));
    hosts[address.name] = {
      resolutions: strings(address.details.resolutions).sort(),
      first_seen: formatTimestamp(address.firstSeen),
      last_seen: formatTimestamp(address.lastSeen),
      net_name: text(address.details.net_name),
      geolocation: geolocation(address.details.geolocation),
      ports: ports.map(({ port, protocol }) => ({ number: formatDecimalExponent(port), protocol })),
      os: text(address.details.os),
      scoped: address.scoped,
      hidden: address.hidden,
    };
  }
  return hosts;
}
