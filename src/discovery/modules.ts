/**
 * Every discovery capability the engine runs. Adding one is adding its file and a line here; the
 * engine routes each entity to the modules that consume its kind.
 */

import type { CveLookup } from "./fingerprint/fingerprint.ts";
import type { DiscoveryModule } from "./module.ts";
import { dnsRecords } from "./modules/dns.ts";
import { zoneTransfer } from "./modules/dns-axfr.ts";
import { dnsBruteforce } from "./modules/dns-brute.ts";
import { reverseDns } from "./modules/dns-reverse.ts";
import { exposureChecks } from "./modules/exposures.ts";
import { createFingerprintModule } from "./modules/fingerprint.ts";
import { createHttpModule } from "./modules/http.ts";
import { netblocks } from "./modules/netblocks.ts";
import { PASSIVE_SOURCE_MODULES } from "./modules/passive-sources.ts";
import { permutations } from "./modules/permutations.ts";
import { portScan } from "./modules/ports.ts";
import { createTakeoverModule } from "./modules/takeover.ts";
import { createTemplatesModule } from "./modules/templates.ts";
import { tlsCertificates } from "./modules/tls.ts";
import { udpScan } from "./modules/udp.ts";

/** The network discovery modules: names, addresses, ports, certificates, netblocks, passive sources. */
export const MODULES: readonly DiscoveryModule[] = [
  dnsRecords,
  dnsBruteforce,
  zoneTransfer,
  reverseDns,
  portScan,
  udpScan,
  tlsCertificates,
  netblocks,
  exposureChecks,
  permutations,
  ...PASSIVE_SOURCE_MODULES,
];

/**
 * Every module of a run: network discovery, then web probing and fingerprints checked against `cves`,
 * with the fingerprint rules installed at `fingerprintRules` beside the built-in ones.
 */
export function discoveryModules(
  options: { cves?: CveLookup; fingerprintRules?: string } = {},
): DiscoveryModule[] {
  return [
    ...MODULES,
    createHttpModule({ cves: options.cves, rulesFile: options.fingerprintRules }),
    createFingerprintModule({ cves: options.cves }),
    createTakeoverModule(),
    createTemplatesModule(),
  ];
}
