/**
 * What a run does, composed in one place: the discovery engine (src/discovery/engine.ts) with every
 * registered module (src/discovery/modules.ts), checking products against the local vulnerability
 * database.
 */

import { availableParallelism } from "node:os";
import type { RunWork } from "../core/run-work.ts";
import { DiscoveryEngine } from "../discovery/engine.ts";
import { installedRulesFile } from "../discovery/fingerprint/installed-rules.ts";
import { useInstalledRecog } from "../discovery/fingerprint/recog.ts";
import { useIpDatabases } from "../discovery/ip-database.ts";
import { ModuleThread } from "../discovery/module-thread.ts";
import { discoveryModules } from "../discovery/modules.ts";
import type { Services } from "../store/services.ts";
import { VulnerabilityRepository } from "../store/vulns.ts";

export function createRunWork(services: Services): RunWork {
  const { config } = services;
  // The IP database this process looks addresses up in (SIGHTLINE_IP_DATABASE, or `sightline ipdb update`'s).
  useIpDatabases(config);
  // Recog's databases: `sightline fingerprints update --recog`'s copy, else the shipped one.
  useInstalledRecog(config);
  const cves = new VulnerabilityRepository(services.store.db);
  const fingerprintRules = installedRulesFile(config.dataDir);
  const threaded =
    config.discoveryThread === "on" || (config.discoveryThread === "auto" && availableParallelism() > 1);
  return new DiscoveryEngine({
    config,
    collections: services.collections,
    entities: services.entities,
    modules: discoveryModules({ cves, fingerprintRules }),
    // The thread builds the same modules (module-thread-entry.ts) and asks this one for product look-ups.
    runner: threaded
      ? new ModuleThread({ ipDatabase: config.ipDatabase, dataDir: config.dataDir, fingerprintRules, cves })
      : undefined,
  });
}
