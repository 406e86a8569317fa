/**
 * Subdomain brute force of a domain from the configured wordlist, after wildcard detection: names that
 * answer like the wildcard are not reported; the wildcard itself is recorded on the domain and its
 * addresses as hosts (they are real, and serve every name of the zone).
 */

import { answersLikeWildcard, probeWildcard } from "../dns-wildcard.ts";
import type { DiscoveryModule } from "../module.ts";
import { DnsClient } from "../net/dns-client.ts";
import { loadWordlist } from "../wordlists.ts";

export const dnsBruteforce: DiscoveryModule = {
  name: "dns-brute",
  consumes: ["Domain"],
  produces: ["DnsRecord", "IpAddress"],
  async run(entity, ctx) {
    const dns = new DnsClient(ctx);
    const zone = entity.name;
    const probe = await probeWildcard(dns, zone);
    if (probe.kind === "unanswered") {
      ctx.note(`No DNS server answered for names under ${zone}; its subdomains were not brute-forced.`);
      return;
    }
    if (probe.kind === "wildcard") {
      const wildcard = `*.${zone}`;
      ctx.emit({
        kind: entity.kind,
        name: zone,
        details: { wildcard: { name: wildcard, addresses: probe.addresses } },
      });
      for (const address of probe.addresses)
        ctx.emit({ kind: "IpAddress", name: address, details: { resolutions: [wildcard] } });
    }

    const words = loadWordlist(ctx.settings.wordlist, ctx.settings.wordlistLines);
    let found = 0;
    let unanswered = 0;
    await Promise.all(
      words.map(async (word) => {
        const name = `${word}.${zone}`;
        const answer = await dns.probe(name);
        if (answer.failure === "timeout" || answer.failure === "error") unanswered++;
        if (!answer.exists || answersLikeWildcard(probe, answer)) return;
        found++;
        ctx.emit({ kind: "DnsRecord", name, details: { source: "bruteforce" } });
      }),
    );
    if (unanswered > 0)
      ctx.note(`${unanswered} of ${words.length} brute-force lookups under ${zone} got no answer.`);
    ctx.emit({
      kind: entity.kind,
      name: zone,
      details: { bruteforce: { words: words.length, found, wildcard: probe.kind === "wildcard" } },
    });
  },
};
