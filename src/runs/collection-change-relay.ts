/**
 * Tells the other processes sharing a Redis (BullMQ mode: the server and its `sightline worker`s) when
 * this one changed a collection or finished a run, and hears them: cached answers of the server
 * (src/api/cached-answers.ts) then read a run finished by a worker at once, not within their 100 ms
 * bound. A message is only a nudge to read again — the store stays the truth — so one lost while
 * Redis is away costs at most that bound, and a failure to publish is logged, never thrown.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { collectionsChangedElsewhere, onCollectionsChanged } from "../store/collection-changes.ts";

export interface CollectionChangeRelay {
  /** Settles once other processes' messages are heard (or hearing them failed, which was logged). */
  ready: Promise<void>;
  close(): Promise<void>;
}

export function relayCollectionChanges(options: {
  redisUrl: string;
  prefix: string;
  warn: (message: string) => void;
}): CollectionChangeRelay {
  const channel = `${options.prefix}:collections-changed`;
  // Each process hears its own messages too; its id tells them apart.
  const self = randomUUID();
  let closed = false;
  const publisher = new Redis(options.redisUrl, { maxRetriesPerRequest: 1 });
  const subscriber = new Redis(options.redisUrl);
  // ioredis reconnects by itself; a nudge missed meanwhile costs the readers' bound.
  publisher.on("error", () => {});
  subscriber.on("error", () => {});
  subscriber.on("message", (_channel: string, from: string) => {
    if (from !== self) collectionsChangedElsewhere();
  });
  const ready = subscriber.subscribe(channel).then(
    () => {},
    (error: Error) => {
      if (!closed) options.warn(`collection changes of other processes are not heard: ${error.message}`);
    },
  );
  const stop = onCollectionsChanged(() => {
    publisher.publish(channel, self).catch((error: Error) => {
      options.warn(`a collection change could not be told to other processes: ${error.message}`);
    });
  });
  return {
    ready,
    async close() {
      closed = true;
      stop();
      // Not quit(): with Redis away it would wait for a reconnection, and shutdown with it.
      publisher.disconnect();
      subscriber.disconnect();
    },
  };
}
