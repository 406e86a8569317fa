/**
 * GET /metrics and the HTTP request metrics, over the process's metrics registry (src/app/metrics.ts).
 */
import { timingSafeEqual } from "node:crypto";
import fp from "fastify-plugin";
import { ApiError } from "../core/errors.ts";
import type { MetricsExposition } from "../core/metrics.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** Register gauges and counters here (e.g. runs by state); they appear at GET /metrics. */
    metrics: MetricsExposition;
  }
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

function tokenMatches(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * GET /metrics (outside /api, so API keys are not asked for). With a token configured it answers only
 * `Authorization: Bearer <token>`; without one it is open, like /healthz: it holds counts, never customer data.
 */
export const metricsEndpoint = fp<{ metrics: MetricsExposition; token: string }>(async (app, options) => {
  const { metrics, token } = options;
  app.decorate("metrics", metrics);
  metrics.onCollectError = (name, error) =>
    app.log.warn({ err: error, metric: name }, "a metric could not be collected");
  const requests = metrics.counter(
    "sightline_http_requests_total",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
  );
  const latency = metrics.histogram(
    "sightline_http_request_duration_seconds",
    "Time to answer HTTP requests, by method and route template.",
    LATENCY_BUCKETS,
    ["method", "route"],
  );

  const record = (method: string, route: string, status: number, seconds: number) => {
    requests.inc({ method, route, status: String(status) });
    latency.observe({ method, route }, seconds);
  };
  app.addHook("onResponse", async (request, reply) => {
    // The route template, never the raw path: one series per endpoint, whatever names clients send.
    record(
      request.method,
      request.routeOptions.url ?? "unmatched",
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
  });

  app.get("/metrics", { schema: { hide: true } }, async (request, reply) => {
    if (token) {
      const header = request.headers.authorization ?? "";
      const given = header.startsWith("Bearer ") ? header.slice(7) : "";
      if (!tokenMatches(given, token)) {
        reply.header("www-authenticate", 'Bearer realm="metrics"');
        throw new ApiError(
          401,
          "unauthorized",
          "Send the metrics token as Authorization: Bearer <token> (SIGHTLINE_METRICS_TOKEN).",
        );
      }
    }
    reply.type(metrics.contentType);
    return metrics.render();
  });
});
