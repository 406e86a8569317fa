/** Opens the store and the repositories every entry point (server, worker, CLI) shares. */
import type { Services } from "./api/context.ts";
import type { Config } from "./config.ts";
import { RunsRepository } from "./runs/repository.ts";
import { AccountsRepository } from "./store/accounts.ts";
import { CollectionsRepository } from "./store/collections.ts";
import { openStore } from "./store/database.ts";
import { EntitiesRepository } from "./store/entities.ts";
import { migrateToLatest } from "./store/migrate.ts";

export async function openServices(config: Config, options: { migrate?: boolean } = {}): Promise<Services> {
  const store = openStore(config);
  if (options.migrate !== false) await migrateToLatest(store);
  return {
    config,
    store,
    accounts: new AccountsRepository(store.db),
    collections: new CollectionsRepository(store.db),
    runs: new RunsRepository(store.db),
    entities: new EntitiesRepository(store.db),
  };
}
