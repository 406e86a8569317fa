/**
 * Offline IP → network lookups: autonomous system, organisation, announcing block and country.
 *
 * Preferred: MMDB files (the MaxMind DB format) read with mmdb-lib — GeoLite2-ASN/Country/City, DB-IP's
 * lite ASN/country/city, ipinfo's lite, ip-location-db's builds — given by SIGHTLINE_IP_DATABASE or
 * installed into the data directory by `sightline ipdb update --from <file>`. An MMDB lookup walks a
 * binary tree in the file's bytes: the first costs the file's read (milliseconds), memory is the file.
 *
 * Without one, the bundled ip-location-db CSV packages answer (@ip-location-db/asn: RouteViews + RIR +
 * DB-IP ASN data, CC BY 4.0 with attribution; @ip-location-db/geo-whois-asn-country: CC0), parsed once
 * per process into sorted typed arrays searched by bisection. Their npm updates have stopped, and no
 * maintained database with a licence that allows shipping it exists on npm (docs/decisions.md).
 *
 * Special-purpose ranges (loopback, private, link-local, documentation, …) are answered from RFC 6890
 * without a database.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import ipaddr from "ipaddr.js";
import { Reader } from "mmdb-lib";
import { addressToBigInt, blockWithin } from "../core/addresses.ts";
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

/** The special blocks parsed once: a lookup compares, it does not parse 18 CIDRs. */
const SPECIAL_RANGES = SPECIAL.map(([cidr, name]) => ({ cidr, name, range: ipaddr.parseCIDR(cidr) }));

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
  for (const { cidr, name, range } of SPECIAL_RANGES) {
    if (range[0].kind() === parsed.kind() && parsed.match(range))
      return { netblock: cidr, asn: "", organization: "", net_name: name, ...EMPTY_PLACE };
  }
  const databases = mmdbDatabases();
  if (databases.length === 0) return bundledLookup(parsed);
  const found = mmdbLookup(databases, parsed);
  // Field by field: what no installed file provides (a country-only file has no AS, owner or block)
  // comes from the bundled data, never left empty.
  const hasAsn = databases.some((database) => database.content !== "country");
  const hasCountry = databases.some((database) => database.content !== "asn");
  if (hasAsn && hasCountry) return found;
  const bundled = bundledLookup(parsed);
  return hasAsn ? { ...found, ...placeOf(bundled) } : { ...bundled, ...(hasCountry ? placeOf(found) : {}) };
}

const placeOf = (info: NetworkInfo) => ({
  country_code: info.country_code,
  country: info.country,
  continent_code: info.continent_code,
  continent: info.continent,
});

function bundledLookup(parsed: ipaddr.IPv4 | ipaddr.IPv6): NetworkInfo {
  const v6 = parsed.kind() === "ipv6";
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
  return networkInfo(
    asn ? blockWithin(asn.start, asn.end, value, width) : `${parsed.toString()}/${width}`,
    number ? `AS${number}` : "",
    organization,
    place?.value ?? "",
  );
}

function networkInfo(netblock: string, asn: string, organization: string, countryCode: string): NetworkInfo {
  const code = countryCode.toUpperCase();
  const continentCode = continentOf(code);
  return {
    netblock,
    asn,
    organization,
    net_name: organization,
    country_code: code,
    country: countryName(code),
    continent_code: continentCode,
    continent: continentCode ? continentName(continentCode) : "",
  };
}

// --- MMDB -------------------------------------------------------------------------------------------

/** What an MMDB file answers: an address's AS, its country, or both. */
export type MmdbContent = "asn" | "country" | "asn+country";

export interface MmdbDatabase {
  file: string;
  /** The database itself (unpacked when the file was gzipped). */
  bytes: Buffer;
  reader: Reader<Record<string, unknown>>;
  content: MmdbContent;
  /** The file's own name for itself ("GeoLite2-ASN", "DBIP-Country-Lite", …). */
  type: string;
  built: Date;
  /** Its description (where DB-IP and MaxMind put their licence and attribution). */
  description: string;
}

type MmdbRecord = Record<string, unknown>;

/** The AS of a record in any of the known layouts: GeoLite2/DB-IP/ip-location-db, or ipinfo's. */
function asnOf(record: MmdbRecord): { asn: string; organization: string } | undefined {
  const number = record.autonomous_system_number;
  if (typeof number === "number" && number > 0)
    return { asn: `AS${number}`, organization: String(record.autonomous_system_organization ?? "") };
  if (typeof record.asn === "string" && /^AS\d+$/i.test(record.asn))
    return { asn: record.asn.toUpperCase(), organization: String(record.as_name ?? "") };
  return undefined;
}

/** The ISO country of a record: `country.iso_code` (GeoLite2, DB-IP) or `country_code` (ip-location-db, ipinfo). */
function countryOf(record: MmdbRecord): string | undefined {
  const country = record.country as { iso_code?: unknown } | undefined;
  if (typeof country?.iso_code === "string") return country.iso_code;
  if (typeof record.country_code === "string") return record.country_code;
  const registered = record.registered_country as { iso_code?: unknown } | undefined;
  return typeof registered?.iso_code === "string" ? registered.iso_code : undefined;
}

/** What a file holds, from its type name, else from the records of a few well-known addresses. */
function contentOf(reader: Reader<MmdbRecord>, type: string): MmdbContent | undefined {
  const name = type.toLowerCase();
  const probes = ["8.8.8.8", "1.1.1.1", "9.9.9.9", "2001:4860:4860::8888", "81.2.69.142", "1.0.0.1"];
  const records = probes.flatMap((probe) => {
    try {
      const record = reader.get(probe);
      return record ? [record] : [];
    } catch {
      return [];
    }
  });
  const hasAsn = name.includes("asn") || records.some((record) => asnOf(record));
  const hasCountry =
    name.includes("country") || name.includes("city") || records.some((record) => countryOf(record));
  if (hasAsn && hasCountry) return "asn+country";
  if (hasAsn) return "asn";
  if (hasCountry) return "country";
  return undefined;
}

/** Opens and checks an MMDB file; a sentence saying why when it is not one this can use. */
export function openMmdb(file: string): MmdbDatabase {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new Error(
      `Cannot read the IP database ${file}: ${(error as NodeJS.ErrnoException).code ?? error}.`,
    );
  }
  // A gzipped database (as GeoLite2 and DB-IP serve them) is read unpacked, up to 1 GiB.
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      bytes = gunzipSync(bytes, { maxOutputLength: 1024 * 1024 * 1024 });
    } catch (error) {
      throw new Error(`${file} is gzipped but does not unpack: ${(error as Error).message}.`);
    }
  }
  let reader: Reader<MmdbRecord>;
  try {
    reader = new Reader<MmdbRecord>(bytes);
  } catch {
    throw new Error(
      `${file} is not an MMDB file (MaxMind DB format): use a .mmdb database such as GeoLite2-ASN, GeoLite2-Country, DB-IP's IP to ASN Lite or IP to Country Lite.`,
    );
  }
  const { metadata } = reader;
  const content = contentOf(reader, metadata.databaseType);
  if (!content)
    throw new Error(
      `${file} (${metadata.databaseType}) holds neither autonomous systems nor countries: use an ASN or a country database.`,
    );
  return {
    file,
    bytes,
    reader,
    content,
    type: metadata.databaseType,
    built: metadata.buildEpoch,
    description: Object.values(metadata.description ?? {})[0] ?? "",
  };
}

let configured: string[] | undefined;
let opened: MmdbDatabase[] | undefined;

/** The folder `sightline ipdb update` installs databases into. */
export const installedDatabaseFolder = (dataDir: string) => join(dataDir, "ipdb");

/**
 * The MMDB files this process uses: SIGHTLINE_IP_DATABASE's, else those installed under the data
 * directory, else none (the bundled data answers). Opened at the first lookup.
 */
export function useIpDatabases(settings: { ipDatabase: string[]; dataDir: string }): void {
  const folder = installedDatabaseFolder(settings.dataDir);
  configured =
    settings.ipDatabase.length > 0
      ? settings.ipDatabase
      : existsSync(folder)
        ? readdirSync(folder)
            .filter((name) => name.endsWith(".mmdb"))
            .sort()
            .map((name) => join(folder, name))
        : [];
  opened = undefined;
}

/** The MMDB databases in use (opened on first use); [] when the bundled data answers. */
export function mmdbDatabases(): MmdbDatabase[] {
  opened ??= (configured ?? []).map(openMmdb);
  return opened;
}

function mmdbLookup(databases: MmdbDatabase[], parsed: ipaddr.IPv4 | ipaddr.IPv6): NetworkInfo {
  const text = parsed.toString();
  const width = parsed.kind() === "ipv6" ? 128 : 32;
  let asn: { asn: string; organization: string } | undefined;
  let netblock: string | undefined;
  let country: string | undefined;
  for (const database of databases) {
    const [record, prefix] = database.reader.getWithPrefixLength(text);
    if (!record) continue;
    const found = database.content !== "country" ? asnOf(record) : undefined;
    if (found && !asn) {
      asn = found;
      netblock = networkOf(parsed, prefix);
    }
    if (database.content !== "asn" && country === undefined) country = countryOf(record);
  }
  return networkInfo(netblock ?? `${text}/${width}`, asn?.asn ?? "", asn?.organization ?? "", country ?? "");
}

/** The CIDR of the network of `prefix` bits holding the address. */
function networkOf(parsed: ipaddr.IPv4 | ipaddr.IPv6, prefix: number): string {
  const cidr = `${parsed.toString()}/${prefix}`;
  const network =
    parsed.kind() === "ipv6"
      ? ipaddr.IPv6.networkAddressFromCIDR(cidr)
      : ipaddr.IPv4.networkAddressFromCIDR(cidr);
  return `${network.toString()}/${prefix}`;
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
