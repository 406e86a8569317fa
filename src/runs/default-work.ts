/**
 * What a run does, composed in one place. THIS IS WHERE DISCOVERY PLUGS IN: the discovery engine
 * (src/discovery) replaces the body of `createRunWork` with its own RunWork.
 *
 * Until then a run plans one task per seed and executes each as a no-op that records nothing, so the run
 * machinery (queues, workers, progress, time limits, scheduling) is real and usable end to end.
 */
import type { Services } from "../api/context.ts";
import type { RunWork } from "./work.ts";

export function createRunWork(services: Services): RunWork {
  return {
    async plan(run) {
      const seeds = await services.collections.seeds(run.collectionId);
      return seeds.map((seed) => ({
        key: `seed:${seed.type}:${seed.name}`,
        kind: "seed",
        payload: seed,
        depth: 0,
      }));
    },
    async execute() {
      return [];
    },
    async finish() {},
  };
}
