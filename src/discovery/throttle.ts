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

/** A counting semaphore with a FIFO of waiters. */
class Semaphore {
  #free: number;
  readonly #waiters: Array<() => void> = [];

  constructor(size: number) {
    this.#free = size;
  }

  acquire(signal?: AbortSignal): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener("abort", cancel);
        resolve();
      };
      const cancel = () => {
        const index = this.#waiters.indexOf(grant);
        if (index >= 0) this.#waiters.splice(index, 1);
        reject(signal?.reason ?? new Error("aborted"));
      };
      if (signal?.aborted) return cancel();
      signal?.addEventListener("abort", cancel, { once: true });
      this.#waiters.push(grant);
    });
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#free++;
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
