/**
 * One HTTP exchange per hop, the way a scanner needs it: connections go to the address discovery
 * found (a name is pinned to its IP, so virtual hosts are reached without DNS), certificates are not
 * verified, bodies are cut at a bound (a compressed body is decompressed, and cut at the same bound
 * after decompression, so a gzip bomb costs no more than a plain page), header sections larger than a
 * bound are refused, redirects are followed by hand within the same host so every hop is checked
 * against the scope, and the run's signal and a time bound cancel everything.
 */
import { isIP } from "node:net";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { Agent, request } from "undici";
import { DEFAULTS } from "../../core/config.ts";
import type { DiscoverySettings } from "../module.ts";
import { deadline } from "./deadline.ts";
import { modernContext } from "./secure-contexts.ts";

export interface HttpExchange {
  url: string;
  method: string;
  /** What was sent, for an issue's proof. */
  requestHeaders: Record<string, string>;
  status: number;
  /** Lower-case names in the order received; repeated headers repeat. */
  headers: Array<[string, string]>;
  /** Decompressed when the server sent gzip, deflate or br. */
  body: Buffer;
  /** The body was longer than the bound (or its compression broken) and was cut. */
  truncated: boolean;
}

export interface FetchLimits {
  /** The whole exchange: connect, headers and body. */
  timeoutMs: number;
  /** Bytes of a body kept after decompression; also the most bytes read off the wire for one body. */
  maxBodyBytes: number;
  /** A larger response header section fails the request. */
  maxHeaderBytes: number;
  maxRedirects: number;
}

export const DEFAULT_LIMITS: FetchLimits = {
  timeoutMs: 5000,
  maxBodyBytes: DEFAULTS.httpMaxBodyBytes,
  maxHeaderBytes: DEFAULTS.httpMaxHeaderBytes,
  maxRedirects: DEFAULTS.httpMaxRedirects,
};

/** The fetch limits of a run's settings. */
export function fetchLimits(settings: DiscoverySettings): FetchLimits {
  return {
    timeoutMs: settings.timeoutMs,
    maxBodyBytes: settings.limits.httpMaxBodyBytes,
    maxHeaderBytes: settings.limits.httpMaxHeaderBytes,
    maxRedirects: settings.limits.httpMaxRedirects,
  };
}

const USER_AGENT = "Mozilla/5.0 (compatible; Sightline/0.1; attack-surface discovery)";

/** Header pairs from undici's object (set-cookie arrives as an array). */
function headerPairs(headers: Record<string, string | string[] | undefined>): Array<[string, string]> {
  return Object.entries(headers).flatMap(([name, value]) =>
    value === undefined
      ? []
      : (Array.isArray(value) ? value : [value]).map((v) => [name, v] as [string, string]),
  );
}

/** Bytes gathered up to a bound: `add` answers false once the bound is reached (the rest is dropped). */
class BoundedBuffer {
  readonly #chunks: Buffer[] = [];
  #size = 0;
  full = false;
  readonly #bound: number;

  constructor(bound: number) {
    this.#bound = bound;
  }

  add(chunk: Buffer): boolean {
    if (this.#size + chunk.length > this.#bound) {
      this.#chunks.push(chunk.subarray(0, this.#bound - this.#size));
      this.#size = this.#bound;
      this.full = true;
      return false;
    }
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    return true;
  }

  get bytes(): Buffer {
    return Buffer.concat(this.#chunks);
  }
}

/** A decompressor for the one Content-Encoding we understand, or undefined (the body is kept as sent). */
function decoderFor(encoding: string | undefined) {
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return createGunzip();
    case "deflate":
      return createInflate();
    case "br":
      return createBrotliDecompress();
    default:
      return undefined;
  }
}

/**
 * Reads a body up to `bound` bytes, decompressing it first if it is compressed, and never more than
 * `bound` bytes off the wire either: neither an endless body nor one that inflates to gigabytes (or to
 * nothing at all) costs more than the bound. A body cut short (the time bound, a reset, broken
 * compression) keeps what arrived and says it was truncated.
 */
async function readBoundedBody(
  body: Readable,
  encoding: string | undefined,
  bound: number,
): Promise<{ body: Buffer; truncated: boolean }> {
  const kept = new BoundedBuffer(bound);
  const decoder = decoderFor(encoding);
  let cut = false;
  /** An empty compressed body (a 204, a HEAD): nothing to decode, nothing cut. */
  let empty = false;
  try {
    let source: AsyncIterable<unknown> = body;
    if (decoder) {
      // Fed by hand rather than piped: nothing may reach the decoder once the wire bound ends it.
      let wire = 0;
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        empty = wire === 0;
        if (empty) decoder.destroy();
        else decoder.end();
      };
      body.on("data", (chunk: Buffer) => {
        if (ended) return;
        const room = bound - wire;
        wire += chunk.length;
        if (chunk.length > room) {
          cut = true;
          decoder.write(chunk.subarray(0, room));
          end();
          body.pause();
        } else if (!decoder.write(chunk)) body.pause();
      });
      decoder.on("drain", () => {
        if (!ended) body.resume();
      });
      body.on("end", end);
      body.on("error", (error) => decoder.destroy(error));
      source = decoder;
    }
    for await (const chunk of source) if (!kept.add(chunk as Buffer)) break;
  } catch {
    cut = !empty;
  } finally {
    decoder?.destroy();
    body.destroy();
  }
  return { body: kept.bytes, truncated: kept.full || cut };
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
        secureContext: modernContext(),
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
      maxHeaderSize: this.limits.maxHeaderBytes,
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

  /**
   * One request, no redirect following. Throws on network errors, time-outs and refusals. `options.body`
   * is sent as is (a template's POST); `options.maxBodyBytes` lowers the body bound for this request.
   */
  async fetch(
    url: string,
    method = "GET",
    extraHeaders: Record<string, string> = {},
    options: { body?: string | Buffer; maxBodyBytes?: number } = {},
  ): Promise<HttpExchange> {
    const target = new URL(url);
    if (!this.addressOf(target))
      throw new Error(`${target.hostname} is outside what discovery may touch, or has no known address`);
    const requestHeaders = { "user-agent": USER_AGENT, accept: "*/*", ...extraHeaders };
    const bound = deadline(this.#signal, this.limits.timeoutMs);
    try {
      const response = await request(target, {
        dispatcher: this.#agent,
        method: method as "GET",
        headers: requestHeaders,
        body: options.body,
        signal: bound.signal,
      });
      const encoding = response.headers["content-encoding"];
      const { body, truncated } = await readBoundedBody(
        response.body,
        typeof encoding === "string" ? encoding : undefined,
        Math.min(this.limits.maxBodyBytes, options.maxBodyBytes ?? Number.POSITIVE_INFINITY),
      );
      if (this.#signal.aborted) throw this.#signal.reason;
      return {
        url: target.href,
        method,
        requestHeaders,
        status: response.statusCode,
        headers: headerPairs(response.headers),
        body,
        truncated,
      };
    } finally {
      bound.done();
    }
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
