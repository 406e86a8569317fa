/** The store and the repositories every entry point (server, worker, CLI) shares, opened once. */
import type { Config } from "../core/config.ts";
import { runSettingsFrom } from "../core/run-settings.ts";
import { AccountsRepository } from "./accounts.ts";
import { CollectionsRepository } from "./collections.ts";
import { openStore, type Store } from "./database.ts";
import { EntitiesRepository } from "./entities.ts";
import { migrateToLatest } from "./migrate.ts";
import { RunSourcesRepository } from "./run-sources.ts";
import { RunsRepository } from "./runs.ts";

export interface Services {
  config: Config;
  store: Store;
  accounts: AccountsRepository;
  collections: CollectionsRepository;
  runs: RunsRepository;
  entities: EntitiesRepository;
  /** How each passive source fared in each run. */
  runSources: RunSourcesRepository;
}

export async function openServices(
  config: Config,
  options: {
    migrate?: boolean;
    /** Told when the database does not answer at start; the process then waits for it (server, worker). */
    waiting?: (message: string) => void;
  } = {},
): Promise<Services> {
  const store = openStore(config);
  // Every run this process creates carries this process's discovery settings to every worker.
  const runs = new RunsRepository(store.db, runSettingsFrom(config), store.taskDb);
  if (options.migrate !== false) {
    for (let tries = 1; ; tries++) {
      try {
        await migrateToLatest(store);
        break;
      } catch (error) {
        // A database that is down is waited for (with backoff); one that answers and refuses is an error.
        if (!options.waiting || (await runs.reachable())) {
          await store.close();
          throw error;
        }
        const delay = Math.min(15_000, 500 * 2 ** Math.min(tries - 1, 10));
        options.waiting(
          `The database at ${store.location} does not answer (${(error as Error).message}); trying again in ${Math.round(delay / 1000) || 1} s.`,
        );
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }
  return {
    config,
    store,
    accounts: new AccountsRepository(store.db),
    collections: new CollectionsRepository(store.db, { maxSeeds: config.maxSeedsPerCollection }),
    runs,
    entities: new EntitiesRepository(store.db),
    runSources: new RunSourcesRepository(store.db),
  };
}
