/**
 * The budget of failed authentication attempts per client, counted through @fastify/rate-limit. Only
 * failures are counted, so a valid key pair is never slowed down, not even from an address an attacker
 * shares. Where the count lives:
 *   - without Redis, in this process: a token bucket per client that `perMinute` failures fill and drain;
 *   - with REDIS_URL, in Redis (the plugin's Redis store, keys `<SIGHTLINE_REDIS_PREFIX>:auth-failures:<client>`),
 *     so every server behind a load balancer draws on one budget: `perMinute` failures per client in a
 *     one-minute window. While Redis cannot be reached, each process counts in its own bucket instead.
 * A client past its budget is answered 429 until the bucket has a token again or the window ends.
 */
import rateLimit, { type FastifyRateLimitStoreCtor } from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
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

/**
 * The bucket as a store of @fastify/rate-limit. The plugin reads only whether `current` passed `max` and,
 * when it did, `ttl`: the wait until the client's next token.
 */
function bucketStore(limiter: FailureLimiter): FastifyRateLimitStoreCtor {
  return class BucketStore {
    incr(
      client: string,
      callback: (error: Error | null, result: { current: number; ttl: number }) => void,
      _timeWindow: number,
      max: number,
    ) {
      const wait = limiter.fail(client);
      callback(null, wait > 0 ? { current: max + 1, ttl: wait * 1000 } : { current: max, ttl: 0 });
    }
    child() {
      return this;
    }
  };
}

export interface FailureBudget {
  /** Records one failure of the request's client: 0 while within its budget, else the whole seconds to wait. */
  fail(request: FastifyRequest): Promise<number>;
  /** Clients this process's own buckets track (with Redis: those counted here while it was unreachable). */
  readonly trackedClients: number;
}

/** How long a failure waits on Redis before this process counts it itself. */
const REDIS_WAIT_MS = 1000;

export async function failureBudget(
  app: FastifyInstance,
  settings: { perMinute: number; redisUrl: string; redisPrefix: string },
): Promise<FailureBudget> {
  const local = new FailureLimiter(settings.perMinute);
  const keyGenerator = (request: FastifyRequest) => clientOf(request.ip);
  // ioredis is loaded only when Redis is configured, as for the queue (test/app/loaded-dependencies.test.ts).
  const redis = settings.redisUrl
    ? new (await import("ioredis")).Redis(settings.redisUrl, {
        maxRetriesPerRequest: 1,
        commandTimeout: REDIS_WAIT_MS,
      })
    : undefined;
  if (redis) {
    redis.on("error", () => {}); // an outage is logged once below, when a failure has to be counted here
    app.addHook("onClose", async () => redis.disconnect());
  }
  await app.register(rateLimit, {
    global: false,
    max: settings.perMinute,
    timeWindow: 60_000,
    keyGenerator,
    ...(redis
      ? { redis, nameSpace: `${settings.redisPrefix}:auth-failures:` }
      : { store: bucketStore(local) }),
  });
  const count = app.createRateLimit();
  let redisDown = false;
  return {
    async fail(request) {
      try {
        const state = await count(request);
        if (redisDown) app.log.info("Redis answers again: failed key checks are counted there again.");
        redisDown = false;
        return !state.isAllowed && state.isExceeded ? Math.max(1, state.ttlInSeconds) : 0;
      } catch (error) {
        if (!redisDown)
          app.log.warn(
            { err: error },
            "Redis did not answer: failed key checks are counted by this process alone until it does.",
          );
        redisDown = true;
        return local.fail(keyGenerator(request));
      }
    },
    get trackedClients() {
      return local.trackedClients;
    },
  };
}
