/**
 * A token bucket per client of failed authentication attempts: `perMinute` failures fill and drain it; a
 * client whose bucket is empty is answered 429 until a token comes back. Only failures take tokens, so a
 * valid key pair is never slowed down, not even from an address an attacker shares.
 */
import ipaddr from "ipaddr.js";

/**
 * Whose budget a failure counts against: an IPv4 address, or an IPv6 /64 (one host is usually given a
 * whole /64, so per-address buckets would let it rotate through 2^64 fresh budgets).
 */
export function clientOf(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address); // IPv4-mapped IPv6 becomes IPv4
  if (parsed.kind() === "ipv4") return parsed.toString();
  return `${(parsed as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(":")}::/64`;
}

export class FailureLimiter {
  readonly #capacity: number;
  readonly #perMs: number;
  readonly #now: () => number;
  readonly #maxClients: number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(perMinute: number, options: { now?: () => number; maxClients?: number } = {}) {
    this.#capacity = perMinute;
    this.#perMs = perMinute / 60_000;
    this.#now = options.now ?? (() => performance.now());
    this.#maxClients = options.maxClients ?? 100_000;
  }

  /**
   * Records one failure of `client`. Answers 0 while the client is within its budget, else the whole
   * seconds until it may fail again (for Retry-After).
   */
  fail(client: string): number {
    const now = this.#now();
    const bucket = this.#buckets.get(client);
    let tokens = this.#capacity;
    if (bucket) {
      tokens = Math.min(this.#capacity, bucket.tokens + (now - bucket.at) * this.#perMs);
      this.#buckets.delete(client); // re-inserted below: the map stays ordered by last failure
    } else if (this.#buckets.size >= this.#maxClients) {
      this.#forgetOldest(now);
    }
    if (tokens >= 1) {
      this.#buckets.set(client, { tokens: tokens - 1, at: now });
      return 0;
    }
    this.#buckets.set(client, { tokens, at: now });
    return Math.max(1, Math.ceil((1 - tokens) / this.#perMs / 1000));
  }

  /** Bounded memory under a flood of addresses: drop full buckets, then the longest quiet ones. */
  #forgetOldest(now: number) {
    for (const [client, bucket] of this.#buckets) {
      if (bucket.tokens + (now - bucket.at) * this.#perMs >= this.#capacity) this.#buckets.delete(client);
    }
    const excess = this.#buckets.size - Math.floor(this.#maxClients * 0.9);
    let dropped = 0;
    for (const client of this.#buckets.keys()) {
      if (dropped++ >= excess) break;
      this.#buckets.delete(client);
    }
  }

  get trackedClients(): number {
    return this.#buckets.size;
  }
}
