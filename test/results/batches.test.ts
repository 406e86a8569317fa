/**
 * The batching helpers of the read side: keyset batches and groups of items, and that a batch is emptied
 * once it has been used (what keeps PostgreSQL's rows from being promoted, see `release`).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { batches, collect, inBatches, mapReleased } from "../../src/store/result-queries.ts";

async function* numbers(count: number) {
  for (let i = 0; i < count; i++) yield i;
}

test("inBatches groups items in order, the last group short", async () => {
  const sizes: number[] = [];
  const seen: number[] = [];
  for await (const batch of inBatches(numbers(7), 3)) {
    sizes.push(batch.length);
    seen.push(...batch);
  }
  assert.deepEqual(sizes, [3, 3, 1]);
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6]);
});

test("inBatches empties a batch when the next one is asked for", async () => {
  const given: number[][] = [];
  for await (const batch of inBatches(numbers(6), 3)) {
    assert.equal(batch.length, 3, "a batch is whole while it is used");
    given.push(batch);
  }
  assert.deepEqual(given[0], [], "the first batch was emptied once the second was asked for");
});

test("batches reads after the last row, and empties each batch read once its rows are yielded", async () => {
  const reads: Array<{ after: number | undefined; take: number; skip: number }> = [];
  const returned: number[][] = [];
  const rows = await collect(
    batches<number>(
      async (after, take, skip) => {
        reads.push({ after, take, skip });
        const start = (after ?? -1) + 1 + skip;
        const batch = Array.from({ length: Math.max(0, Math.min(take, 10 - start)) }, (_, i) => start + i);
        returned.push(batch);
        return batch;
      },
      { offset: 2, limit: 7 },
      3,
    ),
  );
  assert.deepEqual(rows, [2, 3, 4, 5, 6, 7, 8]);
  assert.deepEqual(reads, [
    { after: undefined, take: 3, skip: 2 },
    { after: 4, take: 3, skip: 0 },
    { after: 7, take: 1, skip: 0 },
  ]);
  assert.ok(
    returned.every((batch) => batch.length === 0),
    "every batch read is empty once used",
  );
});

test("mapReleased answers the rows mapped and empties their array", async () => {
  const rows = [{ id: 1 }, { id: 2 }];
  assert.deepEqual(await mapReleased(rows, (row) => row.id), [1, 2]);
  assert.equal(rows.length, 0);
});
