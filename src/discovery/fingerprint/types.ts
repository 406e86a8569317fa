/** What fingerprinting yields: detections inside Sightline, and the spec's Fingerprint on the wire. */

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
  /** How it was seen: content_headers, content_cookies, content_body, meta_generator, script_src, url, favicon, banner, implied. */
  matchType: string;
  /** What was seen, quoted: `server header "Apache/2.4.49 (Unix)"`. */
  matchDetails: string;
}

/** A CVE attached to a fingerprint. */
export interface FingerprintVuln {
  cve: string;
  cvss_v3_score: number | null;
  cvss_v2_score: number | null;
  cwe: string;
  /** Listed in CISA's Known Exploited Vulnerabilities catalog. */
  kev: boolean;
}

/** The spec's Fingerprint, field for field. */
export interface Fingerprint {
  product: string;
  issue: boolean;
  inference: boolean;
  vendor: string;
  vulns: FingerprintVuln[];
  cpe: string;
  match_type: string;
  type: "fingerprint";
  match_details: string;
  tags: string[];
}

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
  /** Shodan-compatible favicon hash, when the favicon was fetched. */
  faviconHash?: number;
}
