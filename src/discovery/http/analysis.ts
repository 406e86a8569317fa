/**
 * Readings of a web response that need no further request: content checks (the spec's
 * ContentCheck), cloud providers named by headers, and whether the answer is an API.
 */
import type { HttpExchange } from "../net/http-fetch.ts";
import type { Page } from "./page.ts";

export interface ContentCheck {
  name: string;
  type: "content";
  result: boolean;
}

export const header = (exchange: HttpExchange, name: string): string | undefined =>
  exchange.headers.find(([key]) => key === name)?.[1];
const headers = (exchange: HttpExchange, name: string) =>
  exchange.headers.filter(([key]) => key === name).map(([, value]) => value);

const DIRECTORY_LISTING = [
  /<title>\s*Index of \//i, // Apache httpd, nginx autoindex
  /<title>\s*Directory listing for \//i, // Python's http.server
  /\[To Parent Directory\]<\/A>/i, // IIS
];

export function isDirectoryListing(page: Page, body: string): boolean {
  return (
    /^(Index of|Directory listing for) \//i.test(page.title) || DIRECTORY_LISTING.some((re) => re.test(body))
  );
}

/** The security headers whose absence is worth a look, by the scheme they apply to. */
export const SECURITY_HEADERS: Array<{ name: string; httpsOnly: boolean }> = [
  { name: "strict-transport-security", httpsOnly: true },
  { name: "content-security-policy", httpsOnly: false },
  { name: "x-frame-options", httpsOnly: false },
  { name: "x-content-type-options", httpsOnly: false },
];

export function missingSecurityHeaders(exchange: HttpExchange): string[] {
  const https = exchange.url.startsWith("https:");
  return SECURITY_HEADERS.filter(
    (entry) => (https || !entry.httpsOnly) && header(exchange, entry.name) === undefined,
  ).map((entry) => entry.name);
}

export function contentChecks(exchange: HttpExchange, page: Page, body: string): ContentCheck[] {
  const authenticate = headers(exchange, "www-authenticate").join(", ").toLowerCase();
  const missing = new Set(missingSecurityHeaders(exchange));
  const check = (name: string, result: boolean): ContentCheck => ({ name, type: "content", result });
  return [
    check("Authentication - HTTP Basic", /\bbasic\b/.test(authenticate)),
    check("Authentication - HTTP Digest", /\bdigest\b/.test(authenticate)),
    check("Authentication - NTLM", /\b(ntlm|negotiate)\b/.test(authenticate)),
    check(
      "Authentication - Login Form",
      page.forms.some((form) => form.hasPassword),
    ),
    check("Directory Listing", isDirectoryListing(page, body)),
    check("Form", page.forms.length > 0),
    check(
      "File Upload Form",
      page.forms.some((form) => form.hasFileUpload),
    ),
    ...SECURITY_HEADERS.filter((entry) => exchange.url.startsWith("https:") || !entry.httpsOnly).map(
      (entry) => check(`Missing Security Header - ${entry.name}`, missing.has(entry.name)),
    ),
  ];
}

/** Cloud and CDN providers a response names in its headers. */
const PROVIDERS: Array<{ name: string; test: (name: string, value: string) => boolean }> = [
  { name: "Cloudflare", test: (n, v) => (n === "server" && /^cloudflare/i.test(v)) || n === "cf-ray" },
  {
    name: "Amazon Web Services",
    test: (n, v) => n.startsWith("x-amz-") || (n === "server" && /^(AmazonS3|awselb|CloudFront)/i.test(v)),
  },
  {
    name: "Microsoft Azure",
    test: (n) => n === "x-azure-ref" || n === "x-ms-request-id" || n === "x-msedge-ref",
  },
  {
    name: "Google Cloud",
    test: (n, v) =>
      n.startsWith("x-goog-") ||
      n === "x-cloud-trace-context" ||
      (n === "server" && /^(gws|Google Frontend|GSE)$/i.test(v)),
  },
  {
    name: "Fastly",
    test: (n, v) => n === "x-fastly-request-id" || (n === "x-served-by" && /cache-/i.test(v)),
  },
  {
    name: "Akamai",
    test: (n, v) => n.startsWith("x-akamai-") || (n === "server" && /^AkamaiGHost/i.test(v)),
  },
];

export function cloudProviders(exchange: HttpExchange): string[] {
  return PROVIDERS.filter((provider) =>
    exchange.headers.some(([name, value]) => provider.test(name, value)),
  ).map((provider) => provider.name);
}

/** A JSON or GraphQL answer, or an OpenAPI/Swagger document: an API rather than a page. */
export function isApiEndpoint(exchange: HttpExchange, body: string): boolean {
  const type = (header(exchange, "content-type") ?? "").toLowerCase();
  if (/\b(application\/(.+\+)?json|application\/graphql)/.test(type)) return true;
  return (
    /^\s*\{\s*"(openapi|swagger)"\s*:/.test(body) || /^\s*\{\s*"errors"\s*:\s*\[\s*\{\s*"message"/.test(body)
  );
}
