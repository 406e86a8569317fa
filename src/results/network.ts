/**
 * Where an entity sits on the network, for the views that show it next to the entity (applications,
 * issues): the address it is on, that address's host id, ASN, network name and country, and the owner
 * of the block holding it — all read from the IpAddress and NetBlock entities of the same run.
 */
import { strings, text } from "../core/details.ts";
import { serviceEndpoint } from "../core/service-names.ts";
import { collect, type EntityRow, type ResultQueries, type ResultRun } from "../store/result-queries.ts";
import { geolocation } from "./common.ts";

export interface NetworkFacts {
  ip_address: string;
  /** The IpAddress entity's id; 0 when the address is not among the collection's hosts. */
  host_id: number;
  asn: string;
  net_name: string;
  net_country_code: string;
  /** The organisation announcing the address's block; empty for special ranges. */
  organization: string;
}

/** The address an entity is on: its own name, its details' `ip_address`, or a name's first address. */
export function addressOf(entity: { kind: string; name: string; details: Record<string, unknown> }) {
  switch (entity.kind) {
    case "IpAddress":
      return entity.name;
    case "NetworkService":
      return serviceEndpoint(entity)?.address ?? "";
    case "Uri":
      return text(entity.details.ip_address);
    case "Domain":
    case "DnsRecord":
    case "Nameserver":
      return strings(entity.details.addresses)[0] ?? "";
    default:
      return "";
  }
}

/**
 * The network facts of a batch of entities: their addresses' IpAddress entities and those addresses'
 * NetBlocks, as of the run read — two indexed queries per batch, never the whole collection.
 */
export class NetworkIndex {
  readonly #addresses: Map<string, EntityRow>;
  readonly #blocks: Map<string, EntityRow>;

  private constructor(addresses: EntityRow[], blocks: EntityRow[]) {
    this.#addresses = new Map(addresses.map((entity) => [entity.name, entity]));
    this.#blocks = new Map(blocks.map((entity) => [entity.name, entity]));
  }

  static async of(
    queries: ResultQueries,
    run: ResultRun,
    entities: Array<{ kind: string; name: string; details: Record<string, unknown> }>,
  ): Promise<NetworkIndex> {
    const names = [...new Set(entities.map(addressOf).filter(Boolean))];
    const addresses = names.length
      ? await collect(queries.entities(run, { kinds: ["IpAddress"], names }))
      : [];
    const blocks = [...new Set(addresses.map((host) => text(host.details.netblock)).filter(Boolean))];
    return new NetworkIndex(
      addresses,
      blocks.length ? await collect(queries.entities(run, { kinds: ["NetBlock"], names: blocks })) : [],
    );
  }

  of(entity: { kind: string; name: string; details: Record<string, unknown> }): NetworkFacts {
    const address = addressOf(entity);
    const host = this.#addresses.get(address);
    const block = this.#blocks.get(text(host?.details.netblock));
    return {
      ip_address: address,
      host_id: host?.entityId ?? 0,
      asn: text(host?.details.asn),
      net_name: text(host?.details.net_name),
      net_country_code: geolocation(host?.details.geolocation).country_code,
      organization: text(block?.details.organization),
    };
  }
}
