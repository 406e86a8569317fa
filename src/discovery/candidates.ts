/**
 * Candidate names (from passive sources, from permutations) become facts only once DNS says they are:
 * each is resolved (A, AAAA, CNAME) and compared with its parent zone's wildcard, as brute force does.
 * A name that answers like the wildcard is dropped; one that does not exist is `gone` (a historical name
 * when a source knew it); one no server answered for is `unanswered`, neither kept nor denied.
 */
import { answersLikeWildcard, probeWildcard, type WildcardProbe } from "./dns-wildcard.ts";
import type { DnsClient } from "./net/dns-client.ts";

export interface Resolution {
  name: string;
  state: "live" | "wildcard" | "gone" | "unanswered";
  addresses: string[];
  alias?: string;
}

/** Names resolved at once, so a million candidates never are a million promises. */
const BATCH = 500;
/** Distinct parent zones probed for a wildcard per call; names under further parents use the nearest probed. */
const MAX_ZONES = 64;

export class CandidateResolver {
  readonly #dns: DnsClient;
  readonly #zones = new Map<string, Promise<WildcardProbe>>();

  constructor(dns: DnsClient) {
    this.#dns = dns;
  }

  async resolve(names: readonly string[], onEach?: (resolution: Resolution) => void): Promise<Resolution[]> {
    const all: Resolution[] = [];
    for (let i = 0; i < names.length; i += BATCH) {
      const batch = await Promise.all(names.slice(i, i + BATCH).map((name) => this.#one(name)));
      for (const resolution of batch) {
        onEach?.(resolution);
        all.push(resolution);
      }
    }
    return all;
  }

  async #one(name: string): Promise<Resolution> {
    const [probe, v6, wildcard] = await Promise.all([
      this.#dns.probe(name),
      this.#dns.aaaa(name),
      this.#wildcardOf(name),
    ]);
    const addresses = [...probe.addresses, ...(v6.ok ? v6.value : [])];
    const exists = probe.exists || v6.ok;
    if (!exists) {
      const unanswered = probe.failure === "timeout" || probe.failure === "error";
      return { name, state: unanswered ? "unanswered" : "gone", addresses: [] };
    }
    const state = answersLikeWildcard(wildcard, { addresses: probe.addresses, alias: probe.alias })
      ? "wildcard"
      : "live";
    return { name, state, addresses, alias: probe.alias };
  }

  /** The wildcard of the name's parent zone, probed once per zone. */
  #wildcardOf(name: string): Promise<WildcardProbe> {
    const parent = name.slice(name.indexOf(".") + 1);
    let probe = this.#zones.get(parent);
    if (!probe) {
      // Past the bound, the nearest probed ancestor zone's wildcard stands for it.
      if (this.#zones.size >= MAX_ZONES) {
        for (let zone = parent; zone.includes("."); zone = zone.slice(zone.indexOf(".") + 1)) {
          const known = this.#zones.get(zone);
          if (known) return known;
        }
        return Promise.resolve({ kind: "none" });
      }
      probe = probeWildcard(this.#dns, parent);
      this.#zones.set(parent, probe);
    }
    return probe;
  }
}
