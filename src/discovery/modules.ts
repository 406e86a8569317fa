/**
 * Every discovery capability the engine runs. Adding one is adding its file and a line here; the
 * engine routes each entity to the modules that consume its kind.
 */

import { dnsRecords } from "./dns.ts";
import { zoneTransfer } from "./dns-axfr.ts";
import { dnsBruteforce } from "./dns-brute.ts";
import { reverseDns } from "./dns-reverse.ts";
import type { CveLookup } from "./fingerprint/fingerprint.ts";
import { createFingerprintModule } from "./fingerprint/module.ts";
import { createHttpModule } from "./http.ts";
import type { DiscoveryModule } from "./module.ts";
import { netblocks } from "./netblocks.ts";
import { portScan } from "./ports.ts";
import { tlsCertificates } from "./tls.ts";

/** The network discovery modules: names, addresses, ports, certificates, netblocks. */
export const MODULES: readonly DiscoveryModule[] = [
  dnsRecords,
  dnsBruteforce,
  zoneTransfer,
  reverseDns,
  portScan,
  tlsCertificates,
  netblocks,
];

/** Every module of a run: network discovery, then web probing and fingerprints checked against `cves`. */
export function discoveryModules(options: { cves?: CveLookup } = {}): DiscoveryModule[] {
  return [
    ...MODULES,
    createHttpModule({ cves: options.cves }),
    createFingerprintModule({ cves: options.cves }),
  ];
}
