/**
 * The one HTTP client of the passive sources (outside services Sightline asks about names, not targets).
 * Every request: goes to the source's configured base URL only (redirects are not followed: a source
 * that redirects fails with the redirect's target named, so neither a loop nor a hop to an address the
 * operator did not configure costs anything), is paced at the source's rate, is bounded in time (the
 * whole exchange, body included, so a slow drip ends at the bound) and in bytes (the body is cut at the
 * bound and marked truncated), and is retried on 429 and 5xx with exponential backoff honouring
 * `Retry-After`, a bounded number of times. Keys travel in headers or the query as the source asks and
 * never appear in a failure's sentence.
 */
import { Agent, type Dispatcher } from "undici";
import { deadline } from "./deadline.ts";

export interface SourceClientOptions {
  /** The source's id: its pace is shared by every client of the process asking it. */
  id: string;
  baseUrl: string;
  requestsPerMinute: number;
  timeoutMs: number;
  maxBytes: number;
  retries: number;
  signal: AbortSignal;
  /** Longest wait a Retry-After may ask for before the request counts as rate-limited and failed. */
  maxRetryWaitMs?: number;
  /** First backoff wait; doubled each retry. */
  backoffMs?: number;
}

export interface SourceAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** The body was longer than the byte bound and was cut there. */
  truncated: boolean;
}

export interface SourceRequest {
  /** Path and query, appended to the base URL. */
  path: string;
  query?: Record<string, string | number | undefined>;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
}

/** Why a source gave nothing: a sentence for the run's status (no key, no URL credentials in it). */
export class SourceFailure extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(reason);
    this.reason = reason;
  }
}

/** When each source may be asked next, in this process: its rate is a property of the source. */
const nextStart = new Map<string, number>();

const USER_AGENT = "Sightline (attack-surface discovery; passive sources)";

/** One agent for every source: connections to outside services, verified TLS, no redirects. */
let agent: Agent | undefined;
const sharedAgent = () => {
  agent ??= new Agent({ keepAliveTimeout: 4000, connections: 8 });
  return agent;
};

export class SourceClient {
  readonly #options: Required<SourceClientOptions>;
  readonly #base: URL;
  requests = 0;
  /** Requests answered with a usable body (a 2xx, and for JSON one that parsed). */
  answered = 0;
  rateLimited = 0;

  constructor(options: SourceClientOptions) {
    this.#options = { maxRetryWaitMs: 60_000, backoffMs: 500, ...options };
    this.#base = new URL(options.baseUrl.endsWith("/") ? options.baseUrl : `${options.baseUrl}/`);
  }

  /** The URL a request goes to: the base URL's path, then the request's path and query. */
  urlOf(request: SourceRequest): URL {
    const url = new URL(request.path.replace(/^\//, ""), this.#base);
    for (const [name, value] of Object.entries(request.query ?? {}))
      if (value !== undefined) url.searchParams.set(name, String(value));
    return url;
  }

  /**
   * One answer with a 2xx status (or a status `accept` lets through: a source's "no results" 404),
   * after the retries 429 and 5xx earn. Throws SourceFailure otherwise.
   */
  async request(
    request: SourceRequest,
    accept: (status: number) => boolean = () => false,
  ): Promise<SourceAnswer> {
    const { retries, backoffMs } = this.#options;
    for (let attempt = 0; ; attempt++) {
      const answer = await this.#once(request);
      if ((answer.status >= 200 && answer.status < 300) || accept(answer.status)) {
        this.answered++;
        return answer;
      }
      const retriable = answer.status === 429 || answer.status >= 500;
      if (answer.status === 429) this.rateLimited++;
      if (answer.status >= 300 && answer.status < 400)
        throw new SourceFailure(
          `http ${answer.status}: redirected to ${redirectTarget(answer.headers.location)}, not followed`,
        );
      if (!retriable || attempt >= retries)
        throw new SourceFailure(
          `http ${answer.status}${retriable && retries > 0 ? ` after ${attempt + 1} tries` : ""}`,
        );
      const asked = retryAfterMs(answer.headers["retry-after"]);
      if (asked !== undefined && asked > this.#options.maxRetryWaitMs)
        throw new SourceFailure(
          `http ${answer.status}: asked to wait ${Math.ceil(asked / 1000)} s (Retry-After), longer than ${this.#options.maxRetryWaitMs / 1000} s`,
        );
      await this.#sleep(asked ?? backoffMs * 2 ** attempt);
    }
  }

  /** A JSON answer, parsed; a cut or malformed body is a parse error. */
  async json<T>(
    request: SourceRequest,
    accept?: (status: number) => boolean,
  ): Promise<{ status: number; value: T }> {
    const answer = await this.request(request, accept);
    try {
      return { status: answer.status, value: parseJson<T>(answer, this.#options.maxBytes) };
    } catch (error) {
      // An answer that is not JSON (or cut) is not a usable one: a source answering garbage has failed.
      this.answered--;
      throw error;
    }
  }

  /** A text answer; a cut one keeps its complete lines (`truncated` says it was cut). */
  async text(request: SourceRequest): Promise<{ text: string; truncated: boolean }> {
    const answer = await this.request(request);
    let text = answer.body.toString("utf8");
    if (answer.truncated) text = text.slice(0, Math.max(0, text.lastIndexOf("\n")));
    return { text, truncated: answer.truncated };
  }

  async #once(request: SourceRequest): Promise<SourceAnswer> {
    await this.#pace();
    this.requests++;
    const { timeoutMs, maxBytes, signal } = this.#options;
    const url = this.urlOf(request);
    const bound = deadline(signal, timeoutMs);
    try {
      const response = await sharedAgent().request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: request.method ?? "GET",
        headers: {
          "user-agent": USER_AGENT,
          accept: "application/json, text/plain;q=0.9, */*;q=0.5",
          ...(request.body ? { "content-type": "application/json" } : {}),
          ...request.headers,
        },
        body: request.body,
        signal: bound.signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      } as Dispatcher.RequestOptions);
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        if (size + chunk.length > maxBytes) {
          chunks.push(chunk.subarray(0, maxBytes - size));
          size = maxBytes;
          truncated = true;
          response.body.destroy();
          break;
        }
        chunks.push(chunk);
        size += chunk.length;
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(response.headers))
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
      return { status: response.statusCode, headers, body: Buffer.concat(chunks, size), truncated };
    } catch (error) {
      if (signal.aborted) throw error;
      if (bound.signal.aborted || isTimeout(error))
        throw new SourceFailure(`time-out: no whole answer within ${timeoutMs} ms`);
      throw new SourceFailure(`network: ${networkReason(error)}`);
    } finally {
      bound.done();
    }
  }

  /** Waits for the source's next start (its rate is shared by the process's clients of it). */
  async #pace(): Promise<void> {
    const interval = 60_000 / Math.max(1, this.#options.requestsPerMinute);
    const now = Date.now();
    const start = Math.max(now, nextStart.get(this.#options.id) ?? 0);
    nextStart.set(this.#options.id, start + interval);
    if (start > now) await this.#sleep(start - now);
  }

  #sleep(ms: number): Promise<void> {
    const { signal } = this.#options;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}

/** JSON of an answer: a cut body says so, a malformed one names what the parser saw. */
export function parseJson<T>(answer: Pick<SourceAnswer, "body" | "truncated">, maxBytes: number): T {
  if (answer.truncated)
    throw new SourceFailure(
      `too large: the answer was longer than ${maxBytes} bytes (SIGHTLINE_SOURCE_MAX_BYTES)`,
    );
  try {
    return JSON.parse(answer.body.toString("utf8")) as T;
  } catch (error) {
    throw new SourceFailure(`parse error: ${(error as Error).message.slice(0, 120)}`);
  }
}

/** A Retry-After's wait: delta seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

const isTimeout = (error: unknown) => {
  const code = (error as { code?: string }).code;
  return (
    (error instanceof DOMException && error.name === "TimeoutError") ||
    code === "UND_ERR_HEADERS_TIMEOUT" ||
    code === "UND_ERR_BODY_TIMEOUT" ||
    code === "UND_ERR_CONNECT_TIMEOUT"
  );
};

const networkReason = (error: unknown) => {
  const cause = (error as { cause?: { code?: string } }).cause;
  return (error as { code?: string }).code ?? cause?.code ?? (error as Error).message ?? String(error);
};

/** A redirect's target without its query (which may carry credentials). */
const redirectTarget = (location: string | undefined) => {
  if (!location) return "nowhere";
  try {
    const url = new URL(location, "http://source.invalid");
    return `${url.origin === "http://source.invalid" ? "" : url.origin}${url.pathname}`;
  } catch {
    return "an unreadable location";
  }
};
