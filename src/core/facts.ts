/** What fingerprinting yields: detections inside Sightline, and the spec's Fingerprint on the wire. */
import { type Static, Type } from "typebox";
import { OrNull } from "./or-null.ts";

/** A product seen in a response or banner. */
export interface Detection {
  /** Display name of the product ("Apache HTTP Server", "OpenSSH"). */
  name: string;
  /** CPE vendor and product as NVD spells them; empty when the rule has no CPE. */
  vendor: string;
  product: string;
  part: "a" | "o" | "h";
  version: string;
  /** A version suffix NVD keeps in the CPE update field (OpenSSH "p1"). */
  update: string;
  tags: string[];
  /** How it was seen: content_headers, content_cookies, content_body, meta_generator, script_src, script_banner, url, favicon, banner, implied. */
  matchType: string;
  /** What was seen, quoted: `server header "Apache/2.4.49 (Unix)"`. */
  matchDetails: string;
}

/** A CVE attached to a fingerprint. */
export const FingerprintVuln = Type.Object({
  cve: Type.String(),
  cvss_v3_score: OrNull(Type.Number()),
  cvss_v2_score: OrNull(Type.Number()),
  cwe: Type.String(),
  kev: Type.Boolean({ description: "Listed in CISA's Known Exploited Vulnerabilities catalog." }),
});

export type FingerprintVuln = Static<typeof FingerprintVuln>;

/** The spec's Fingerprint, field for field: the schema the API serialises and the type code builds. */
export const Fingerprint = Type.Object(
  {
    product: Type.String(),
    issue: Type.Boolean({ description: "The product's version has CVEs (see vulns)." }),
    inference: Type.Boolean({ description: "The version is precise enough to infer CVEs from." }),
    vendor: Type.String({ description: "CPE vendor; empty without a CPE name." }),
    vulns: Type.Array(FingerprintVuln, {
      description: "CVEs of this version in the vulnerability database.",
    }),
    cpe: Type.String({ description: "CPE 2.3 name with the version when known; empty without a CPE name." }),
    match_type: Type.String({
      description:
        "How it was seen: content_headers, content_cookies, content_body, content_meta, meta_generator, script_src, url, favicon, banner, implied.",
    }),
    type: Type.Literal("fingerprint"),
    match_details: Type.String({
      description: 'What was seen, e.g. `server header "Apache/2.4.49 (Unix)"`.',
    }),
    tags: Type.Array(Type.String(), { description: 'Categories, e.g. "Web servers".' }),
  },
  { description: "A product found on the application." },
);
export type Fingerprint = Static<typeof Fingerprint>;

/** What an HTTP response offers to fingerprinting. */
export interface HttpEvidence {
  url: string;
  /** Header names in lower case, in the order received; repeated headers repeat. */
  headers: Array<[string, string]>;
  /** Raw Set-Cookie values. */
  setCookies: string[];
  body: string;
  /** Meta name/property (lower case) → content values. */
  meta: Record<string, string[]>;
  /** Absolute URLs of the page's scripts. */
  scripts: string[];
  /** The start of same-host script files, when fetched: their banner comments name libraries. */
  scriptBanners?: Array<{ url: string; text: string }>;
  /** Shodan-compatible favicon hash, when the favicon was fetched. */
  faviconHash?: number;
}

/** What the merge and the result views read of an entity: its kind, name, scope and details. */

export interface ResultEntity {
  kind: string;
  name: string;
  scoped: boolean;
  details: Record<string, unknown>;
}

/** The spec fingerprints kept in an entity's details (applications and services). */
export function fingerprintsOf(entity: ResultEntity): Fingerprint[] {
  const value = entity.details.fingerprint;
  return Array.isArray(value)
    ? (value as Fingerprint[]).filter((item) => item && item.type === "fingerprint")
    : [];
}

/** `[product, version]` pairs kept in an entity's details. */
export function productsOf(entity: ResultEntity): Array<[string, string]> {
  const value = entity.details.products;
  if (!Array.isArray(value)) return [];
  return value.filter(
    (pair): pair is [string, string] =>
      Array.isArray(pair) && typeof pair[0] === "string" && typeof pair[1] === "string",
  );
}

/** The kinds that carry web or service products: applications (Uri) and services. */
export const PRODUCT_KINDS = ["Uri", "NetworkService"] as const;

export const carriesProducts = (entity: ResultEntity) =>
  (PRODUCT_KINDS as readonly string[]).includes(entity.kind);

/** The distinct products of an entity, as the products result names them ("<product> <version>"). */
export function productFacts(
  entity: ResultEntity,
): Array<{ product: string; version: string; label: string }> {
  const seen = new Map<string, { product: string; version: string; label: string }>();
  for (const [product, version] of productsOf(entity)) {
    const label = `${product} ${version}`.trim();
    if (!seen.has(label)) seen.set(label, { product, version, label });
  }
  return [...seen.values()];
}

/** The distinct (CVE, product) pairs of an entity's fingerprints. */
export function vulnerabilityFacts(entity: ResultEntity): Array<{ cve: string; product: string }> {
  const seen = new Map<string, { cve: string; product: string }>();
  for (const fingerprint of fingerprintsOf(entity))
    for (const vuln of fingerprint.vulns ?? []) {
      const key = `${vuln.cve}\u0000${fingerprint.product}`;
      if (!seen.has(key)) seen.set(key, { cve: vuln.cve, product: fingerprint.product });
    }
  return [...seen.values()];
}
