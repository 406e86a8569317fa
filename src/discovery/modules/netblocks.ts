/**
 * Netblock and geolocation of an address, from the offline database (no network traffic): the block it
 * belongs to becomes a NetBlock entity; the address gets its ASN, network name and geolocation.
 */
import { lookupNetwork } from "../ip-database.ts";
import type { DiscoveryModule } from "../module.ts";

export const netblocks: DiscoveryModule = {
  name: "netblocks",
  consumes: ["IpAddress"],
  produces: ["NetBlock"],
  async run(entity, ctx) {
    const info = lookupNetwork(entity.name);
    if (!info) return;
    const geolocation = {
      continent: info.continent,
      country: info.country,
      country_code: info.country_code,
      continent_code: info.continent_code,
    };
    ctx.emit({
      kind: "NetBlock",
      name: info.netblock,
      details: {
        asn: info.asn,
        organization: info.organization,
        net_name: info.net_name,
        geolocation,
        addresses: [entity.name],
      },
    });
    ctx.emit({
      kind: "IpAddress",
      name: entity.name,
      details: { netblock: info.netblock, asn: info.asn, net_name: info.net_name, geolocation },
    });
  },
};
