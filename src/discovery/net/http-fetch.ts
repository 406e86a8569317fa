/**
 * One HTTP exchange per hop, the way a scanner needs it: connections go to the address discovery
 * found (a name is pinned to its IP, so virtual hosts are reached without DNS), certificates are not
 * verified, bodies are cut at a bound (a compressed body is decompressed, and cut at the same bound
 * after decompression, so a gzip bomb costs no more than a plain page), header sections larger than a
 * bound are refused, redirects are followed by hand within the same host so every hop is checked
 * against the scope, and the run's signal and a time bound cancel everything.
 */
import { isIP } from "node:net";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { Agent, type Dispatcher } from "undici";
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

/** Header pairs from a header object (HTTP/2 gives one: set-cookie arrives as an array). */
function objectPairs(headers: Record<string, string | string[] | undefined>): Array<[string, string]> {
  return Object.entries(headers).flatMap(([name, value]) =>
    value === undefined
      ? []
      : (Array.isArray(value) ? value : [value]).map((v) => [name, v] as [string, string]),
  );
}

/**
 * Header pairs in the order received, from the raw name/value list HTTP/1.1 gives (undici's header
 * object groups repeated headers under their first occurrence).
 */
function headerPairs(raw: Buffer[] | string[] | Record<string, string | string[] | undefined>) {
  if (!Array.isArray(raw)) return objectPairs(raw);
  const pairs = new Array<[string, string]>(raw.length >> 1);
  for (let i = 0; i < raw.length; i += 2)
    pairs[i >> 1] = [latin1(raw[i]!).toLowerCase(), latin1(raw[i + 1]!)];
  return pairs;
}

/** Header bytes as undici reads them. */
const latin1 = (value: Buffer | string) => (typeof value === "string" ? value : value.toString("latin1"));

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
    return Buffer.concat(this.#chunks, this.#size);
  }
}

type Coding = "gzip" | "deflate" | "br";

/** The one Content-Encoding we decompress, or undefined (the body is kept as sent). */
function codingOf(encoding: string | string[] | undefined): Coding | undefined {
  if (typeof encoding !== "string") return undefined;
  switch (encoding.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return "gzip";
    case "deflate":
      return "deflate";
    case "br":
      return "br";
    default:
      return undefined;
  }
}

function decoderFor(coding: Coding) {
  if (coding === "gzip") return createGunzip();
  return coding === "deflate" ? createInflate() : createBrotliDecompress();
}

/** The reason the handler gives undici when it stops a response itself; never seen by callers. */
const STOPPED = new Error("response body bound reached");

/**
 * One request's undici dispatch handler. The body's chunks go straight into a BoundedBuffer (through a
 * decompressor if the body is compressed): undici's `request()` wraps each response in a Readable read
 * by async iteration, and at a scan's millions of requests that plumbing and its garbage were most of
 * the discovery thread's HTTP time. Never more than the bound is read off the wire either: once it is
 * reached the response is aborted (which closes its connection), so neither an endless body nor one that
 * inflates to gigabytes (or to nothing at all) costs more than the bound. The promise rejects if no
 * response arrived (a network error, a refusal, the time bound, a header section over its bound); a body
 * cut short (the time bound, a reset, broken compression) keeps what arrived and says it was truncated.
 * The handler is also the deadline's abort listener.
 */
class Exchange implements Dispatcher.DispatchHandler {
  status = 0;
  headers: Array<[string, string]> = [];
  body: Buffer = EMPTY;
  truncated = false;
  readonly #kept: BoundedBuffer;
  readonly #bound: number;
  readonly #resolve: (exchange: Exchange) => void;
  readonly #reject: (error: unknown) => void;
  #controller: Dispatcher.DispatchController | null = null;
  /** Why it ended before undici asked for the request (the time bound, the run's end). */
  #reason: unknown;
  #coding: Coding | undefined;
  #decoder: ReturnType<typeof decoderFor> | undefined;
  /** Compressed bytes read off the wire. */
  #wire = 0;
  /** A final response's headers arrived: from here on an error cuts the body rather than failing. */
  #started = false;
  /** The response ended on the wire (completed, or stopped at the wire bound). */
  #ended = false;
  #settled = false;

  constructor(bound: number, resolve: (exchange: Exchange) => void, reject: (error: unknown) => void) {
    this.#kept = new BoundedBuffer(bound);
    this.#bound = bound;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** The deadline's signal aborted. */
  handleEvent(event: Event): void {
    this.#fail((event.target as AbortSignal).reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.#settled) controller.abort(this.#reason as Error);
    else this.#controller = controller;
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // 1xx interim responses (100 Continue, 103 Early Hints) come before the final one.
    if (statusCode < 200 || this.#settled) return;
    this.#started = true;
    this.status = statusCode;
    this.headers = headerPairs(controller.rawHeaders ?? headers);
    this.#coding = codingOf(headers["content-encoding"]);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled || this.#ended) return;
    if (this.#coding === undefined) {
      if (!this.#kept.add(chunk)) this.#finish();
      return;
    }
    // Made at the first byte, so an empty compressed body (a HEAD, a 204) never touches zlib.
    this.#decoder ??= this.#decode(controller);
    const decoder = this.#decoder;
    const room = this.#bound - this.#wire;
    this.#wire += chunk.length;
    if (chunk.length > room) {
      // The wire bound: what fits is decoded, the response is stopped, and the body counts as cut.
      this.truncated = true;
      this.#ended = true;
      if (room > 0) decoder.write(chunk.subarray(0, room));
      decoder.end();
      controller.abort(STOPPED);
    } else if (!decoder.write(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    if (this.#settled || this.#ended) return;
    this.#ended = true;
    if (this.#decoder) this.#decoder.end();
    else this.#finish();
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    if (!this.#ended) this.#fail(error);
  }

  /** A decompressor fed by hand rather than piped: nothing may reach it once the wire bound ends it. */
  #decode(controller: Dispatcher.DispatchController) {
    const decoder = decoderFor(this.#coding!);
    decoder.on("data", (chunk: Buffer) => {
      if (!this.#settled && !this.#kept.add(chunk)) this.#finish();
    });
    decoder.on("drain", () => {
      if (!this.#ended) controller.resume();
    });
    decoder.on("end", () => this.#finish());
    decoder.on("error", () => {
      this.truncated = true;
      this.#finish();
    });
    return decoder;
  }

  /** Before the response: the request fails. During the body: the body is cut, keeping what arrived. */
  #fail(error: unknown): void {
    if (this.#settled) return;
    if (this.#started) {
      this.truncated = true;
      this.#finish();
      return;
    }
    this.#settled = true;
    this.#reason = error;
    this.#controller?.abort(error as Error);
    this.#reject(error);
  }

  #finish(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#decoder?.destroy();
    if (!this.#ended) {
      this.#ended = true;
      this.#controller?.abort(STOPPED);
    }
    if (this.#kept.full) this.truncated = true;
    this.body = this.#kept.bytes;
    this.#resolve(this);
  }
}

const EMPTY = Buffer.alloc(0);

/** undici's codes for a connection or a response that did not come in time. */
const TIMEOUT_CODES = new Set(["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT"]);

/** Whether a fetch failed because nothing came in time (not a refusal, a reset or the run's end). */
export function timedOut(error: unknown): boolean {
  if (error instanceof DOMException) return error.name === "TimeoutError";
  return TIMEOUT_CODES.has((error as { code?: unknown } | undefined)?.code as string);
}

/** The reason an agent's idle connections end with: made once, its stack formatted once. */
const CLOSED = new Error("the HTTP client was closed");

export class HttpClient {
  readonly #pins = new Map<string, string>();
  readonly #agent: Agent;
  readonly limits: FetchLimits;
  readonly #signal: AbortSignal;
  readonly #mayTouch: (address: string) => boolean;
  /** Requests dispatched and not yet answered or failed. */
  #inFlight = 0;

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
    this.#inFlight++;
    try {
      const { signal } = bound;
      if (signal.aborted) throw signal.reason;
      const exchange = await new Promise<Exchange>((resolve, reject) => {
        const handler = new Exchange(
          Math.min(this.limits.maxBodyBytes, options.maxBodyBytes ?? Number.POSITIVE_INFINITY),
          resolve,
          reject,
        );
        signal.addEventListener("abort", handler);
        this.#agent.dispatch(
          {
            origin: target.origin,
            path: target.search ? `${target.pathname}${target.search}` : target.pathname,
            method: method as Dispatcher.HttpMethod,
            headers: requestHeaders,
            body: options.body,
          },
          handler,
        );
      });
      if (this.#signal.aborted) throw this.#signal.reason;
      return {
        url: target.href,
        method,
        requestHeaders,
        status: exchange.status,
        headers: exchange.headers,
        body: exchange.body,
        truncated: exchange.truncated,
      };
    } finally {
      this.#inFlight--;
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

  /**
   * Ends the client's connections, letting requests in flight finish. With none in flight (the usual
   * case) its connections are destroyed at once: undici's `close` would make a stack-traced error per
   * pool, client and connection, each formatted again as its socket is destroyed (about 2% of the
   * template module's CPU per application).
   */
  async close(): Promise<void> {
    if (this.#inFlight === 0) await this.#agent.destroy(CLOSED);
    else await this.#agent.close();
  }
}
