/** The netblocks result: each block with its network owner, geolocation and the hosts found in it. */
import type { EntitiesRepository } from "../store/entities.ts";
import { compareAddresses, entityFields, geolocation, strings, text } from "./common.ts";

export async function netblocksView(
  entities: EntitiesRepository,
  collectionId: number,
  page: { limit?: number; offset?: number } = {},
) {
  const blocks = await entities.current(collectionId, { kinds: ["NetBlock"], ...page });
  return blocks.map((entity) => ({
    ...entityFields(entity),
    asn: text(entity.details.asn),
    organization: text(entity.details.organization),
    net_name: text(entity.details.net_name),
    geolocation: geolocation(entity.details.geolocation),
    hosts: strings(entity.details.addresses).sort(compareAddresses),
  }));
}
