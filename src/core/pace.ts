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
