/**
 * Long jobs on the server's event loop (the final merge, batched writes) call `pace()` between steps: it
 * yields to the loop (setImmediate) once the current synchronous stretch has run for more than a few
 * milliseconds, so requests and timers wait at most that long. SQLite statements are synchronous, so a
 * stretch of awaited SQLite calls never yields by itself.
 */

/** The longest stretch of work between two yields. */
export const SLICE_MS = 4;

let sliceStart = performance.now();

export const yieldToLoop = () =>
  new Promise<void>((resolve) =>
    setImmediate(() => {
      sliceStart = performance.now();
      resolve();
    }),
  );

/** Yields when the current stretch is over its slice; cheap otherwise. */
export function pace(): Promise<void> | undefined {
  if (performance.now() - sliceStart < SLICE_MS) return undefined;
  return yieldToLoop();
}
