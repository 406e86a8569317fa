/**
 * Which tasks the templates module is given is decided by `wants`, in the engine's thread, whose copy of
 * the module never runs when a discovery thread does: `runStarting` loads the library there too, so a
 * service no network template names gets no task (every one got a no-op task before, 8% of a /16's).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { loadConfig } from "../../../src/core/config.ts";
import type { FoundEntity } from "../../../src/core/entities.ts";
import { runSettingsFrom } from "../../../src/core/run-settings.ts";
import { discoverySettings } from "../../../src/discovery/engine.ts";
import { createTemplatesModule } from "../../../src/discovery/modules/templates.ts";

const service = (port: number): FoundEntity => ({
  kind: "NetworkService",
  name: `127.0.0.1:${port}/tcp`,
  details: { ip_address: "127.0.0.1", port },
});

test("once a run starts, only services a network template names are wanted", async () => {
  const module = createTemplatesModule();
  // Before anything is loaded nothing can be ruled out.
  assert.equal(module.wants?.(service(2)), true);
  module.runStarting?.(discoverySettings(runSettingsFrom(loadConfig({}, {}))));
  const deadline = Date.now() + 10_000;
  while (module.wants?.(service(2)) !== false) {
    if (Date.now() > deadline) assert.fail("the library never loaded: port 2 is still wanted");
    await sleep(10);
  }
  assert.equal(module.wants?.(service(11211)), true, "memcached-stats names 11211");
  assert.equal(module.wants?.(service(2)), false, "no network template names port 2");
});
