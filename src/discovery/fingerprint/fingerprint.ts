/**
 * The fingerprint engine: products from HTTP responses (web technology rules, Server-header rules,
 * Recog's header, cookie and title databases, favicon hashes) and from service banners, merged per product, turned into the spec's Fingerprint
 * with CVEs looked up when the version is precise enough.
 */
import { formatCpe, vendorProductAliases } from "../../core/cpe.ts";
import type { Detection, Fingerprint, HttpEvidence } from "../../core/facts.ts";
import { isPreciseVersion } from "../../core/versions.ts";
import type { MatchedCve } from "../../store/vulns.ts";
import { detectBannerProducts, detectFavicon } from "./banner-rules.ts";
import { detectLibrariesFromBanners, detectLibrariesFromUrls } from "./js-libraries.ts";
import { recogHttpDetections } from "./recog-services.ts";
import { detectWebTechnologies, type RuleIndex } from "./web-rules.ts";

/** Looks CVEs up for a product CPE; the vulnerability repository is one. */
export interface CveLookup {
  matchCpe(cpe: string): Promise<MatchedCve[]>;
}

const identity = (detection: Detection) =>
  detection.vendor
    ? vendorProductAliases(detection.vendor, detection.product)
        .map(([v, p]) => `${v}:${p}`)
        .sort()[0]
    : detection.name.toLowerCase();

/**
 * One detection per product: the one with the most precise version wins, tags are pooled. A product
 * is known by its CPE name, or by its name where a rule gives it none (and a rule that does wins).
 */
export function mergeDetections(detections: Detection[]): Detection[] {
  const merged = new Map<string, Detection>();
  const withCpe = new Map(detections.filter((d) => d.vendor).map((d) => [d.name.toLowerCase(), identity(d)]));
  for (const detection of detections) {
    const key = detection.vendor
      ? identity(detection)
      : (withCpe.get(detection.name.toLowerCase()) ?? identity(detection));
    const previous = merged.get(key);
    if (!previous) {
      merged.set(key, detection);
      continue;
    }
    const better =
      `${detection.version}${detection.update}`.length > `${previous.version}${previous.update}`.length ||
      (previous.matchType === "implied" && detection.matchType !== "implied");
    const winner = better ? detection : previous;
    const named = winner.vendor ? winner : previous.vendor ? previous : detection;
    merged.set(key, {
      ...winner,
      name: named.name,
      vendor: named.vendor,
      product: named.product,
      part: named.part,
      tags: [...new Set([...previous.tags, ...detection.tags])],
    });
  }
  return [...merged.values()];
}

/** Header lines as a banner, so the Server-header rules read HTTP responses too. */
const headerBlock = (headers: Array<[string, string]>) =>
  headers.map(([name, value]) => `${name.replace(/^./, (c) => c.toUpperCase())}: ${value}`).join("\n");

/** Products an HTTP response shows; `rules` are the web technology rules (the built-in ones by default). */
export function fingerprintHttp(evidence: HttpEvidence, rules?: RuleIndex): Detection[] {
  const own = mergeDetections([
    ...detectWebTechnologies(evidence, rules),
    ...detectLibrariesFromUrls(evidence.scripts),
    ...detectLibrariesFromBanners(evidence.scriptBanners ?? []),
    ...detectBannerProducts(headerBlock(evidence.headers)),
    ...(evidence.faviconHash === undefined ? [] : detectFavicon(evidence.faviconHash)),
  ]);
  return [...own, ...recogAdditions(own, recogHttpDetections(evidence))];
}

/**
 * Recog's applications that the project's own rules did not name. Where both name a product the
 * project's rule stays (its names and version forms are the ones its CVE look-ups are tested with);
 * Recog's operating systems read from a Server header are facts about the host, not web products.
 */
function recogAdditions(own: Detection[], recog: Detection[]): Detection[] {
  const identities = new Set(own.map(identity));
  const names = own.map((d) => ` ${d.name.toLowerCase()} `);
  // Recog often names a product with its vendor and kind ("Microsoft Kestrel web server" for Kestrel).
  const named = (d: Detection) => {
    const name = ` ${d.name.toLowerCase()} `;
    return names.some((own) => name.includes(own) || own.includes(name));
  };
  return mergeDetections(recog.filter((d) => d.part === "a" && !identities.has(identity(d)) && !named(d)));
}

export function fingerprintBanner(banner: string): Detection[] {
  return mergeDetections(detectBannerProducts(banner));
}

/** The product's CPE 2.3 string, with its version when known; empty without a CPE name. */
export function detectionCpe(detection: Detection): string {
  if (!detection.vendor) return "";
  return formatCpe({
    part: detection.part,
    vendor: detection.vendor,
    product: detection.product,
    version: detection.version || "*",
    update: detection.update || "*",
  });
}

/** The version as people write it (OpenSSH "8.9p1"). */
export const displayVersion = (detection: Detection) => `${detection.version}${detection.update}`;

export interface FingerprintedProduct {
  detection: Detection;
  fingerprint: Fingerprint;
  cves: MatchedCve[];
}

/** Spec fingerprints for detections; CVEs are inferred only for a CPE with a precise version. */
export async function toFingerprints(
  detections: Detection[],
  cves?: CveLookup,
): Promise<FingerprintedProduct[]> {
  const out: FingerprintedProduct[] = [];
  for (const detection of detections) {
    const cpe = detectionCpe(detection);
    const inference = !!cpe && isPreciseVersion(detection.version);
    const matched = inference && cves ? await cves.matchCpe(cpe) : [];
    out.push({
      detection,
      cves: matched,
      fingerprint: {
        product: detection.name,
        issue: matched.length > 0,
        inference,
        vendor: detection.vendor,
        vulns: matched.map((cve) => ({
          cve: cve.cve,
          cvss_v3_score: cve.cvss_v3_score,
          cvss_v2_score: cve.cvss_v2_score,
          cwe: cve.cwe,
          kev: cve.kev !== null,
        })),
        cpe,
        match_type: detection.matchType,
        type: "fingerprint",
        match_details: detection.matchDetails,
        tags: detection.tags,
      },
    });
  }
  return out;
}

/**
 * Shodan's favicon hash: MurmurHash3 (x86, 32-bit, seed 0, signed) of the icon's base64 text with a
 * newline after every 76 characters and at the end, as Python's base64.encodebytes writes it.
 */
export function faviconHash(icon: Buffer): number {
  const base64 = icon.toString("base64");
  const lines = base64.match(/.{1,76}/g) ?? [];
  return murmur3(Buffer.from(`${lines.join("\n")}\n`, "utf8"));
}

export function murmur3(data: Buffer, seed = 0): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed >>> 0;
  const blocks = data.length - (data.length % 4);
  for (let i = 0; i < blocks; i += 4) {
    let k = data.readUInt32LE(i);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  let k = 0;
  const tail = data.length % 4;
  if (tail === 3) k ^= data[blocks + 2] << 16;
  if (tail >= 2) k ^= data[blocks + 1] << 8;
  if (tail >= 1) {
    k ^= data[blocks];
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= data.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}
