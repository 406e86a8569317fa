/**
 * Collection changes told between processes over a real Redis: a change made in another process moves
 * this one's counter (so its cached answers read again at once), and a change of its own is not heard
 * back as a second one.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  type CollectionChangeRelay,
  relayCollectionChanges,
} from "../../src/runs/collection-change-relay.ts";
import { collectionsChanged, collectionsGeneration } from "../../src/store/collection-changes.ts";
import { REDIS_URL, serviceSkipReason } from "../helpers/services.ts";
import { testPrefix } from "./helpers.ts";

const skip = await serviceSkipReason("Redis", REDIS_URL);
const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

describe("collection changes relayed over Redis", { skip }, () => {
  const prefix = testPrefix();
  const warnings: string[] = [];
  let relay: CollectionChangeRelay;

  before(async () => {
    relay = relayCollectionChanges({ redisUrl: REDIS_URL, prefix, warn: (m) => warnings.push(m) });
    await relay.ready;
  });
  after(async () => {
    await relay?.close();
  });

  test("a change in another process is heard here", async () => {
    const before = collectionsGeneration();
    // Another process with its own relay makes one change, then goes.
    const script = `
      import { relayCollectionChanges } from ${JSON.stringify(source("../../src/runs/collection-change-relay.ts"))};
      import { collectionsChanged } from ${JSON.stringify(source("../../src/store/collection-changes.ts"))};
      const relay = relayCollectionChanges({ redisUrl: ${JSON.stringify(REDIS_URL)}, prefix: ${JSON.stringify(prefix)}, warn: (m) => { throw new Error(m); } });
      await relay.ready;
      collectionsChanged();
      await new Promise((resolve) => setTimeout(resolve, 100));
      await relay.close();`;
    await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script]);
    for (let i = 0; i < 100 && collectionsGeneration() === before; i++) await sleep(20);
    assert.ok(collectionsGeneration() > before, "the other process's change moved this one's counter");
    assert.deepEqual(warnings, []);
  });

  test("a change made here is not heard back as another", async () => {
    const before = collectionsGeneration();
    collectionsChanged();
    assert.equal(collectionsGeneration(), before + 1);
    await sleep(200); // long enough for the message to come back from Redis, were it heard
    assert.equal(collectionsGeneration(), before + 1);
  });
});
