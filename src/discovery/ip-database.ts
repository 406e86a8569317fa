/**
 * Offline IP → network lookups: autonomous system, organisation, announcing block and country, from
 * the ip-location-db npm data packages (@ip-location-db/asn: RouteViews + RIR + DB-IP ASN data,
 * CC BY 4.0 with attribution; @ip-location-db/geo-whois-asn-country: CC0). Chosen because they ship
 * as plain CSV in ordinary npm packages (no licence key, no download at run time), are rebuilt from
 * public registry data, and their licences allow redistribution. Loaded lazily, once per process, into
 * sorted typed arrays searched by bisection. Special-purpose ranges (loopback, private, link-local,
 * documentation, …) are answered from RFC 6890 without the database.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import ipaddr from "ipaddr.js";
import { addressToBigInt, blockWithin } from "./addresses.ts";
import { continentOf, countryName } from "./geography.ts";

export interface NetworkInfo {
  /** The block as CIDR: the announced/registered range holding the address, or the special range. */
  netblock: string;
  /** "AS13335", or "" when unknown or special. */
  asn: string;
  organization: string;
  net_name: string;
  country_code: string;
  country: string;
  continent_code: string;
  continent: string;
}

/** RFC 6890 special-purpose blocks, most specific first. */
const SPECIAL: Array<[string, string]> = [
  ["127.0.0.0/8", "Loopback"],
  ["::1/128", "Loopback"],
  ["10.0.0.0/8", "Private network"],
  ["172.16.0.0/12", "Private network"],
  ["192.168.0.0/16", "Private network"],
  ["fc00::/7", "Private network (unique local)"],
  ["100.64.0.0/10", "Carrier-grade NAT"],
  ["169.254.0.0/16", "Link-local"],
  ["fe80::/10", "Link-local"],
  ["192.0.2.0/24", "Documentation"],
  ["198.51.100.0/24", "Documentation"],
  ["203.0.113.0/24", "Documentation"],
  ["2001:db8::/32", "Documentation"],
  ["198.18.0.0/15", "Benchmarking"],
  ["0.0.0.0/8", "This network"],
  ["224.0.0.0/4", "Multicast"],
  ["ff00::/8", "Multicast"],
  ["240.0.0.0/4", "Reserved"],
].map(([cidr, name]) => [cidr, name] as [string, string]);

const require = createRequire(import.meta.url);

interface RangeTable {
  starts: bigint[] | Uint32Array;
  ends: bigint[] | Uint32Array;
  values: string[];
}

const tables = new Map<string, RangeTable>();

/** Splits a CSV line whose last field may be quoted ("Cloudflare, Inc."). */
function fields(line: string): string[] {
  const out: string[] = [];
  let current = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '"') {
      if (quoted && line[i + 1] === '"') {
        current += '"';
        i++;
      } else quoted = !quoted;
    } else if (c === "," && !quoted) {
      out.push(current);
      current = "";
    } else current += c;
  }
  out.push(current);
  return out;
}

/** Loads "start,end,value…" rows; IPv4 files are numeric, IPv6 files textual. */
function load(file: string, v6: boolean): RangeTable {
  let table = tables.get(file);
  if (table) return table;
  const lines = readFileSync(require.resolve(file), "utf8").split("\n").filter(Boolean);
  const values: string[] = new Array(lines.length);
  // IPv4 bounds fit 32 bits (a typed array); IPv6 bounds need bigints.
  const starts: bigint[] | Uint32Array = v6 ? new Array<bigint>(lines.length) : new Uint32Array(lines.length);
  const ends: bigint[] | Uint32Array = v6 ? new Array<bigint>(lines.length) : new Uint32Array(lines.length);
  const bound = (text: string) => (v6 ? addressToBigInt(text) : Number(text));
  lines.forEach((line, i) => {
    const [start, end, ...rest] = fields(line);
    starts[i] = bound(start) as never;
    ends[i] = bound(end) as never;
    values[i] = rest.join("\u0000");
  });
  table = { starts, ends, values };
  tables.set(file, table);
  return table;
}

/** The row whose [start, end] holds `value`, by bisection. */
function find(table: RangeTable, value: bigint): { start: bigint; end: bigint; value: string } | undefined {
  const big = Array.isArray(table.starts);
  const at = (array: bigint[] | Uint32Array, i: number) =>
    big ? (array as bigint[])[i] : BigInt((array as Uint32Array)[i]);
  let low = 0;
  let high = table.starts.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (at(table.starts, mid) <= value) low = mid + 1;
    else high = mid - 1;
  }
  if (high < 0 || at(table.ends, high) < value) return undefined;
  return { start: at(table.starts, high), end: at(table.ends, high), value: table.values[high] };
}

const EMPTY_PLACE = { country_code: "", country: "", continent_code: "", continent: "" };

/** Network facts of an address; undefined when it is not an IP address. */
export function lookupNetwork(address: string): NetworkInfo | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return undefined;
  }
  const v6 = parsed.kind() === "ipv6";
  for (const [cidr, name] of SPECIAL) {
    const [range, bits] = ipaddr.parseCIDR(cidr);
    if (range.kind() === parsed.kind() && parsed.match(range, bits))
      return { netblock: cidr, asn: "", organization: "", net_name: name, ...EMPTY_PLACE };
  }
  const value = addressToBigInt(parsed.toString());
  const width = v6 ? 128 : 32;
  const asn = find(load(`@ip-location-db/asn/asn-ipv${v6 ? 6 : 4}${v6 ? "" : "-num"}.csv`, v6), value);
  const place = find(
    load(
      `@ip-location-db/geo-whois-asn-country/geo-whois-asn-country-ipv${v6 ? 6 : 4}${v6 ? "" : "-num"}.csv`,
      v6,
    ),
    value,
  );
  const [number = "", organization = ""] = asn?.value.split("\u0000") ?? [];
  const countryCode = place?.value ?? "";
  const continentCode = continentOf(countryCode);
  return {
    netblock: asn ? blockWithin(asn.start, asn.end, value, width) : `${parsed.toString()}/${width}`,
    asn: number ? `AS${number}` : "",
    organization,
    net_name: organization,
    country_code: countryCode,
    country: countryName(countryCode),
    continent_code: continentCode,
    continent: continentCode ? continentName(continentCode) : "",
  };
}

function continentName(code: string): string {
  return (
    {
      AF: "Africa",
      AN: "Antarctica",
      AS: "Asia",
      EU: "Europe",
      NA: "North America",
      OC: "Oceania",
      SA: "South America",
    }[code] ?? ""
  );
}
