/**
 * What a run may explore and touch. Scope gates recursion only: entities outside it are still
 * recorded (unscoped) but never explored. The deny/allow lists gate touching: an explicit deny always
 * wins, an explicit allow lifts the built-in deny (the lab allows 127.0.0.0/8), and the built-in deny
 * keeps a scan off link-local, cloud metadata, loopback and private addresses and shared CDN names.
 */
import ipaddr from "ipaddr.js";
import type { Seed } from "../core/seeds.ts";
import { normaliseHostname, normaliseIpAddress } from "../core/seeds.ts";
import type { EntityKind } from "./module.ts";

export const NAME_KINDS: ReadonlySet<EntityKind> = new Set(["Domain", "DnsRecord", "Nameserver"]);

/** Addresses a scan must not touch unless allowed by configuration. */
export const BUILT_IN_DENY_ADDRESSES = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "224.0.0.0/4",
  "240.0.0.0/4",
  "::1/128",
  "::/128",
  "fc00::/7",
  "fe80::/10",
  "ff00::/8",
  // Documentation and benchmarking ranges (RFC 5737, 3849, 2544): never a real target.
  "192.0.2.0/24",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "198.18.0.0/15",
  "2001:db8::/32",
  // Cloud metadata services outside the ranges above: Azure's wire server, Alibaba's metadata, AWS IPv6.
  "168.63.129.16/32",
  "100.100.100.200/32",
  "fd00:ec2::254/128",
];

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

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** A parsed list of CIDRs (bare addresses count as /32 or /128) and names. */
export class AddressList {
  readonly cidrs: Cidr[] = [];
  readonly names: string[] = [];

  constructor(entries: readonly string[]) {
    for (const raw of entries) {
      const entry = raw.trim().toLowerCase().replace(/^\*\./, "");
      if (entry === "") continue;
      if (entry.includes("/")) {
        try {
          this.cidrs.push(ipaddr.parseCIDR(entry));
          continue;
        } catch {
          throw new Error(`"${raw}" is not a CIDR block`);
        }
      }
      const ip = normaliseIpAddress(entry);
      if (ip) {
        const parsed = ipaddr.parse(ip);
        this.cidrs.push([parsed, parsed.kind() === "ipv4" ? 32 : 128]);
      } else {
        this.names.push(entry.replace(/\.$/, ""));
      }
    }
  }

  hasAddress(address: string): boolean {
    const ip = normaliseIpAddress(address);
    if (!ip) return false;
    const parsed = ipaddr.parse(ip);
    return this.cidrs.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits));
  }

  hasName(name: string): boolean {
    return this.names.some((entry) => isAtOrBelow(name, entry));
  }
}

const NAT64 = ipaddr.parseCIDR("64:ff9b::/96");

/** The IPv4 address inside a NAT64 address (RFC 6052 well-known prefix), which a gateway would reach. */
function nat64Embedded(address: string): string | undefined {
  const parsed = ipaddr.parse(address);
  if (parsed.kind() !== "ipv6" || !parsed.match(NAT64)) return undefined;
  const bytes = parsed.toByteArray();
  return bytes.slice(12).join(".");
}

/** `name` equals `parent` or lies below it. */
export function isAtOrBelow(name: string, parent: string): boolean {
  return name === parent || name.endsWith(`.${parent}`);
}

export interface ScopeLists {
  scanAllow: readonly string[];
  scanDeny: readonly string[];
}

export class Scope {
  readonly #roots: string[] = [];
  readonly #seedNames = new Map<string, EntityKind>();
  readonly #addresses = new Set<string>();
  readonly #blocks: AddressList;
  readonly #allow: AddressList;
  readonly #deny: AddressList;
  readonly #builtIn = new AddressList([...BUILT_IN_DENY_ADDRESSES, ...BUILT_IN_DENY_NAMES]);

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
    this.#allow = new AddressList(lists.scanAllow);
    this.#deny = new AddressList(lists.scanDeny);
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
   * May the scan connect to this address (or send a request naming this host)? An IPv4-mapped address
   * counts as its IPv4 address, and a NAT64 one (64:ff9b::/96) must pass as its IPv4 address too, so
   * neither spelling reaches a denied IPv4 host. A name is judged like `mayExploreName`.
   */
  mayTouch(target: string): boolean {
    const address = normaliseIpAddress(target);
    if (!address) return this.mayExploreName(target.toLowerCase().replace(/\.$/, ""));
    const embedded = nat64Embedded(address);
    return this.#mayTouchAddress(address) && (embedded === undefined || this.#mayTouchAddress(embedded));
  }

  #mayTouchAddress(address: string): boolean {
    if (this.#deny.hasAddress(address)) return false;
    if (this.#allow.hasAddress(address)) return true;
    return !this.#builtIn.hasAddress(address);
  }

  /** May the run explore this name (look it up, brute-force under it)? */
  mayExploreName(name: string): boolean {
    if (this.#deny.hasName(name)) return false;
    if (this.#allow.hasName(name)) return true;
    return !this.#builtIn.hasName(name);
  }
}
