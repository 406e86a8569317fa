/**
 * URLs that Sightline stores and later connects to (webhook targets, Uri seeds) are kept as parsed: the
 * WHATWG URL parser's serialisation, never the text as typed. Refused before parsing: control characters
 * (the parser silently drops tabs and line breaks, and a NUL byte breaks PostgreSQL's text columns);
 * refused after: anything but http(s), and credentials in the URL (they would be stored, echoed in
 * answers and logs, and sent to a host of the user's choosing). A fragment is never sent: it is dropped.
 *
 * Imports nothing of the project (a rule of src/core).
 */

/** C0 controls, DEL and C1 controls. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export type ParsedUrl = { ok: true; url: URL; href: string } | { ok: false; problem: string };

/** Parses an http(s) URL to store; `problem` is a sentence fragment ("it …") saying what is wrong. */
export function parseHttpUrl(text: string): ParsedUrl {
  if (CONTROL.test(text))
    return { ok: false, problem: "it contains a control character (tab, line break, NUL, …)" };
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return { ok: false, problem: "it is not an absolute URL (e.g. https://example.com/)" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    return { ok: false, problem: "only http:// and https:// URLs are allowed" };
  if (url.username || url.password)
    return { ok: false, problem: "it must not carry a user name or password (user:pass@)" };
  url.hash = "";
  return { ok: true, url, href: url.href };
}

/** Whether a text has control characters (for sentences naming the field). */
export function hasControlCharacter(text: string): boolean {
  return CONTROL.test(text);
}
