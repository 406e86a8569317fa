/** What the web result views read of an entity: its kind, name, scope and details. */
import type { Fingerprint } from "../discovery/fingerprint/types.ts";

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

export { strings } from "./common.ts";

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
