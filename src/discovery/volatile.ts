/**
 * What a server says differently on every visit, taken out of what discovery keeps. Results are kept as
 * versions (a run that sees an entity as the previous run did only extends its span), so a value that
 * changes per response — the Date header, a fresh session cookie, a request id, a CSP nonce, a banner's
 * clock — would make a new version of an unchanged application or service on every run. Such values are
 * shown as "…" (VARIES): the header, cookie or banner is still there with what it says about the
 * application, and an unchanged site reads the same in every run. See docs/decisions.md, "Volatile values".
 */

/** What a value that changes with every response is shown as. */
export const VARIES = "…";

/** Headers whose value is new on every response: the clock, cache state, request and trace ids, timings. */
const VOLATILE_HEADERS = new Set([
  "date",
  "age",
  "cf-ray",
  "cf-cache-status",
  "fly-request-id",
  "server-timing",
  "traceparent",
  "tracestate",
  "x-amz-apigw-id",
  "x-amz-cf-id",
  "x-amz-cf-pop",
  "x-amz-id-2",
  "x-azure-ref",
  "x-cache",
  "x-cache-hits",
  "x-cloud-trace-context",
  "x-csrf-token",
  "x-debug-token",
  "x-debug-token-link",
  "x-envoy-upstream-service-time",
  "x-iinfo",
  "x-msedge-ref",
  "x-proxy-cache",
  "x-response-time",
  "x-runtime",
  "x-served-by",
  "x-timer",
  "x-varnish",
  "x-vercel-cache",
  "x-vercel-id",
  "x-xsrf-token",
]);

/** …and by name pattern: "x-request-id", "x-amzn-requestid", "x-b3-traceid", "x-correlation-id", … */
const VOLATILE_HEADER_NAME = /(^|-)(request|trace|span|parentspan|correlation)-?id$/;

/** Headers holding an HTTP date that is volatile when the server made it from its clock (now or later). */
const CLOCK_DATE_HEADERS = new Set(["expires", "last-modified"]);

/** How far before the response's own Date a clock-made date may lie (the page took a moment to build). */
const CLOCK_SLACK_MS = 60_000;

/**
 * A Set-Cookie line with its value shown as VARIES: names and attributes (Path, Domain, Secure, HttpOnly,
 * SameSite, Max-Age) are what a reader needs; values are mostly session ids issued to the scanner, new on
 * every visit. An Expires attribute made from the clock varies too.
 */
export function stableSetCookie(line: string, now: number): string {
  const [pair = "", ...attributes] = line.split(";");
  const equals = pair.indexOf("=");
  const name = equals >= 0 ? pair.slice(0, equals) : pair;
  const stable = attributes.map((attribute) => {
    const [key = "", ...value] = attribute.split("=");
    return key.trim().toLowerCase() === "expires" && madeFromClock(value.join("="), now)
      ? `${key}=${VARIES}`
      : attribute;
  });
  return [`${name}=${VARIES}`, ...stable].join(";");
}

/** A nonce in a Content-Security-Policy: 'nonce-3q2+7w==' → 'nonce-…'. */
const CSP_NONCE = /'nonce-[^']*'/g;

/**
 * Response headers as the spec's "<name>: <value>" lines, volatile values shown as VARIES. `bodyVaries`
 * (the page carries per-response tokens, see `stableBody`) makes its ETag and Content-Length vary too.
 */
export function stableHeaders(
  headers: ReadonlyArray<readonly [string, string]>,
  bodyVaries = false,
): string[] {
  const now = responseTime(headers);
  return headers.map(([name, value]) => `${name}: ${stableHeaderValue(name, value, now, bodyVaries)}`);
}

function stableHeaderValue(name: string, value: string, now: number, bodyVaries: boolean): string {
  if (VOLATILE_HEADERS.has(name) || VOLATILE_HEADER_NAME.test(name)) return VARIES;
  if (name === "set-cookie") return stableSetCookie(value, now);
  if (CLOCK_DATE_HEADERS.has(name) && madeFromClock(value, now)) return VARIES;
  if (name === "content-security-policy" || name === "content-security-policy-report-only")
    return value.replace(CSP_NONCE, `'nonce-${VARIES}'`);
  if (bodyVaries && (name === "etag" || name === "content-length")) return VARIES;
  return value;
}

/** When the server answered: its Date header, else our clock. */
export function responseTime(headers: ReadonlyArray<readonly [string, string]>): number {
  const date = Date.parse(headers.find(([name]) => name === "date")?.[1] ?? "");
  return Number.isNaN(date) ? Date.now() : date;
}

/** A date the server made from its clock: now or later ("Expires: 0" and fixed past dates are kept). */
function madeFromClock(value: string, now: number): boolean {
  const time = Date.parse(value.trim());
  return !Number.isNaN(time) && time >= now - CLOCK_SLACK_MS;
}

/**
 * Markup that differs on every response of an unchanged page: nonce attributes, hidden form fields
 * (CSRF tokens, ASP.NET view state), CSRF meta tags and JSON nonces/tokens in inline scripts.
 */
const BODY_TOKENS: RegExp[] = [
  /(\snonce\s*=\s*)("[^"]*"|'[^']*'|[^\s>]+)/gi,
  /(<meta\b(?=[^>]*\bname\s*=\s*["']?[\w-]*(?:csrf|xsrf|token))[^>]*\bcontent\s*=\s*)("[^"]*"|'[^']*')/gi,
  /(<input\b(?=[^>]*\btype\s*=\s*["']?hidden\b)[^>]*\bvalue\s*=\s*)("[^"]*"|'[^']*'|[^\s>]+)/gi,
  /("(?:nonce|csrf[-_]?token|_token|authenticity_token)"\s*:\s*)("[^"]*")/gi,
];

/**
 * The body with its per-response tokens blanked, for `response_data_hash`: an unchanged page hashes the
 * same on every visit, while a change to what it shows changes the hash. `varies` says whether anything
 * was blanked.
 */
export function stableBody(body: string): { text: string; varies: boolean } {
  let text = body;
  for (const pattern of BODY_TOKENS) text = text.replace(pattern, '$1""');
  return { text, varies: text !== body };
}

/**
 * The clock in a banner (Sendmail, Exchange and many FTP servers greet with the time), shown as VARIES:
 * "220 mx ESMTP Sendmail 8.15.2/8.15.2; Sun, 22 Nov 2026 12:00:00 +0000" → "…; …".
 */
const BANNER_CLOCKS: RegExp[] = [
  // RFC 5322 and its cousins: "Sun, 22 Nov 2026 12:00:00 +0000", "22 Nov 2026 12:00:00 GMT"
  /\b(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,?\s+)?\d{1,2}[\s-](?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*[\s-]\d{2,4}\s+\d{1,2}:\d{2}(?::\d{2})?(?:\s*(?:[+-]\d{4}|[A-Z]{2,5}\b))?(?:\s*\([A-Z]{2,5}\))?/g,
  // ctime: "Sun Nov 22 12:00:00 2026"
  /\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\s+(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}(?:\s+[A-Z]{2,5})?\s+\d{4}\b/g,
  // ISO 8601: "2026-11-22 12:00:00", "2026-11-22T12:00:00.123Z"
  /\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?/g,
  // POP3 APOP challenge: "<1896.697170952@dbc.mtview.ca.us>" (process id and clock)
  /<[\d.]+@[^>\s]+>/g,
];

export function stableBanner(banner: string): string {
  let text = banner;
  for (const pattern of BANNER_CLOCKS) text = text.replace(pattern, VARIES);
  return text;
}
