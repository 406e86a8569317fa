/**
 * Every discovery capability the engine runs. Adding one is adding its file and a line here; the
 * engine routes each entity to the modules that consume its kind.
 */
import { dnsRecords } from "./dns.ts";
import { zoneTransfer } from "./dns-axfr.ts";
import { dnsBruteforce } from "./dns-brute.ts";
import { reverseDns } from "./dns-reverse.ts";
import type { DiscoveryModule } from "./module.ts";
import { netblocks } from "./netblocks.ts";
import { portScan } from "./ports.ts";
import { tlsCertificates } from "./tls.ts";

export const MODULES: readonly DiscoveryModule[] = [
  dnsRecords,
  dnsBruteforce,
  zoneTransfer,
  reverseDns,
  portScan,
  tlsCertificates,
  netblocks,
];
