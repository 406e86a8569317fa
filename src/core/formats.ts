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

/** ISO-8601 UTC as the store keeps it (`Date.toISOString`), with the parts a timestamp shows. */
const ISO_UTC = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?Z$/;

/** Whether the parts name a real calendar time (Date rolls others over: Feb 30 is Mar 2). */
function calendarTime(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
) {
  const days =
    month === 2
      ? year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
        ? 29
        : 28
      : month === 4 || month === 6 || month === 9 || month === 11
        ? 30
        : 31;
  return month >= 1 && month <= 12 && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59;
}

/** `YYYY-MM-DD HH:MM:SS UTC` from a Date or an ISO-8601 string. */
export function formatTimestamp(value: Date | string): string {
  if (typeof value === "string") {
    // The store's own text is cut rather than parsed into a Date: results format two per item.
    const parts = ISO_UTC.exec(value);
    if (parts && calendarTime(+parts[1], +parts[2], +parts[3], +parts[4], +parts[5], +parts[6]))
      return `${parts[1]}-${parts[2]}-${parts[3]} ${parts[4]}:${parts[5]}:${parts[6]} UTC`;
  }
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

/**
 * The fields the spec delivers as decimal-exponent strings. People read them as plain numbers: tables,
 * CSV and the dashboard show 443, not "0.443e3" (the JSON wire format keeps the spec's).
 */
export const DECIMAL_EXPONENT_FIELDS: ReadonlySet<string> = new Set([
  "alias_group",
  "alias_group_id",
  "depth",
  "port",
  "number",
  "host_id",
  "severity",
]);

/**
 * A value with the decimal-exponent strings of DECIMAL_EXPONENT_FIELDS turned into numbers, at any depth
 * (`ports[].number`, `task_results[].depth`, `details.severity`); everything else as it is.
 */
export function readableNumbers(value: unknown, key?: string): unknown {
  if (typeof value === "string")
    return key !== undefined && DECIMAL_EXPONENT_FIELDS.has(key) && DECIMAL_EXPONENT.test(value)
      ? parseDecimalExponent(value)
      : value;
  if (Array.isArray(value)) return value.map((item) => readableNumbers(item, key));
  if (value && typeof value === "object")
    return Object.fromEntries(
      Object.entries(value).map(([name, item]) => [name, readableNumbers(item, name)]),
    );
  return value;
}
