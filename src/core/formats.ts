/**
 * The wire formats of the spec, each defined once: decimal-exponent numbers and UTC timestamps.
 */

/**
 * Formats a number in the normalised decimal-exponent form `0.<significant digits>e<exponent>`:
 * 443 → "0.443e3", 1 → "0.1e1", 0 → "0.0", -5 → "-0.5e1", 0.05 → "0.5e-1".
 */
export function formatDecimalExponent(value: number): string {
  if (!Number.isFinite(value)) throw new RangeError(`cannot format ${value} as a decimal-exponent number`);
  if (value === 0) return "0.0";
  const sign = value < 0 ? "-" : "";
  // toExponential gives "d.ddde±x" with the shortest digits that round-trip.
  const [mantissa, exponent] = Math.abs(value).toExponential().split("e");
  const digits = mantissa.replace(".", "").replace(/0+$/, "");
  return `${sign}0.${digits}e${Number(exponent) + 1}`;
}

const DECIMAL_EXPONENT = /^-?0\.(?:0|[1-9](?:\d*[1-9])?e-?\d+)$/;

/** Parses what formatDecimalExponent writes; throws on anything else. */
export function parseDecimalExponent(text: string): number {
  if (!DECIMAL_EXPONENT.test(text)) throw new SyntaxError(`"${text}" is not a decimal-exponent number`);
  return text === "0.0" || text === "-0.0" ? 0 : Number(text);
}

/** `YYYY-MM-DD HH:MM:SS UTC` from a Date or an ISO-8601 string. */
export function formatTimestamp(value: Date | string): string {
  const date = typeof value === "string" ? new Date(value) : value;
  if (Number.isNaN(date.getTime())) throw new RangeError(`cannot format "${String(value)}" as a timestamp`);
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** formatTimestamp, or null for a time that has not happened (a run not yet finished). */
export function formatTimestampOrNull(value: Date | string | null): string | null {
  return value === null ? null : formatTimestamp(value);
}

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}) UTC$/;

/** Parses `YYYY-MM-DD HH:MM:SS UTC` into a Date. */
export function parseTimestamp(text: string): Date {
  const match = TIMESTAMP.exec(text);
  const date = match ? new Date(`${match[1]}T${match[2]}Z`) : new Date(Number.NaN);
  if (Number.isNaN(date.getTime()))
    throw new SyntaxError(`"${text}" is not a "YYYY-MM-DD HH:MM:SS UTC" timestamp`);
  return date;
}

/** The current time as the ISO-8601 text the store keeps (sortable as text on both dialects). */
export function nowIso(): string {
  return new Date().toISOString();
}

/** Entity type names of the spec: `Service::Entity::<Kind>`. */
export function entityTypeName(kind: string): string {
  return `Service::Entity::${kind}`;
}
