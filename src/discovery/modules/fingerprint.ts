/**
 * The service fingerprint module: what identification named on a NetworkService (`product`,
 * `version`, `cpe`, from the service probes) and what its banner shows (SSH, SMTP, FTP greetings)
 * become products on it (`fingerprint`, `products`), and CVEs of precise versions become potential
 * issues on it, exactly as web fingerprints do for applications.
 */

import { parseCpe } from "../../core/cpe.ts";
import type { Detection } from "../../core/facts.ts";
import { serviceIdentityOf } from "../../core/service-identity.ts";
import { inferredCveIssues } from "../checks/inferred-cve.ts";
import { ruleName } from "../fingerprint/banner-rules.ts";
import {
  type CveLookup,
  displayVersion,
  fingerprintBanner,
  mergeDetections,
  toFingerprints,
} from "../fingerprint/fingerprint.ts";
import type { DiscoveryModule } from "../module.ts";

/**
 * Web servers' products are the application's (the web module reads the same Server header and more):
 * on their services they would count every web server twice in the products and vulnerabilities.
 */
const WEB_SERVER_SERVICES = new Set(["http", "https"]);

/** The product identification named, as a detection (none without a CPE name, none for a web server). */
export function identityDetection(details: Record<string, unknown>): Detection | undefined {
  const identity = serviceIdentityOf(details);
  const cpe = identity.cpe ? parseCpe(identity.cpe) : undefined;
  if (!cpe || !identity.product || WEB_SERVER_SERVICES.has(identity.service ?? "")) return undefined;
  const concrete = (value: string) => (value === "*" || value === "-" ? "" : value);
  return {
    name: ruleName(cpe.vendor, cpe.product) ?? identity.product,
    vendor: cpe.vendor,
    product: cpe.product,
    part: (cpe.part as Detection["part"]) || "a",
    version: concrete(cpe.version),
    update: concrete(cpe.update),
    tags: [identity.service ?? "service"],
    matchType: "banner",
    matchDetails: `service probe ${JSON.stringify(identity.identified_by ?? "")}${
      identity.banner ? ` answered ${JSON.stringify(identity.banner.slice(0, 117))}` : ""
    }`,
  };
}

export function createFingerprintModule(options: { cves?: CveLookup } = {}): DiscoveryModule {
  return {
    name: "fingerprint",
    consumes: ["NetworkService"],
    produces: ["NetworkService"],
    async run(entity, ctx) {
      const details = entity.details ?? {};
      const banner = typeof details.banner === "string" ? details.banner : "";
      const identified = identityDetection(details);
      if ((banner === "" && !identified) || ctx.signal.aborted) return;
      const detections = mergeDetections([...(identified ? [identified] : []), ...fingerprintBanner(banner)]);
      const products = await toFingerprints(detections, options.cves);
      if (products.length === 0) return;
      ctx.emit({
        kind: "NetworkService",
        name: entity.name,
        details: {
          fingerprint: products.map((product) => product.fingerprint),
          products: products.map((product) => [product.detection.name, displayVersion(product.detection)]),
        },
      });
      const ref = { kind: entity.kind, name: entity.name };
      for (const product of products) for (const issue of inferredCveIssues(product, ref)) ctx.raise(issue);
    },
  };
}
