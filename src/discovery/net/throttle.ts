/**
 * Politeness limits shared by every task of a process: a global bound on operations in flight, a
 * bound per host (so one target never sees more than `perHostConcurrency` of our connections), and
 * an optional global rate (operations started per second). Waiting honours the abort signal.
 */

export interface ThrottleLimits {
  concurrency: number;
  perHostConcurrency: number;
  /** Operations started per second across the process; 0 = unlimited. */
  rateLimit: number;
}

interface Waiter {
  grant(): void;
  refuse(reason: unknown): void;
  cancelled: boolean;
}

/**
 * Waiters per abort signal, with one listener per signal: a scan queues thousands of waiters on one
 * signal, and a listener each would make every removal a walk of the list.
 */
const waitersOf = new WeakMap<AbortSignal, Set<Waiter>>();

function watch(signal: AbortSignal, waiter: Waiter): void {
  let waiters = waitersOf.get(signal);
  if (!waiters) {
    const set = new Set<Waiter>();
    waiters = set;
    waitersOf.set(signal, set);
    signal.addEventListener(
      "abort",
      () => {
        for (const pending of set) {
          pending.cancelled = true;
          pending.refuse(signal.reason ?? new Error("aborted"));
        }
        set.clear();
      },
      { once: true },
    );
  }
  waiters.add(waiter);
}

/** A counting semaphore with a FIFO of waiters (O(1) in and out). */
class Semaphore {
  #free: number;
  #queue: Waiter[] = [];
  #head = 0;

  constructor(size: number) {
    this.#free = size;
  }

  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error("aborted"));
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          if (signal) waitersOf.get(signal)?.delete(waiter);
          resolve();
        },
        refuse: reject,
        cancelled: false,
      };
      this.#queue.push(waiter);
      if (signal) watch(signal, waiter);
    });
  }

  release(): void {
    while (this.#head < this.#queue.length) {
      const next = this.#queue[this.#head++];
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      if (next.cancelled) continue;
      next.grant();
      return;
    }
    this.#free++;
  }
}

export class Throttle {
  readonly limits: ThrottleLimits;
  readonly #global: Semaphore;
  readonly #hosts = new Map<string, { semaphore: Semaphore; users: number }>();
  #nextStart = 0;

  constructor(limits: ThrottleLimits) {
    this.limits = limits;
    this.#global = new Semaphore(Math.max(1, limits.concurrency));
  }

  /** Runs `work` once a global slot, a slot for `host` and the rate allow it. */
  async run<T>(host: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const entry = this.#hostEntry(host);
    try {
      await entry.semaphore.acquire(signal);
      try {
        await this.#global.acquire(signal);
        try {
          await this.#paced(signal);
          return await work();
        } finally {
          this.#global.release();
        }
      } finally {
        entry.semaphore.release();
      }
    } finally {
      if (--entry.users === 0) this.#hosts.delete(host);
    }
  }

  #hostEntry(host: string) {
    let entry = this.#hosts.get(host);
    if (!entry) {
      entry = { semaphore: new Semaphore(Math.max(1, this.limits.perHostConcurrency)), users: 0 };
      this.#hosts.set(host, entry);
    }
    entry.users++;
    return entry;
  }

  /** Spaces operation starts 1/rate seconds apart. */
  async #paced(signal?: AbortSignal): Promise<void> {
    if (this.limits.rateLimit <= 0) return;
    const now = Date.now();
    const start = Math.max(now, this.#nextStart);
    this.#nextStart = start + 1000 / this.limits.rateLimit;
    if (start > now) await abortableDelay(start - now, signal);
  }
}

/** setTimeout as a promise that rejects when the signal aborts. */
export function abortableDelay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
