/**
 * The one address policy for everything that connects out (discovery, webhook deliveries): which
 * addresses are off limits unless the operator allows them, and how an address is judged.
 *
 * An IPv6 address may carry an IPv4 address, and whatever carries it (a NAT64 gateway, a 6to4 or Teredo
 * relay, a dual stack socket) may deliver the connection to that IPv4 host. So every spelling of an IPv4
 * address inside IPv6 counts as the IPv4 address it carries, and passes only if that IPv4 address passes:
 * - IPv4-mapped        ::ffff:a.b.c.d          (RFC 4291)
 * - IPv4-compatible    ::a.b.c.d               (RFC 4291, deprecated; not :: or ::1)
 * - NAT64 well-known   64:ff9b::a.b.c.d        (RFC 6052, /96)
 * - NAT64 local-use    64:ff9b:1::/48          (RFC 8215; the operator picks the prefix length, so every
 *                                               RFC 6052 layout — /48, /56, /64, /96 — is read, and each
 *                                               IPv4 address found outside 0.0.0.0/8 must pass)
 * - 6to4               2002:AABB:CCDD::/48     (RFC 3056)
 * - Teredo             2001:0::/32             (RFC 4380: the server in bits 32–63, the client obfuscated in
 *                                               the last 32 bits; both must pass)
 *
 * Imports nothing of the project (a rule of src/core).
 */
import ipaddr from "ipaddr.js";

/** Addresses nothing may connect to unless the operator allows them. */
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

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Address, number];

const range = (cidr: string) => ipaddr.parseCIDR(cidr) as Cidr;
const MAPPED = range("::ffff:0:0/96");
const COMPATIBLE = range("::/96");
const NAT64_WELL_KNOWN = range("64:ff9b::/96");
const NAT64_LOCAL = range("64:ff9b:1::/48");
const SIX_TO_FOUR = range("2002::/16");
const TEREDO = range("2001::/32");

/** Parses an address literal (no zone id, no brackets); undefined when it is not one. */
export function parseAddress(text: string): Address | undefined {
  const trimmed = text
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, "");
  if (ipaddr.IPv4.isValidFourPartDecimal(trimmed)) return ipaddr.IPv4.parse(trimmed);
  if (trimmed.includes(":") && !trimmed.includes("%") && ipaddr.IPv6.isValid(trimmed))
    return ipaddr.IPv6.parse(trimmed);
  return undefined;
}

const v4 = (bytes: number[]) => new ipaddr.IPv4(bytes);

/** The IPv4 addresses an IPv6 address carries (see the list above); [] for anything else. */
export function carriedIPv4(address: Address): ipaddr.IPv4[] {
  if (address.kind() !== "ipv6") return [];
  const ip = address as ipaddr.IPv6;
  const b = ip.toByteArray();
  const last = b.slice(12, 16);
  if (ip.match(MAPPED) || ip.match(NAT64_WELL_KNOWN)) return [v4(last)];
  if (ip.match(COMPATIBLE)) {
    // :: and ::1 are the unspecified and loopback addresses, not IPv4-compatible ones.
    return last[0] === 0 && last[1] === 0 && last[2] === 0 && last[3] <= 1 ? [] : [v4(last)];
  }
  if (ip.match(NAT64_LOCAL)) {
    // RFC 6052 layouts: the u octet (bits 64–71) is skipped.
    const layouts = [
      [b[6], b[7], b[9], b[10]], // /48
      [b[7], b[9], b[10], b[11]], // /56
      [b[9], b[10], b[11], b[12]], // /64
      last, // /96
    ];
    // A reading in 0.0.0.0/8 is the zero padding of another layout (no gateway forwards to that block).
    return layouts.filter((octets) => octets[0] !== 0).map(v4);
  }
  if (ip.match(SIX_TO_FOUR)) return [v4(b.slice(2, 6))];
  if (ip.match(TEREDO)) return [v4(b.slice(4, 8)), v4(last.map((octet) => octet ^ 0xff))];
  return [];
}

/** The canonical text of an address: IPv4 dotted, IPv6 compressed (RFC 5952), IPv4-mapped as IPv4. */
export function canonicalAddress(address: Address): string {
  if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress())
    return (address as ipaddr.IPv6).toIPv4Address().toString();
  return address.toString();
}

/** A parsed list of CIDRs (bare addresses count as /32 or /128) and names (with what lies below them). */
export class AddressList {
  readonly cidrs: Cidr[] = [];
  readonly names: string[] = [];

  constructor(entries: readonly string[]) {
    for (const raw of entries) {
      const entry = raw.trim().toLowerCase().replace(/^\*\./, "");
      if (entry === "") continue;
      if (entry.includes("/")) {
        try {
          this.cidrs.push(range(entry));
          continue;
        } catch {
          throw new Error(`"${raw}" is not a CIDR block`);
        }
      }
      const address = parseAddress(entry);
      if (address) {
        const plain = parseAddress(canonicalAddress(address)) as Address;
        this.cidrs.push([plain, plain.kind() === "ipv4" ? 32 : 128]);
      } else this.names.push(entry.replace(/\.$/, ""));
    }
  }

  hasAddress(text: string | Address): boolean {
    const parsed = typeof text === "string" ? parseAddress(text) : text;
    if (!parsed) return false;
    const address = parseAddress(canonicalAddress(parsed)) as Address;
    return this.cidrs.some(([block, bits]) => block.kind() === address.kind() && address.match(block, bits));
  }

  hasName(name: string): boolean {
    const lower = name.toLowerCase().replace(/\.$/, "");
    return this.names.some((entry) => lower === entry || lower.endsWith(`.${entry}`));
  }
}

/**
 * Deny always wins; allow lifts the built-in deny; the built-in list denies the rest of what it names.
 * An address passes only if it and every IPv4 address it carries pass.
 */
export class AddressPolicy {
  readonly #builtIn: AddressList;
  readonly #allow: AddressList;
  readonly #deny: AddressList;

  constructor(options: { allow?: readonly string[]; deny?: readonly string[]; builtIn?: readonly string[] }) {
    this.#builtIn = new AddressList(options.builtIn ?? BUILT_IN_DENY_ADDRESSES);
    this.#allow = new AddressList(options.allow ?? []);
    this.#deny = new AddressList(options.deny ?? []);
  }

  /** May something connect to this address literal? A text that is not an address answers false. */
  allowsAddress(text: string): boolean {
    const address = parseAddress(text);
    if (!address) return false;
    return [address, ...carriedIPv4(address)].every((candidate) => this.#passes(candidate));
  }

  /** May a name be looked up or named in a request? Only the lists' names count (addresses are checked once resolved). */
  allowsName(name: string): boolean {
    if (this.#deny.hasName(name)) return false;
    if (this.#allow.hasName(name)) return true;
    return !this.#builtIn.hasName(name);
  }

  #passes(address: Address): boolean {
    if (this.#deny.hasAddress(address)) return false;
    if (this.#allow.hasAddress(address)) return true;
    return !this.#builtIn.hasAddress(address);
  }
}
