/** How wire values read to a person: decimal-exponent numbers, severities, entity kinds. */
import { parseDecimalExponent } from "../../core/formats.ts";
import { SEVERITIES } from "../../core/severities.ts";

/** A decimal-exponent string ("0.443e3") or a plain number as a number; NaN for anything else. */
export function toNumber(value: unknown): number {
  if (typeof value === "number") return value;
  if (typeof value !== "string" || value === "") return Number.NaN;
  try {
    return parseDecimalExponent(value);
  } catch {
    return Number(value);
  }
}

/** Issue severity 1 (critical) … 5 (informational) as its word. */
export function severityName(value: unknown): string {
  const level = toNumber(value);
  return SEVERITIES[level - 1] ?? "unknown";
}

/** `Service::Entity::Domain` → `Domain`. */
export function kindOf(type: unknown): string {
  return typeof type === "string" ? type.replace(/^Service::Entity::/, "") : "";
}

export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count.toLocaleString("en")} ${count === 1 ? one : many}`;
}

/** A scalar as table text; arrays and objects are summarised, never dumped. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (Array.isArray(value))
    return value.every((v) => typeof v !== "object") ? value.join(", ") : plural(value.length, "item");
  if (typeof value === "object") return plural(Object.keys(value).length, "field");
  return String(value);
}

const ACRONYMS = new Set([
  "api",
  "asn",
  "cpe",
  "cve",
  "cvss",
  "cwe",
  "dmarc",
  "dns",
  "http",
  "id",
  "ip",
  "os",
  "spf",
  "tls",
  "uri",
  "url",
]);

/** A wire field name as a label: `net_country_code` → "Net country code", `asn` → "ASN". */
export function fieldLabel(key: string): string {
  const words = key.split("_").map((word) => (ACRONYMS.has(word.toLowerCase()) ? word.toUpperCase() : word));
  const label = words.join(" ");
  return label.charAt(0).toUpperCase() + label.slice(1);
}
