/**
 * A task cut short by its signal has not done its work: the engine fails it with the signal's reason (so
 * the coordinator hands it back on a shutdown, or drops it when its run ended) instead of answering no
 * follow-ups, which marked it done with its work lost.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { RunInfo } from "../../src/core/run-work.ts";
import type { DiscoveryModule } from "../../src/discovery/module.ts";
import { ShuttingDown } from "../../src/runs/in-flight.ts";
import { type DiscoveryFixture, discoveryFixture } from "../helpers/discovery.ts";

/** Finds nothing and hangs until its signal aborts, then says it was cut short. */
const hanging: DiscoveryModule = {
  name: "hanging",
  consumes: ["IpAddress"],
  produces: [],
  run: (_entity, ctx) =>
    new Promise((_, reject) =>
      ctx.signal.addEventListener("abort", () => reject(new Error("cut short")), { once: true }),
    ),
};

describe("a discovery task cut short by its signal", () => {
  let fixture: DiscoveryFixture;
  before(async () => {
    fixture = await discoveryFixture("sqlite", [{ type: "IpAddress", name: "192.0.2.7" }], {}, [hanging]);
  });
  after(() => fixture?.close());

  test("fails with the signal's reason, not as a task done with nothing found", async () => {
    const run: RunInfo = { id: 1, collectionId: fixture.collectionId, collectionName: "lab", accountId: 1 };
    const [spec] = await fixture.engine.plan(run);
    assert.equal(spec.kind, "hanging");
    const controller = new AbortController();
    const executed = fixture.engine.execute(
      { ...spec, id: 1, runId: run.id, attempts: 1 },
      run,
      controller.signal,
    );
    setTimeout(() => controller.abort(new ShuttingDown()), 50);
    await assert.rejects(executed, ShuttingDown);
  });
});
