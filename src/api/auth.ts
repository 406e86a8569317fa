/**
 * Authentication: every /api request carries SERVICE_ACCESS_KEY and SERVICE_SECRET_KEY. The user behind
 * the pair becomes `request.principal`; a missing, wrong or revoked pair answers 401, and a client that
 * keeps failing answers 429 until its failure budget refills (see failure-limit.ts: shared through Redis
 * when REDIS_URL is set).
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { ApiError, unauthorized } from "../core/errors.ts";
import type { Principal } from "../store/accounts.ts";
import { failureBudget } from "./failure-limit.ts";

/** Paths under /api that are public: the API reference itself. */
const PUBLIC = new Set(["/api/openapi.json"]);

/**
 * Whether the request needs keys. Decided on the route that will answer it, not on the raw URL: the
 * router decodes percent-escapes (`/%61pi/collections` reaches `/api/collections`), the raw URL does not.
 * Unmatched paths under /api also ask for keys, so probing without them learns nothing about routes.
 */
function needsKeys(request: FastifyRequest): boolean {
  const path = request.routeOptions.url ?? decodedPath(request.url);
  if (PUBLIC.has(path)) return false;
  return path === "/api" || path.startsWith("/api/");
}

/** The path of a URL as the router matches it: percent-escapes decoded, query dropped. */
export function decodedPath(url: string): string {
  const path = url.split("?")[0];
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/**
 * The access key for a log line when it has the shape of one we issue; anything else could be a secret
 * pasted into the wrong header, so it is not written down.
 */
function loggableAccessKey(value: unknown): string | null {
  if (typeof value !== "string" || value === "") return null;
  return /^SL[0-9A-Z]{8,40}$/.test(value) ? value : "(not shown: not shaped like an access key)";
}

const MISSING =
  "Send your API key pair in the SERVICE_ACCESS_KEY and SERVICE_SECRET_KEY headers (with underscores: a reverse proxy in front may drop such headers unless told to keep them).";
const INVALID = "The API key pair is not valid or has been revoked; check both keys or ask for a new pair.";

export const authentication = fp(async (app: FastifyInstance) => {
  const { accounts, config } = app.services;
  const limiter = await failureBudget(app, {
    perMinute: config.authFailureLimit,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
  });
  const failures = app.metrics.counter(
    "sightline_auth_failures_total",
    "Requests refused for a missing or invalid key pair, by outcome (unauthorized or rate_limited).",
    ["outcome"],
  );
  app.metrics.gauge(
    "sightline_auth_failing_clients",
    "Client addresses with recent authentication failures tracked by this process (with Redis: counted here while it was unreachable).",
    () => limiter.trackedClients,
  );

  app.decorateRequest("principal", undefined as unknown as Principal);
  app.addHook("onRequest", async (request, reply) => {
    if (!needsKeys(request)) return;
    const accessKey = request.headers.service_access_key;
    const secretKey = request.headers.service_secret_key;
    const given = typeof accessKey === "string" && typeof secretKey === "string" && accessKey && secretKey;
    // A valid pair always passes: only failures are limited, so others' failures never lock a user out.
    const principal = given ? await accounts.authenticate(accessKey, secretKey) : undefined;
    if (principal) {
      request.principal = principal;
      return;
    }
    // request.ip honours X-Forwarded-For only from proxies listed in SIGHTLINE_TRUST_PROXY.
    const wait = await limiter.fail(request);
    request.log.info(
      { accessKey: loggableAccessKey(accessKey), rateLimited: wait > 0 },
      "authentication failed",
    );
    if (wait > 0) {
      failures.inc({ outcome: "rate_limited" });
      reply.header("retry-after", String(wait));
      throw new ApiError(
        429,
        "rate_limited",
        `Too many failed authentication attempts from your address; wait ${wait} seconds, then retry with a valid key pair.`,
      );
    }
    failures.inc({ outcome: "unauthorized" });
    throw unauthorized(given ? INVALID : MISSING);
  });
});
