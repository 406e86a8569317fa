/**
 * Issues for CVEs inferred from product versions (`inferred_cve_2021_41773`): potential, since the
 * version was read from a banner or header and a backported fix is invisible from outside.
 */

import type { EntityRef, FoundIssue } from "../../core/entities.ts";
import type { FingerprintedProduct } from "../fingerprint/fingerprint.ts";
import { displayVersion } from "../fingerprint/fingerprint.ts";

/** CVSS base score → the spec's severity (1 critical … 5 informational). */
export function severityOfScore(score: number | null): FoundIssue["severity"] {
  if (score === null) return 3;
  if (score >= 9) return 1;
  if (score >= 7) return 2;
  if (score >= 4) return 3;
  if (score > 0) return 4;
  return 5;
}

export function inferredCveIssues(product: FingerprintedProduct, entity: EntityRef): FoundIssue[] {
  const { detection, fingerprint } = product;
  return product.cves.map((cve) => {
    const score = cve.cvss_v3_score ?? cve.cvss_v2_score;
    const kev = cve.kev ? " CISA lists it as known to be exploited in the wild." : "";
    return {
      name: `inferred_cve_${cve.cve.slice(4).replace("-", "_").toLowerCase()}`,
      prettyName: `${cve.cve} in ${detection.name} ${displayVersion(detection)}`.trim(),
      severity: severityOfScore(score),
      confidence: "potential",
      category: "vulnerability",
      description: `${detection.name} ${displayVersion(detection)} is affected by ${cve.cve}: ${cve.description}${kev}`,
      remediation: `Upgrade ${detection.name} to a version that fixes ${cve.cve}, or confirm that the vendor's fix is backported into the installed package.`,
      references: [
        { type: "description", uri: `https://nvd.nist.gov/vuln/detail/${cve.cve}` },
        ...cve.references.slice(0, 5).map((uri) => ({ type: "remediation", uri })),
      ],
      entity,
      details: {
        cve: cve.cve,
        cwe: cve.cwe,
        cvss_v3_score: cve.cvss_v3_score,
        cvss_v2_score: cve.cvss_v2_score,
        exploited_in_the_wild: cve.kev !== null,
        affected_software: [
          {
            vendor: detection.vendor,
            product: detection.name,
            version: displayVersion(detection),
            cpe: fingerprint.cpe,
            matched_criteria: cve.criteria,
          },
        ],
        match_details: fingerprint.match_details,
      },
    };
  });
}
