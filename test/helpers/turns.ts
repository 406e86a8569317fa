/**
 * Counts turns of the event loop: a callback re-queued with setImmediate runs once per turn, so the
 * count says how often the loop came round (requests and timers could be served) while work went on.
 */
export function countTurns(): { readonly count: number; stop(): void } {
  let count = 0;
  let ticking = true;
  const tick = () => {
    count++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    get count() {
      return count;
    },
    stop() {
      ticking = false;
    },
  };
}
