/**
 * A task that finds tens of thousands of entities (a zone transfer's records) is turned into staging rows
 * and follow-up tasks a slice at a time: the server's loop comes round meanwhile, never held for the whole
 * task's findings at once.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { RunInfo, TaskOutcome } from "../../src/core/run-work.ts";
import type { DiscoveryModule } from "../../src/discovery/module.ts";
import { type DiscoveryFixture, discoveryFixture } from "../helpers/discovery.ts";
import { countTurns } from "../helpers/turns.ts";

const RECORDS = 20_000;
let turns: ReturnType<typeof countTurns> | undefined;

/** A zone's worth of names at once; the count of the loop's turns starts as it answers. */
const zone: DiscoveryModule = {
  name: "zone",
  consumes: ["Domain"],
  produces: ["DnsRecord"],
  async run(_entity, context) {
    for (let i = 0; i < RECORDS; i++) context.emit({ kind: "DnsRecord", name: `h${i}.big.test` });
    turns = countTurns();
  },
};
const resolve: DiscoveryModule = { name: "resolve", consumes: ["DnsRecord"], produces: [], async run() {} };

describe("a task that finds a zone's worth of names", () => {
  let fixture: DiscoveryFixture;
  before(async () => {
    fixture = await discoveryFixture("sqlite", [{ type: "Domain", name: "big.test" }], {}, [zone, resolve]);
  });
  after(() => fixture?.close());

  test("gives every name its staging row and follow-up, the loop coming round meanwhile", async () => {
    const run: RunInfo = { id: 1, collectionId: fixture.collectionId, collectionName: "lab", accountId: 1 };
    const [spec] = await fixture.engine.plan(run);
    const outcome = (await fixture.engine.execute(
      { ...spec, id: 1, runId: run.id, attempts: 1 },
      run,
      new AbortController().signal,
    )) as TaskOutcome;
    turns?.stop();
    assert.equal(outcome.followUps.length, RECORDS);
    assert.equal(new Set(outcome.followUps.map((task) => task.key)).size, RECORDS);
    assert.equal((outcome.found as { entities: unknown[] }).entities.length, RECORDS);
    assert.ok(
      turns && turns.count >= 3,
      `the loop came round ${turns?.count} times after the module answered`,
    );
  });
});
