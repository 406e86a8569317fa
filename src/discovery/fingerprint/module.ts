/**
 * The banner fingerprint module: what a service said first (SSH, SMTP, FTP, MySQL, Redis greetings,
 * kept by the port scan as `banner`) becomes products on the NetworkService (`fingerprint`,
 * `products`), and CVEs of precise versions become potential issues on it.
 */
import { inferredCveIssues } from "../checks/inferred-cve.ts";
import type { DiscoveryModule } from "../module.ts";
import { type CveLookup, displayVersion, fingerprintBanner, toFingerprints } from "./fingerprint.ts";

export function createFingerprintModule(options: { cves?: CveLookup } = {}): DiscoveryModule {
  return {
    name: "fingerprint",
    consumes: ["NetworkService"],
    produces: ["NetworkService"],
    async run(entity, ctx) {
      const banner = entity.details?.banner;
      if (typeof banner !== "string" || banner === "" || ctx.signal.aborted) return;
      const products = await toFingerprints(fingerprintBanner(banner), options.cves);
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
