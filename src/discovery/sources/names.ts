/**
 * A passive source's names, made into the one spelling discovery uses: trimmed, lower case, `*.` and a
 * trailing dot stripped, IDNA (punycode, through node:url's domainToASCII), at most 253 characters of
 * labels of 1–63 letters, digits, hyphens and underscores. What cannot be made so is refused with the
 * reason, never passed on.
 */
import { domainToASCII, domainToUnicode } from "node:url";

export type NameCheck = { ok: true; name: string } | { ok: false; reason: string };

const MAX_NAME = 253;
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
/** Control characters (C0 and DEL), by code: a name holding one is refused, not cleaned. */
const hasControl = (text: string) =>
  [...text].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

export function normaliseName(raw: string): NameCheck {
  let name = raw.trim().toLowerCase();
  if (hasControl(name)) return { ok: false, reason: "control characters" };
  while (name.startsWith("*.")) name = name.slice(2);
  name = name.replace(/\.$/, "");
  if (name === "") return { ok: false, reason: "empty" };
  if (name.length > 4 * MAX_NAME) return { ok: false, reason: `longer than ${MAX_NAME} characters` };
  if (/\s/.test(name)) return { ok: false, reason: "not a host name" };
  if (!/^[\x21-\x7e]*$/.test(name)) {
    const ascii = domainToASCII(name);
    if (ascii === "") return { ok: false, reason: "not a valid internationalised name" };
    name = ascii;
  }
  if (name.length > MAX_NAME) return { ok: false, reason: `longer than ${MAX_NAME} characters` };
  const labels = name.split(".");
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label)))
    return { ok: false, reason: "not a host name" };
  for (const label of labels)
    if (label.startsWith("xn--") && !decodes(label))
      return { ok: false, reason: "punycode that does not decode" };
  return { ok: true, name };
}

/** Whether a punycode label decodes to Unicode (domainToUnicode answers "" or the label unchanged). */
function decodes(label: string): boolean {
  const unicode = domainToUnicode(label);
  return unicode !== "" && unicode !== label && domainToASCII(unicode) === label;
}

/** The host of a URL a source gives (archives, scan indexes), or undefined. */
export function hostOfUrl(raw: string): string | undefined {
  const text = raw.trim();
  try {
    const url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
    return url.hostname.replace(/^\[|\]$/g, "") || undefined;
  } catch {
    return undefined;
  }
}

/** Host names in free text (a code fragment): candidates ending in `domain`, normalised by the caller. */
export function namesInText(text: string, domain: string): string[] {
  const escaped = domain.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const pattern = new RegExp(`(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\\.)+${escaped}(?![a-z0-9-])`, "gi");
  return text.match(pattern) ?? [];
}
