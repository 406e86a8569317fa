/** What routes reach through `app.services`: configuration and repositories, decorated once at start. */
import type { Config } from "../config.ts";
import type { RunsRepository } from "../runs/repository.ts";
import type { AccountsRepository, Principal } from "../store/accounts.ts";
import type { CollectionsRepository } from "../store/collections.ts";
import type { Store } from "../store/database.ts";
import type { EntitiesRepository } from "../store/entities.ts";

export interface Services {
  config: Config;
  store: Store;
  accounts: AccountsRepository;
  collections: CollectionsRepository;
  runs: RunsRepository;
  entities: EntitiesRepository;
}

declare module "fastify" {
  interface FastifyInstance {
    services: Services;
  }
  interface FastifyRequest {
    principal: Principal;
  }
}
