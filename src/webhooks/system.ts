/**
 * The webhooks of one process, put together from the configuration: the hook the run machinery calls
 * when a run ends (it writes the outbox; servers and workers both have it), and on servers the
 * dispatcher that sends the outbox.
 */

import type { RunHook } from "../runs/coordinator.ts";
import type { Services } from "../store/services.ts";
import { WebhooksRepository } from "../store/webhooks.ts";
import { WebhookDispatcher } from "./dispatcher.ts";
import { WebhookEvents } from "./events.ts";
import { WebhookTargets } from "./targets.ts";

export interface WebhookSystem {
  hook: RunHook;
  /** Starts sending deliveries (servers only). */
  start(log: { warn(message: string): void }): void;
  close(): Promise<void>;
}

export function createWebhookSystem(services: Services): WebhookSystem {
  const { config } = services;
  const repository = new WebhooksRepository(services.store.db);
  const events = new WebhookEvents(services.store.db, repository);
  let dispatcher: WebhookDispatcher | undefined;
  return {
    hook: { runEnded: (runId) => events.runEnded(runId) },
    start(log) {
      dispatcher = new WebhookDispatcher({
        repository,
        events,
        targets: new WebhookTargets(config.webhookAllow),
        timeoutMs: config.webhookTimeoutMs,
        attempts: config.webhookAttempts,
        retryMs: config.webhookRetryMs,
        log,
      });
      dispatcher.start();
    },
    async close() {
      await dispatcher?.close();
    },
  };
}
