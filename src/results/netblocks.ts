import type { EntityRow } from "../store/result-queries.ts";
import { compareAddresses, entityFields, geolocation, strings, text } from "./common.ts";

export const NETBLOCK_KINDS = ["NetBlock"];

export function netblockItem(entity: EntityRow) {
  return {
    ...entityFields(entity),
    asn: text(entity.details.asn),
    organization: text(entity.details.organization),
    net_name: text(entity.details.net_name),
    geolocation: geolocation(entity.details.geolocation),
    hosts: strings(entity.details.addresses).sort(compareAddresses),
  };
}
