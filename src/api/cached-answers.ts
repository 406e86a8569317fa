/**
 * Repeat answers of result lists, written before the framework sees the request.
 *
 * A finished run's list answers are kept by the result cache (src/results/cache.ts). Once Fastify has
 * answered a URL from the cache, that URL passed routing and query validation, and its normalised query
 * is known; the next GET of the very same URL (same bytes) is answered here when everything else it
 * depends on checks out without the framework: the key pair is one this process read in the last
 * PRINCIPAL_REUSE_MS (secret verified), the collection with its latest finished run was read at most
 * COLLECTION_REUSE_MS ago and not changed by this process since, the caller's team sees it, and the cache holds
 * the answer under the same key Fastify would compute. Anything else — a key to read, a 404, a miss, a
 * request body, a closing server, an error — goes to Fastify unchanged, which answers as before.
 *
 * What the framework costs per request (routing, hooks, validation, a child logger, reply objects) was
 * most of a cached page's time: several times a plain node:http server's (bench/results.ts). Here the
 * same headers are written (X-Total-Count, Link, ETag, X-Cache, the representation headers, the request
 * id), the request is counted in /metrics under its route, and logged as Fastify logs requests.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { FastifyBaseLogger } from "fastify";
import { setBounded } from "../core/bounded-map.ts";
import type { CacheHit, ResultCache } from "../results/cache.ts";
import type { Page, ResultQueries } from "../results/query.ts";
import { type Encoding, negotiateEncoding } from "../results/stream.ts";
import type { AccountsRepository } from "../store/accounts.ts";
import { collectionsGeneration } from "../store/collection-changes.ts";
import {
  cachedAnswerHeaders,
  matchesEtag,
  nextPageLink,
  resultCacheKey,
  writeCachedAnswer,
} from "./list-answers.ts";
import { REQUEST_ID_HEADER, requestId } from "./logging.ts";
import type { RecordHttpRequest } from "./metrics.ts";

/** What Fastify established about a URL it answered from the cache. */
export interface KnownList {
  /** The route template, as metrics name it ("/api/collections/:collection_name/hosts"). */
  route: string;
  /** The list's path segment ("hosts"), part of the cache key. */
  path: string;
  collectionName: string;
  /** The validated query with its format, as `resultCacheKey` takes it. */
  query: object;
  page: Page;
  /** The Link header last made for this URL, with the total it was made for. */
  link?: { total: number; value: string | undefined };
  /** The cache key last made for this URL, with the collection read and the encoding it was made for. */
  key?: { collection: CollectionWithRun; encoding: Encoding; value: string };
}

/** The collection row with its latest finished run, as the results read it. */
export type CollectionWithRun = NonNullable<Awaited<ReturnType<ResultQueries["collectionWithLatestRun"]>>>;

/** URLs, and collections read for them, remembered at most (the oldest are forgotten first). */
const URLS_KEPT = 10_000;

/**
 * How long a read of a collection and its latest finished run answers requests. Changes made by this
 * process show at once, and so do those of processes sharing its Redis (BullMQ mode: a worker that
 * finished a run says so, src/runs/collection-change-relay.ts); any other (the CLI, a hand edit of the
 * database) within this bound.
 */
export const COLLECTION_REUSE_MS = 100;

/** Fastify's logger; pino's has isLevelEnabled, the silent one (logging off) has not. */
type Logger = FastifyBaseLogger & { isLevelEnabled?(level: string): boolean };

type FrameworkHandler = (request: IncomingMessage, response: ServerResponse) => void;

export class CachedAnswers {
  readonly #known = new Map<string, KnownList>();
  readonly #collections = new Map<
    string,
    { value: CollectionWithRun | undefined; generation: number; until: number }
  >();
  readonly #accounts: AccountsRepository;
  readonly #queries: ResultQueries;
  readonly #cache: ResultCache;
  /** Counts an answer in the result cache's metrics. */
  readonly #answered: (outcome: "hit" | "not_modified") => void;
  readonly #record: RecordHttpRequest;
  readonly #log: Logger;
  readonly #clientAddress: (request: IncomingMessage) => string | undefined;
  #stopped = false;

  constructor(options: {
    accounts: AccountsRepository;
    queries: ResultQueries;
    cache: ResultCache;
    answered: (outcome: "hit" | "not_modified") => void;
    record: RecordHttpRequest;
    log: Logger;
    /** The client's address as Fastify's `request.ip` gives it (X-Forwarded-For from trusted proxies). */
    clientAddress: (request: IncomingMessage) => string | undefined;
  }) {
    this.#accounts = options.accounts;
    this.#queries = options.queries;
    this.#cache = options.cache;
    this.#answered = options.answered;
    this.#record = options.record;
    this.#log = options.log;
    this.#clientAddress = options.clientAddress;
  }

  /** Puts this in front of the framework's request handler on `server`. */
  install(server: Server): void {
    const [framework] = server.listeners("request") as FrameworkHandler[];
    if (!framework)
      throw new Error("the HTTP server has no request handler to put cached answers in front of");
    server.removeListener("request", framework);
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      const list = this.#stopped || request.method !== "GET" ? undefined : this.#known.get(request.url ?? "");
      if (!list) return framework(request, response);
      this.#answer(request, response, list).then(
        (answered) => answered || framework(request, response),
        (error: unknown) => {
          this.#log.warn({ err: error }, "a cached answer failed; the framework answers instead");
          if (!response.headersSent) framework(request, response);
          else response.destroy();
        },
      );
    });
  }

  /** From now on every request goes to the framework (the server is closing: it answers those). */
  stop(): void {
    this.#stopped = true;
  }

  /** Remembers a URL Fastify has just answered from the cache. */
  remember(url: string, list: KnownList): void {
    if (!this.#known.has(url)) setBounded(this.#known, url, list, URLS_KEPT);
  }

  /**
   * The collection with its latest finished run, as read at most COLLECTION_REUSE_MS ago and not since
   * a change made in this process (collection-changes.ts). Reading it for every request cost more than
   * the rest of the answer.
   */
  async #collection(accountId: number, name: string): Promise<CollectionWithRun | undefined> {
    const key = `${accountId}/${name}`;
    const generation = collectionsGeneration();
    const kept = this.#collections.get(key);
    if (kept && kept.generation === generation && kept.until > performance.now()) return kept.value;
    const value = await this.#queries.collectionWithLatestRun(accountId, name);
    // A read that spans a change is used once, not kept.
    if (collectionsGeneration() !== generation) return value;
    const until = performance.now() + COLLECTION_REUSE_MS;
    setBounded(this.#collections, key, { value, generation, until }, URLS_KEPT);
    return value;
  }

  /** Answers from the cache and says true, or says false having written nothing. */
  async #answer(request: IncomingMessage, response: ServerResponse, list: KnownList): Promise<boolean> {
    const started = performance.now();
    const { headers } = request;
    const accessKey = headers.service_access_key;
    const secretKey = headers.service_secret_key;
    // A request with a body (or one that says it is encoded) is the framework's to refuse or read.
    if (typeof accessKey !== "string" || typeof secretKey !== "string") return false;
    if (headers["content-length"] !== undefined || headers["transfer-encoding"] !== undefined) return false;
    if (headers["content-encoding"] !== undefined) return false;
    const principal = this.#accounts.rememberedPrincipal(accessKey, secretKey);
    if (!principal) return false;
    const collection = await this.#collection(principal.accountId, list.collectionName);
    if (!collection?.latestRun || !principal.teamIds.includes(collection.team_id)) return false;
    const encoding = negotiateEncoding(headers["accept-encoding"]);
    // The key Fastify made for this URL: nothing read besides the run (see KnownList). It is a function
    // of the collection read (reused for COLLECTION_REUSE_MS) and the encoding, so made once per pair.
    if (list.key?.collection !== collection || list.key.encoding !== encoding)
      list.key = {
        collection,
        encoding,
        value: resultCacheKey(list.path, collection, collection.latestRun, list.query, encoding, [undefined]),
      };
    const hit = this.#cache.lookup(list.key.value);
    if (!hit) return false;
    this.#write(request, response, list, hit, started);
    return true;
  }

  #write(
    request: IncomingMessage,
    response: ServerResponse,
    list: KnownList,
    hit: CacheHit,
    started: number,
  ) {
    const { entry } = hit;
    const reqId = requestId(request);
    const log = this.#log.isLevelEnabled?.("info") ? this.#log.child({ reqId }) : undefined;
    log?.info(
      {
        req: {
          method: request.method,
          url: request.url,
          ip: this.#clientAddress(request),
          headers: request.headers,
        },
      },
      "incoming request",
    );
    // The link depends on the URL, the page and the total: made once per URL and total.
    if (list.link?.total !== entry.headers.total)
      list.link = {
        total: entry.headers.total,
        value: nextPageLink(request.url ?? "", list.page, entry.headers.total),
      };
    const notModified = matchesEtag(request.headers["if-none-match"], entry.etag);
    this.#answered(notModified ? "not_modified" : "hit");
    response.on("finish", () => {
      const seconds = (performance.now() - started) / 1000;
      this.#record("GET", list.route, response.statusCode, seconds);
      log?.info(
        { res: { statusCode: response.statusCode }, responseTime: seconds * 1000 },
        "request completed",
      );
    });
    writeCachedAnswer(response, hit, notModified, {
      ...cachedAnswerHeaders(entry, list.link.value, notModified),
      [REQUEST_ID_HEADER]: reqId,
    });
  }
}
