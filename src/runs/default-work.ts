/**
 * What a run does, composed in one place: the discovery engine (src/discovery/engine.ts) with every
 * registered module (src/discovery/modules.ts), checking products against the local vulnerability
 * database.
 */
import type { Services } from "../api/context.ts";
import { DiscoveryEngine } from "../discovery/engine.ts";
import { discoveryModules } from "../discovery/modules.ts";
import { VulnerabilityRepository } from "../vulns/repository.ts";
import type { RunWork } from "./work.ts";

export function createRunWork(services: Services): RunWork {
  return new DiscoveryEngine({
    config: services.config,
    collections: services.collections,
    entities: services.entities,
    modules: discoveryModules({ cves: new VulnerabilityRepository(services.store.db) }),
  });
}
