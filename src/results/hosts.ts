/**
 * The hosts result: an object keyed by IP address with the spec's Host fields. Ports come from the
 * NetworkService entities of the address, names from the names that resolved to it. Read a batch of
 * addresses at a time, with the services of that batch.
 */

import { type Static, Type } from "typebox";
import { formatDecimalExponent, formatTimestamp } from "../core/formats.ts";
import type { Details } from "../store/entities.ts";
import {
  type EntityFilters,
  type EntityRow,
  inBatches,
  type Page,
  type ResultQueries,
  type ResultRun,
  release,
} from "../store/result-queries.ts";
import { Geolocation, geolocation, strings, text } from "./common.ts";
import { DecimalExponent, Timestamp } from "./formats.ts";

export const Host = Type.Object({
  resolutions: Type.Array(Type.String(), { description: "Names that resolve to the address." }),
  first_seen: Timestamp,
  last_seen: Timestamp,
  net_name: Type.String({
    description: 'Network owner, or "Loopback", "Private network", … for special ranges.',
  }),
  geolocation: Geolocation,
  ports: Type.Array(
    Type.Object({ number: DecimalExponent("Port number"), protocol: Type.String({ examples: ["tcp"] }) }),
    { description: "Open ports, in port order; may be empty." },
  ),
  os: Type.String({ description: "Operating system a service banner names; empty when unknown." }),
  scoped: Type.Boolean(),
  hidden: Type.Boolean(),
});
export type Host = Static<typeof Host>;

export const HOST_KINDS = ["IpAddress"];

function host(address: EntityRow, services: Array<{ details: Details }>): Host {
  const ports = services
    .map((service) => ({
      port: Number(service.details.port),
      protocol: text(service.details.protocol) || "tcp",
    }))
    .sort((a, b) => a.port - b.port || a.protocol.localeCompare(b.protocol));
  return {
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

/** `[ip, Host]` pairs in address text order. */
export async function* hostEntries(
  queries: ResultQueries,
  run: ResultRun | undefined,
  filters: EntityFilters,
  page: Page,
): AsyncGenerator<[string, Host]> {
  if (!run) return;
  const addresses = queries.entities(run, { ...filters, kinds: HOST_KINDS }, { page });
  for await (const batch of inBatches(addresses)) {
    const services = new Map<string, Array<{ details: Details }>>();
    const found = await queries.services(
      run,
      batch.map((address) => address.name),
    );
    for (const service of found) {
      const known = services.get(service.address);
      if (known) known.push(service);
      else services.set(service.address, [service]);
    }
    release(found);
    for (const address of batch) yield [address.name, host(address, services.get(address.name) ?? [])];
  }
}
