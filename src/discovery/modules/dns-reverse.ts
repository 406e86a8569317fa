/** Reverse DNS: the PTR names of an address become DNS records (explored if they are in scope). */

import type { DiscoveryModule } from "../module.ts";
import { canonicalName, DnsClient } from "../net/dns-client.ts";

export const reverseDns: DiscoveryModule = {
  name: "dns-reverse",
  consumes: ["IpAddress"],
  produces: ["DnsRecord"],
  async run(entity, ctx) {
    const answer = await new DnsClient(ctx).ptr(entity.name);
    if (!answer.ok) {
      if (answer.code === "timeout") ctx.note(`Reverse DNS of ${entity.name} timed out.`);
      return;
    }
    const names = [...new Set(answer.value.map(canonicalName))].sort();
    for (const name of names) ctx.emit({ kind: "DnsRecord", name, details: { ptr_of: [entity.name] } });
    ctx.emit({ kind: "IpAddress", name: entity.name, details: { ptr: names } });
  },
};
