/**
 * Seed validation and normalisation. A seed is a typed name; every type has one canonical spelling so
 * that the same seed written twice is stored once.
 */
import { domainToASCII } from "node:url";
import ipaddr from "ipaddr.js";
import { hasControlCharacter, parseHttpUrl } from "./urls.ts";

export const SEED_TYPES = ["Domain", "DnsRecord", "IpAddress", "Nameserver", "NetBlock", "Uri"] as const;
export type SeedType = (typeof SEED_TYPES)[number];

export interface Seed {
  type: SeedType;
  name: string;
}

/** The outcome of checking one seed: its canonical form, or a sentence saying what is wrong. */
export type SeedCheck = { ok: true; seed: Seed } | { ok: false; message: string };

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

function trimName(raw: string): string {
  return raw.trim().toLowerCase().replace(/\.$/, "");
}

/** Canonical host name (punycode, lower case, no trailing dot), or undefined if it is not one. */
export function normaliseHostname(raw: string): string | undefined {
  const trimmed = trimName(raw);
  if (trimmed === "" || /\s/.test(trimmed)) return undefined;
  const ascii = trimmed.includes("_") ? trimmed : domainToASCII(trimmed);
  if (!ascii || ascii.length > 253) return undefined;
  const labels = ascii.split(".");
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label))) return undefined;
  if (/^\d+$/.test(labels[labels.length - 1])) return undefined; // an IP address, not a name
  return ascii;
}

/** Canonical IP address (IPv4 dotted quad, IPv6 compressed), or undefined if it is not one. */
export function normaliseIpAddress(raw: string): string | undefined {
  const trimmed = raw.trim().toLowerCase();
  // A zone id (fe80::1%eth0) names an interface of one machine, not an address of the surface.
  if (trimmed.includes("%")) return undefined;
  if (ipaddr.IPv4.isValidFourPartDecimal(trimmed)) return ipaddr.IPv4.parse(trimmed).toString();
  if (ipaddr.IPv6.isValid(trimmed) && trimmed.includes(":")) {
    const address = ipaddr.IPv6.parse(trimmed);
    return address.isIPv4MappedAddress() ? address.toIPv4Address().toString() : address.toString();
  }
  return undefined;
}

/** Canonical CIDR block with its host bits cleared ("10.0.0.5/24" → "10.0.0.0/24"), or undefined. */
export function normaliseNetBlock(raw: string): string | undefined {
  const [address, prefix, ...rest] = raw.trim().toLowerCase().split("/");
  if (rest.length > 0 || prefix === undefined || !/^\d{1,3}$/.test(prefix)) return undefined;
  const ip = normaliseIpAddress(address);
  if (!ip) return undefined;
  const length = Number(prefix);
  const parsed = ipaddr.parse(ip);
  if (length > (parsed.kind() === "ipv4" ? 32 : 128)) return undefined;
  const network = ipaddr.parseCIDR(`${ip}/${length}`);
  const base =
    parsed.kind() === "ipv4"
      ? ipaddr.IPv4.networkAddressFromCIDR(`${ip}/${length}`)
      : ipaddr.IPv6.networkAddressFromCIDR(`${ip}/${length}`);
  return `${base.toString()}/${network[1]}`;
}

function normaliseUri(raw: string): string | undefined {
  const parsed = parseHttpUrl(raw);
  if (!parsed.ok) return undefined;
  const url = parsed.url;
  const host = url.hostname.startsWith("[") ? url.hostname : url.hostname.replace(/\.$/, "");
  if (!host.startsWith("[") && !normaliseHostname(host) && !normaliseIpAddress(host)) return undefined;
  url.hostname = host;
  return url.toString();
}

/** What is wrong with a value, when a specific sentence says more than "expected …". */
function specificProblem(type: SeedType, raw: string): string | undefined {
  if (hasControlCharacter(raw)) return "it contains a control character (tab, line break, NUL, …)";
  if (type === "Uri") {
    const parsed = parseHttpUrl(raw);
    if (!parsed.ok) return parsed.problem;
  }
  if ((type === "IpAddress" || type === "NetBlock") && raw.includes("%"))
    return "a zone id (as in fe80::1%eth0) names an interface of one machine; give the address alone";
  return undefined;
}

const NORMALISERS: Record<SeedType, { normalise: (raw: string) => string | undefined; expected: string }> = {
  Domain: { normalise: normaliseHostname, expected: "a domain name such as example.com" },
  DnsRecord: { normalise: normaliseHostname, expected: "a DNS name such as www.example.com" },
  Nameserver: { normalise: normaliseHostname, expected: "a name server host name such as ns1.example.com" },
  IpAddress: { normalise: normaliseIpAddress, expected: "an IPv4 or IPv6 address such as 192.0.2.10" },
  NetBlock: { normalise: normaliseNetBlock, expected: "a CIDR block such as 192.0.2.0/24" },
  Uri: { normalise: normaliseUri, expected: "an http or https URL such as https://www.example.com/" },
};

export function isSeedType(value: unknown): value is SeedType {
  return typeof value === "string" && (SEED_TYPES as readonly string[]).includes(value);
}

/** Checks one seed as it arrived over the wire. */
export function checkSeed(input: unknown): SeedCheck {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return { ok: false, message: 'must be an object with "type" and "name"' };
  }
  const { type, name } = input as Record<string, unknown>;
  if (!isSeedType(type)) {
    return {
      ok: false,
      message: `has unknown type ${JSON.stringify(type ?? null)}; allowed types are ${SEED_TYPES.join(", ")}`,
    };
  }
  if (typeof name !== "string" || name.trim() === "") {
    return { ok: false, message: 'needs a non-empty string "name"' };
  }
  const rule = NORMALISERS[type];
  const problem = name.length <= 2048 ? specificProblem(type, name) : undefined;
  if (problem) return { ok: false, message: `${JSON.stringify(name)} is not a valid ${type}: ${problem}` };
  const canonical = name.length <= 2048 ? rule.normalise(name) : undefined;
  if (canonical === undefined) {
    const hint = seedHint(name);
    return {
      ok: false,
      message: `${JSON.stringify(name)} is not a valid ${type}: ${hint ?? `expected ${rule.expected}`}`,
    };
  }
  return { ok: true, seed: { type, name: canonical } };
}

/**
 * What a person most likely meant by a value no seed type takes, in words: an IPv4 address with an
 * octet over 255, a wildcard name (discovery finds the names under a domain by itself).
 */
export function seedHint(raw: string): string | undefined {
  const value = raw.trim();
  const octets = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(\/\d{1,2})?$/.exec(value);
  if (octets) {
    const over = octets.slice(1, 5).filter((octet) => Number(octet) > 255);
    if (over.length > 0)
      return `it looks like an IPv4 address, but ${over.join(" and ")} ${over.length === 1 ? "is" : "are"} over 255 (each part is 0–255)`;
  }
  if (value.startsWith("*.") && normaliseHostname(value.slice(2)))
    return `wildcards are not seeds: drop the "*." and seed ${normaliseHostname(value.slice(2))}; discovery finds the names under it`;
  return undefined;
}

/** Removes repeated seeds, keeping the first of each (type, name). */
export function uniqueSeeds(seeds: Seed[]): Seed[] {
  const seen = new Set<string>();
  return seeds.filter((seed) => {
    const key = `${seed.type}\u0000${seed.name}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Guesses the type of a bare value (for bulk paste in the dashboard and the CLI). */
export function detectSeedType(raw: string): SeedType | undefined {
  const value = raw.trim();
  if (normaliseIpAddress(value)) return "IpAddress";
  if (normaliseNetBlock(value)) return "NetBlock";
  if (/^https?:\/\//i.test(value)) return normaliseUri(value) ? "Uri" : undefined;
  const host = normaliseHostname(value);
  if (!host) return undefined;
  return host.split(".").length === 2 ? "Domain" : "DnsRecord";
}

/** One line of seed text as a person writes it: its value, and its type when named or detectable. */
export interface SeedText {
  value: string;
  /** Named on the line, or detected from the value; undefined when neither says. */
  type: SeedType | undefined;
  /** The line named its type ("Nameserver ns1.example.com") instead of leaving it to detection. */
  explicit: boolean;
}

// A type named first, then a separator: "Domain example.com", "Domain:example.com", "Domain,example.com" (CSV).
const TYPED_LINE = new RegExp(`^(${SEED_TYPES.join("|")})\\s*[,;:\\t ]\\s*(\\S.*)$`, "i");
const CSV_HEADER = /^"?type"?\s*[,;\t]\s*"?(name|value)"?$/i;

/**
 * Reads one line of seed text (the dashboard's bulk list, the CLI's `--seed` and `--seeds-file`): a type
 * named first (any case, separated by a space, tab, `:`, `,` or `;`) or a bare value whose type is
 * detected. Undefined for lines that hold no seed: blank, `#` comments and a `type,name` CSV header.
 */
export function parseSeedText(line: string): SeedText | undefined {
  const trimmed = line.trim();
  if (trimmed === "" || trimmed.startsWith("#") || CSV_HEADER.test(trimmed)) return undefined;
  const typed = TYPED_LINE.exec(trimmed);
  const value = (typed ? typed[2] : trimmed).trim().replace(/^"(.*)"$/, "$1");
  if (!typed) return { value, type: detectSeedType(value), explicit: false };
  return {
    value,
    type: SEED_TYPES.find((type) => type.toLowerCase() === typed[1].toLowerCase()),
    explicit: true,
  };
}
