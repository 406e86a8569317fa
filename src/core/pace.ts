/**
 * Long jobs on the server's event loop (the final merge, batched writes, result reads) call `pace()`
 * between steps: it yields to the loop (setImmediate) once the current synchronous stretch has run for
 * more than a few milliseconds, so requests and timers wait at most that long. SQLite statements are
 * synchronous, so a stretch of awaited SQLite calls never yields by itself.
 *
 * A stretch starts at the first `pace()` of a turn of the loop (or where a yield resumes) and ends with
 * the turn: a request that reads a page calls `pace()` a few times and never yields, however long ago
 * the last long job yielded.
 */

/** The longest stretch of work between two yields. */
export const SLICE_MS = 4;

/** When the current stretch began; undefined between stretches. */
let sliceStart: number | undefined;
const endSlice = () => {
  sliceStart = undefined;
};
function startSlice() {
  sliceStart = performance.now();
  // The loop's check phase comes once per turn: by then this stretch is over.
  setImmediate(endSlice);
}

export const yieldToLoop = () =>
  new Promise<void>((resolve) =>
    setImmediate(() => {
      startSlice();
      resolve();
    }),
  );

/** Yields when the current stretch is over its slice; cheap otherwise. */
export function pace(): Promise<void> | undefined {
  if (sliceStart === undefined) {
    startSlice();
    return undefined;
  }
  if (performance.now() - sliceStart < SLICE_MS) return undefined;
  return yieldToLoop();
}

/** Items between two looks at the clock in `eachPaced`: a look costs about as much as a small item. */
const ITEMS_PER_LOOK = 64;

/**
 * Calls `visit` on each item in order, yielding between items (`pace()`) once the stretch is over its
 * slice: a list of any length (a zone transfer's 65,000 records, their 60,000 follow-up tasks) holds the
 * loop a slice at a time. Each yield lets other work run, so `visit` must not rely on state that other
 * work changes meanwhile.
 */
export async function eachPaced<T>(
  items: readonly T[],
  visit: (item: T, index: number) => void,
): Promise<void> {
  for (let index = 0; index < items.length; index++) {
    if (index % ITEMS_PER_LOOK === 0) {
      const yielding = pace();
      if (yielding) await yielding;
    }
    visit(items[index], index);
  }
}

/** `items.map(map)`, paced as `eachPaced` is. */
export async function mapPaced<T, U>(items: readonly T[], map: (item: T, index: number) => U): Promise<U[]> {
  const mapped: U[] = [];
  await eachPaced(items, (item, index) => {
    mapped.push(map(item, index));
  });
  return mapped;
}
