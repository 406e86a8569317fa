/** Reading an entity's JSON details, whose fields may be absent or malformed. */

/** A details field as a list of strings (absent or malformed → []). */
export function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}

/** A details field as a string (absent → ""). */
export function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}
