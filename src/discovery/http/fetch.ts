/**
 * One HTTP exchange per hop, the way a scanner needs it: connections go to the address discovery
 * found (a name is pinned to its IP, so virtual hosts are reached without DNS), certificates are not
 * verified, bodies are cut at a bound, redirects are followed by hand within the same host so every
 * hop is checked against the scope, and the run's signal and a time bound cancel everything.
 */
import { isIP } from "node:net";
import { Agent, request } from "undici";

export interface HttpExchange {
  url: string;
  method: string;
  /** What was sent, for an issue's proof. */
  requestHeaders: Record<string, string>;
  status: number;
  /** Lower-case names in the order received; repeated headers repeat. */
  headers: Array<[string, string]>;
  body: Buffer;
  /** The body was longer than the bound and was cut. */
  truncated: boolean;
}

export interface FetchLimits {
  timeoutMs: number;
  maxBodyBytes: number;
  maxRedirects: number;
}

export const DEFAULT_LIMITS: FetchLimits = { timeoutMs: 5000, maxBodyBytes: 512 * 1024, maxRedirects: 5 };

const USER_AGENT = "Mozilla/5.0 (compatible; Sightline/0.1; attack-surface discovery)";

/** Header pairs from undici's object (set-cookie arrives as an array). */
function headerPairs(headers: Record<string, string | string[] | undefined>): Array<[string, string]> {
  return Object.entries(headers).flatMap(([name, value]) =>
    value === undefined
      ? []
      : (Array.isArray(value) ? value : [value]).map((v) => [name, v] as [string, string]),
  );
}

export class HttpClient {
  readonly #pins = new Map<string, string>();
  readonly #agent: Agent;
  readonly limits: FetchLimits;
  readonly #signal: AbortSignal;
  readonly #mayTouch: (address: string) => boolean;

  /**
   * `pins` maps host names to the address to connect to. `mayTouch` is asked about every host name
   * and address before a request goes out.
   */
  constructor(options: {
    pins?: Record<string, string>;
    limits?: Partial<FetchLimits>;
    signal: AbortSignal;
    mayTouch: (address: string) => boolean;
  }) {
    for (const [name, address] of Object.entries(options.pins ?? {}))
      this.#pins.set(name.toLowerCase(), address);
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.#signal = options.signal;
    this.#mayTouch = options.mayTouch;
    this.#agent = new Agent({
      connect: {
        rejectUnauthorized: false,
        timeout: this.limits.timeoutMs,
        lookup: (hostname, lookupOptions, callback) => {
          const address = this.#pins.get(hostname.toLowerCase());
          if (!address) {
            const error = Object.assign(new Error(`${hostname} has no known address`), { code: "ENOTFOUND" });
            return (callback as (error: Error) => void)(error);
          }
          const family = isIP(address);
          if ((lookupOptions as { all?: boolean }).all)
            (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
              { address, family },
            ]);
          else (callback as (e: null, a: string, f: number) => void)(null, address, family);
        },
      },
      headersTimeout: this.limits.timeoutMs,
      bodyTimeout: this.limits.timeoutMs,
      keepAliveTimeout: 1000,
      connections: 4,
    });
  }

  /** The address a URL's host connects to, if it may be touched at all. */
  addressOf(url: URL): string | undefined {
    const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
    const address = isIP(host) ? host : this.#pins.get(host);
    if (!address) return undefined;
    return this.#mayTouch(address) && (isIP(host) || this.#mayTouch(host)) ? address : undefined;
  }

  /** One request, no redirect following. Throws on network errors, time-outs and refusals. */
  async fetch(url: string, method = "GET", extraHeaders: Record<string, string> = {}): Promise<HttpExchange> {
    const target = new URL(url);
    if (!this.addressOf(target))
      throw new Error(`${target.hostname} is outside what discovery may touch, or has no known address`);
    const requestHeaders = { "user-agent": USER_AGENT, accept: "*/*", ...extraHeaders };
    const signal = AbortSignal.any([this.#signal, AbortSignal.timeout(this.limits.timeoutMs)]);
    const response = await request(target, {
      dispatcher: this.#agent,
      method: method as "GET",
      headers: requestHeaders,
      signal,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    try {
      for await (const chunk of response.body) {
        const bytes = chunk as Buffer;
        if (size + bytes.length > this.limits.maxBodyBytes) {
          chunks.push(bytes.subarray(0, this.limits.maxBodyBytes - size));
          truncated = true;
          break;
        }
        chunks.push(bytes);
        size += bytes.length;
      }
    } finally {
      if (truncated) response.body.destroy();
    }
    return {
      url: target.href,
      method,
      requestHeaders,
      status: response.statusCode,
      headers: headerPairs(response.headers),
      body: Buffer.concat(chunks),
      truncated,
    };
  }

  /**
   * Follows redirects within the same host (scheme and port may change). A redirect elsewhere ends
   * the chain: it is recorded, and that host is discovery's to probe on its own.
   */
  async fetchFollowing(url: string): Promise<{ final: HttpExchange; chain: string[]; first: HttpExchange }> {
    const chain: string[] = [];
    let current = await this.fetch(url);
    const first = current;
    for (let hop = 0; hop < this.limits.maxRedirects; hop++) {
      const location = current.headers.find(([name]) => name === "location")?.[1];
      if (current.status < 300 || current.status >= 400 || !location) break;
      let next: URL;
      try {
        next = new URL(location, current.url);
      } catch {
        break;
      }
      chain.push(current.url);
      if (
        !/^https?:$/.test(next.protocol) ||
        next.hostname !== new URL(current.url).hostname ||
        !this.addressOf(next)
      ) {
        chain.push(next.href);
        break;
      }
      current = await this.fetch(next.href);
    }
    return { final: current, chain, first };
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}
