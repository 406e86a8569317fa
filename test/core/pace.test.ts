import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { eachPaced, mapPaced, pace, SLICE_MS } from "../../src/core/pace.ts";
import { countTurns } from "../helpers/turns.ts";

/** Keeps the thread busy for `ms`. */
function busy(ms: number) {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

test("a long job that paces lets the loop's other work in before it ends", async () => {
  await sleep(1);
  let other = false;
  setImmediate(() => {
    other = true;
  });
  let sawOther = false;
  for (let step = 0; step < 20 * SLICE_MS; step++) {
    busy(0.5);
    await pace();
    if (other) sawOther = true;
  }
  assert.ok(sawOther, "the immediate queued before the job ran while the job went on");
});

test("the first pace of a turn does not yield, however long ago the last long job yielded", async () => {
  for (let step = 0; step < 4 * SLICE_MS; step++) {
    busy(0.5);
    await pace();
  }
  await sleep(3 * SLICE_MS);
  // A request's first read in this turn goes on at once.
  assert.equal(pace(), undefined);
});

test("a stretch ends with its turn: the next turn starts a stretch of its own", async () => {
  assert.equal(pace(), undefined);
  busy(SLICE_MS + 1);
  const yielded = pace();
  assert.notEqual(yielded, undefined, "over the slice: yields");
  await yielded;
  assert.equal(pace(), undefined, "resumed: a stretch of its own");
  // A later turn, its check phase passed: a new stretch, however long the resumed one took.
  busy(SLICE_MS + 1);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(pace(), undefined);
});

test("a long list visited paced spans turns of the loop, in order, and maps like map", async () => {
  const items = Array.from({ length: 200 }, (_, index) => index);
  const turns = countTurns();
  const seen: number[] = [];
  await eachPaced(items, (item) => {
    busy(0.1);
    seen.push(item);
  });
  turns.stop();
  assert.deepEqual(seen, items);
  // 20 ms of work in slices of SLICE_MS: the loop came round several times meanwhile.
  assert.ok(turns.count >= 3, `${turns.count} turns`);
  assert.deepEqual(
    await mapPaced(items, (item, index) => item * 2 + index),
    items.map((item) => item * 3),
  );
});
