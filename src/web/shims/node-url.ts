/**
 * The browser twin of the one `node:url` function src/core/seeds.ts uses, so the dashboard detects seed
 * types with the very code the API validates them with. Node's domainToASCII is the WHATWG URL host
 * parser (IDNA/punycode, IPv4 forms, percent-decoding), answering "" on failure; a URL's hostname setter
 * runs that same parser and leaves the host unchanged on failure. test/web/node-url-shim.test.ts holds
 * the two side by side.
 */
const SENTINEL = "sentinel.invalid";

export function domainToASCII(domain: string): string {
  if (domain === SENTINEL) return domain;
  const url = new URL(`http://${SENTINEL}/`);
  url.hostname = domain;
  return url.hostname === SENTINEL ? "" : url.hostname;
}
