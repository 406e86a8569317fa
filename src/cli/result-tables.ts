/**
 * Result lists as terminal tables a person reads: about six useful columns per kind, plain numbers and
 * words (443, critical) instead of the wire's "0.443e3" and "0.1e1", entity kinds without their
 * `Service::Entity::` prefix, hosts in numeric address order. `--wide` shows every short field instead.
 */
import ipaddr from "ipaddr.js";
import { readableNumbers } from "../core/formats.ts";
import { SEVERITIES } from "../core/severities.ts";

type Row = Record<string, unknown>;
type Column = [header: string, value: (row: Row) => unknown];

const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const object = (value: unknown): Row => (value && typeof value === "object" ? (value as Row) : {});
const kindOf = (type: unknown) => String(type ?? "").replace(/^Service::Entity::/, "");
/** Up to `most` values joined, and how many more there are. */
const some = (values: unknown[], most = 3) =>
  values.length <= most
    ? values.join(", ")
    : `${values.slice(0, most).join(", ")} (+${values.length - most})`;
export const severityWord = (value: unknown) =>
  typeof value === "number" && SEVERITIES[value - 1] ? SEVERITIES[value - 1] : String(value ?? "");
const yesNo = (value: unknown) => (value === true ? "yes" : value === false ? "no" : "");

/** A host name where an entity name is a URL ("https://www.example.com:443" → "www.example.com"). */
function hostOf(name: unknown): string {
  const text = String(name ?? "");
  try {
    return /^https?:\/\//.test(text) ? new URL(text).hostname : text;
  } catch {
    return text;
  }
}

/**
 * What an issue is on: its entity, or for a finding seen through several names of one service (the
 * API's `group=finding`) the service, how many names and the first of them.
 */
function issueOn(row: Row): unknown {
  const details = object(row.details);
  const count = Number(details.entity_count ?? 1);
  if (!(count > 1) || typeof details.endpoint !== "string") return row.entity_name;
  const first = object(list(details.entities)[0]).entity_name ?? row.entity_name;
  return `${details.endpoint} — ${count} names: ${hostOf(first)} (+${count - 1})`;
}

const COLUMNS: Record<string, Column[]> = {
  hosts: [
    ["ip", (row) => row.ip],
    [
      "ports",
      (row) =>
        list(row.ports)
          .map((port) => `${object(port).number}/${object(port).protocol}`)
          .join(", "),
    ],
    ["names", (row) => some(list(row.resolutions))],
    ["network", (row) => row.net_name],
    ["country", (row) => object(row.geolocation).country_code],
    ["in scope", (row) => yesNo(row.scoped)],
  ],
  applications: [
    ["application", (row) => row.name],
    ["status", (row) => object(row.details).code],
    ["title", (row) => object(row.details).title],
    ["products", (row) => some(list(object(row.details).products).map((p) => list(p).join(" ")))],
    ["address", (row) => object(row.details).ip_address],
    ["in scope", (row) => yesNo(object(row.details).scoped ?? row.scoped)],
  ],
  issues: [
    ["severity", (row) => severityWord(row.severity)],
    ["issue", (row) => row.pretty_name],
    ["on", issueOn],
    ["confidence", (row) => row.confidence],
    ["in scope", (row) => yesNo(row.scoped)],
    ["first seen", (row) => row.first_seen],
  ],
  vulnerabilities: [
    ["cve", (row) => row.cve],
    ["score", (row) => row.score],
    ["exploited", (row) => (list(row.exploits).length > 0 ? "KEV" : "")],
    ["count", (row) => row.count],
    ["affected", (row) => some(list(row.affected))],
    ["name", (row) => row.name],
  ],
  domains: [
    ["name", (row) => row.name],
    ["kind", (row) => kindOf(row.type)],
    ["addresses", (row) => some(list(row.addresses))],
    ["resolves", (row) => yesNo(row.resolves)],
    ["in scope", (row) => yesNo(row.scoped)],
    ["first seen", (row) => row.first_seen],
  ],
  recent: [
    ["name", (row) => row.name],
    ["kind", (row) => kindOf(row.type)],
    ["in scope", (row) => yesNo(row.scoped)],
    ["first seen", (row) => row.first_seen],
  ],
  netblocks: [
    ["block", (row) => row.name],
    ["network", (row) => row.net_name],
    ["asn", (row) => row.asn],
    ["organization", (row) => row.organization],
    ["hosts", (row) => list(row.hosts).length],
    ["in scope", (row) => yesNo(row.scoped)],
  ],
  connections: [
    ["third party", (row) => row.name],
    ["kinds", (row) => list(row.kinds).join(", ")],
    ["hosts", (row) => some(list(row.hosts))],
    ["count", (row) => row.count],
    ["used by", (row) => some(list(row.used_by))],
  ],
  services: [
    ["address", (row) => row.address],
    ["port", (row) => row.port],
    ["protocol", (row) => row.protocol],
    ["service", (row) => row.service],
    ["product", (row) => row.product],
    ["version", (row) => row.version],
  ],
  products: [
    ["product", (row) => row.product],
    ["count", (row) => row.count],
  ],
};

/** An address as a sortable key: IPv4 before IPv6, each by its bytes; anything else after, as text. */
function addressKey(value: unknown): string {
  const text = String(value ?? "");
  if (!ipaddr.isValid(text)) return `2${text}`;
  const bytes = ipaddr.parse(text).toByteArray();
  return `${bytes.length === 4 ? 0 : 1}${bytes.map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

const cut = (text: string, width: number) => (text.length > width ? `${text.slice(0, width - 1)}…` : text);

/** The rows of a result as a table: the kind's columns (or every short field with `wide`), in reading order. */
export function resultTable(
  kind: string,
  rows: Row[],
  wide = false,
): { columns: string[]; rows: Array<Record<string, string>> } {
  const readable = rows.map((row) => readableNumbers(row) as Row);
  if (kind === "hosts") readable.sort((a, b) => (addressKey(a.ip) < addressKey(b.ip) ? -1 : 1));
  if (kind === "services")
    readable.sort((a, b) => {
      const [x, y] = [addressKey(a.address), addressKey(b.address)];
      return x !== y ? (x < y ? -1 : 1) : Number(a.port) - Number(b.port);
    });
  const columns: Column[] =
    !wide && COLUMNS[kind]
      ? COLUMNS[kind]
      : [...new Set(readable.flatMap((row) => Object.keys(row)))].map(
          (key): Column => [key, (row) => (key === "severity" ? severityWord(row[key]) : row[key])],
        );
  const text = (value: unknown) =>
    value === null || value === undefined
      ? ""
      : typeof value === "object"
        ? JSON.stringify(value)
        : String(value);
  return {
    columns: columns.map(([header]) => header),
    rows: readable.map((row) =>
      Object.fromEntries(columns.map(([header, value]) => [header, cut(text(value(row)), wide ? 80 : 60)])),
    ),
  };
}
