/**
 * Where an entity sits on the network, for the views that show it next to the entity (applications,
 * issues): the address it is on, that address's host id, ASN, network name and country, and the owner
 * of the block holding it — all read from the IpAddress and NetBlock entities of the same run.
 */
import { strings, text } from "../core/details.ts";
import { parseServiceName } from "../discovery/ports.ts";
import type { EntitiesRepository, EntityRecord } from "../store/entities.ts";
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
      return text(entity.details.ip_address) || parseServiceName(entity.name)?.address || "";
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

export class NetworkIndex {
  readonly #addresses: Map<string, EntityRecord>;
  readonly #blocks: Map<string, EntityRecord>;

  private constructor(addresses: EntityRecord[], blocks: EntityRecord[]) {
    this.#addresses = new Map(addresses.map((entity) => [entity.name, entity]));
    this.#blocks = new Map(blocks.map((entity) => [entity.name, entity]));
  }

  static async load(entities: EntitiesRepository, collectionId: number): Promise<NetworkIndex> {
    const [addresses, blocks] = await Promise.all([
      entities.current(collectionId, { kinds: ["IpAddress"] }),
      entities.current(collectionId, { kinds: ["NetBlock"] }),
    ]);
    return new NetworkIndex(addresses, blocks);
  }

  of(entity: { kind: string; name: string; details: Record<string, unknown> }): NetworkFacts {
    const address = addressOf(entity);
    const host = this.#addresses.get(address);
    const block = this.#blocks.get(text(host?.details.netblock));
    return {
      ip_address: address,
      host_id: host?.id ?? 0,
      asn: text(host?.details.asn),
      net_name: text(host?.details.net_name),
      net_country_code: geolocation(host?.details.geolocation).country_code,
      organization: text(block?.details.organization),
    };
  }
}
