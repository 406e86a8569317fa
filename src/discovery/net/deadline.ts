/**
 * A signal that aborts when its parent does or when `ms` have passed, and that is finished with by
 * `done()`. `AbortSignal.any([parent, AbortSignal.timeout(ms)])` says the same, but its timer outlives
 * the operation: every timeout signal fires after its time whether anyone still listens or not, building
 * a DOMException and walking the composite signals each time. At a template run's 60-odd requests per
 * application that was 5% of the discovery thread's time; here `done()` clears the timer and the parent's
 * listener as soon as the operation ends.
 */
export interface Deadline {
  signal: AbortSignal;
  done(): void;
}

export function deadline(parent: AbortSignal, ms: number): Deadline {
  const controller = new AbortController();
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, done: () => {} };
  }
  const onAbort = () => controller.abort(parent.reason);
  const timer = setTimeout(
    () => controller.abort(new DOMException("The operation timed out.", "TimeoutError")),
    ms,
  );
  parent.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      parent.removeEventListener("abort", onAbort);
    },
  };
}
