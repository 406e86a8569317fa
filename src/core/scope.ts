/**
 * What a run may explore and touch. Scope gates recursion only: entities outside it are still
 * recorded (unscoped) but never explored. The deny/allow lists gate touching: an explicit deny always
 * wins, an explicit allow lifts the built-in deny (the lab allows 127.0.0.0/8), and the built-in deny
 * keeps a scan off link-local, cloud metadata, loopback and private addresses and shared CDN names.
 */
import { AddressList, AddressPolicy, BUILT_IN_DENY_ADDRESSES } from "./address-policy.ts";
import { setBounded } from "./bounded-map.ts";
import type { EntityKind } from "./entities.ts";
import type { Seed } from "./seeds.ts";
import { normaliseHostname, normaliseIpAddress } from "./seeds.ts";

export const NAME_KINDS: ReadonlySet<EntityKind> = new Set(["Domain", "DnsRecord", "Nameserver"]);

/** Names (and what lies under them) never explored unless allowed: metadata and shared CDN/hosting names. */
export const BUILT_IN_DENY_NAMES = [
  "metadata.google.internal",
  "cloudfront.net",
  "akamai.net",
  "akamaiedge.net",
  "akamaized.net",
  "edgekey.net",
  "edgesuite.net",
  "fastly.net",
  "fastlylb.net",
  "azureedge.net",
  "cloudflare.net",
  "googleusercontent.com",
];

/** `name` equals `parent` or lies below it. */
export function isAtOrBelow(name: string, parent: string): boolean {
  return name === parent || name.endsWith(`.${parent}`);
}

export interface ScopeLists {
  scanAllow: readonly string[];
  scanDeny: readonly string[];
}

/** Targets whose `mayTouch` answer a scope keeps (the most recent). */
const TOUCHABLE_KEPT = 4096;

export class Scope {
  readonly #roots: string[] = [];
  readonly #seedNames = new Map<string, EntityKind>();
  readonly #addresses = new Set<string>();
  readonly #blocks: AddressList;
  readonly #policy: AddressPolicy;
  /**
   * Answers of `mayTouch`, which every connection and request asks (a template run asks it for each of
   * its requests): the lists never change during a run, and parsing the address each time was 2% of the
   * discovery thread's time.
   */
  readonly #touchable = new Map<string, boolean>();

  constructor(seeds: readonly Seed[], lists: ScopeLists) {
    const blocks: string[] = [];
    for (const seed of seeds) {
      if (seed.type === "IpAddress") this.#addresses.add(seed.name);
      else if (seed.type === "NetBlock") blocks.push(seed.name);
      else if (seed.type === "Uri") {
        const host = new URL(seed.name).hostname.replace(/^\[|\]$/g, "");
        const ip = normaliseIpAddress(host);
        if (ip) this.#addresses.add(ip);
        else this.#roots.push(normaliseHostname(host) ?? host);
      } else {
        this.#roots.push(seed.name);
        this.#seedNames.set(seed.name, seed.type);
      }
    }
    this.#blocks = new AddressList(blocks);
    this.#policy = new AddressPolicy({
      allow: lists.scanAllow,
      deny: lists.scanDeny,
      builtIn: [...BUILT_IN_DENY_ADDRESSES, ...BUILT_IN_DENY_NAMES],
    });
  }

  /** The kind a seed gave this name (a seed Domain stays a Domain wherever it is found again). */
  seedKindOf(name: string): EntityKind | undefined {
    return this.#seedNames.get(name);
  }

  /** A name at or under a seed name. */
  coversName(name: string): boolean {
    return this.#roots.some((root) => isAtOrBelow(name, root));
  }

  /** A seed address or an address in a seed block. */
  coversAddress(address: string): boolean {
    return this.#addresses.has(address) || this.#blocks.hasAddress(address);
  }

  /**
   * May the scan connect to this address (or send a request naming this host)? Judged by the address
   * policy (src/core/address-policy.ts): every IPv6 spelling of an IPv4 address (mapped, compatible,
   * NAT64, 6to4, Teredo) must pass as the IPv4 address it carries. A name is judged like `mayExploreName`.
   */
  mayTouch(target: string): boolean {
    let answer = this.#touchable.get(target);
    if (answer === undefined) {
      const address = normaliseIpAddress(target);
      answer = address
        ? this.#policy.allowsAddress(address)
        : this.mayExploreName(target.toLowerCase().replace(/\.$/, ""));
      setBounded(this.#touchable, target, answer, TOUCHABLE_KEPT);
    }
    return answer;
  }

  /** May the run explore this name (look it up, brute-force under it)? */
  mayExploreName(name: string): boolean {
    return this.#policy.allowsName(name);
  }
}
