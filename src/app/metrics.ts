/**
 * The process's metrics registry, over prom-client: its default process and Node.js metrics
 * (process_cpu_seconds_total, process_resident_memory_bytes, nodejs_eventloop_lag_seconds, heap, GC, …)
 * and what the other parts register through the small interface of src/core/metrics.ts — counters and
 * histograms that code updates, and gauges whose values are collected at scrape time from a callback, so
 * a gauge never goes stale. GET /metrics on the server (src/api/metrics.ts) and on `sightline worker
 * --metrics-port` (src/app/worker.ts) render it in the Prometheus text format.
 */
import { timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import client from "prom-client";
import { buildInfo } from "../core/build-info.ts";
import type { Counter, GaugeValue, Histogram, Labels, MetricsExposition } from "../core/metrics.ts";

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

const GAUGES_NAMED_AS_COUNTERS = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
];

export class MetricsRegistry implements MetricsExposition {
  readonly registry = new client.Registry();
  /** Called when a gauge's callback fails; that scrape shows no value for it (NaN when it has no labels). */
  onCollectError: (name: string, error: unknown) => void = () => {};

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics !== false) {
      client.collectDefaultMetrics({ register: this.registry });
      // Gauges named like counters, which `promtool check metrics` refuses; the same figures are there
      // by type in nodejs_active_handles, nodejs_active_requests and nodejs_active_resources.
      for (const name of GAUGES_NAMED_AS_COUNTERS) this.registry.removeSingleMetric(name);
    }
    // The heap figure this project served before prom-client, kept under its name for dashboards.
    this.gauge("nodejs_heap_used_bytes", "V8 heap in use, in bytes.", () => process.memoryUsage().heapUsed);
    const { version, commit } = buildInfo();
    this.gauge(
      "sightline_build_info",
      "The release and commit this process runs: always 1, with them as labels.",
      () => [{ labels: { version, commit }, value: 1 }],
      ["version", "commit"],
    );
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  #check(name: string) {
    if (!NAME.test(name)) throw new Error(`metric name "${name}" is not a valid Prometheus name`);
    if (this.registry.getSingleMetric(name)) throw new Error(`metric "${name}" is registered twice`);
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    this.#check(name);
    const counter = new client.Counter({ name, help, labelNames, registers: [this.registry] });
    return {
      inc(labels: Labels = {}, by = 1) {
        counter.inc(labels, by);
      },
    };
  }

  /** A value read at scrape time: `collect` may query the store; a failure leaves the gauge empty for that scrape. */
  gauge(
    name: string,
    help: string,
    collect: () => GaugeValue | Promise<GaugeValue>,
    labelNames: readonly string[] = [],
  ): void {
    this.#check(name);
    const registry = this;
    new client.Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        let value: GaugeValue;
        try {
          value = await collect();
        } catch (error) {
          registry.onCollectError(name, error);
          this.reset();
          if (labelNames.length === 0) this.set(Number.NaN);
          return;
        }
        this.reset();
        if (typeof value === "number") this.set(value);
        else for (const sample of value) this.set(sample.labels ?? {}, sample.value);
      },
    });
  }

  histogram(name: string, help: string, buckets: number[], labelNames: readonly string[] = []): Histogram {
    this.#check(name);
    const histogram = new client.Histogram({ name, help, buckets, labelNames, registers: [this.registry] });
    return {
      observe(labels, value) {
        histogram.observe(labels, value);
      },
    };
  }

  /** The exposition text (format 0.0.4). */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}

/**
 * A process without the API (`sightline worker`) serves its registry on its own port: GET /metrics, with
 * the same optional bearer token as the server's; anything else is a 404.
 */
export async function serveMetrics(
  metrics: MetricsExposition,
  options: { host: string; port: number; token: string },
): Promise<{ url: string; close(): Promise<void> }> {
  const expected = Buffer.from(`Bearer ${options.token}`);
  const server = createServer((request, response) => {
    const path = (request.url ?? "").split("?")[0];
    if (request.method !== "GET" || path !== "/metrics") {
      response
        .writeHead(404, { "content-type": "text/plain; charset=utf-8" })
        .end("Only GET /metrics is here.\n");
      return;
    }
    if (options.token) {
      const given = Buffer.from(request.headers.authorization ?? "");
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        response
          .writeHead(401, {
            "content-type": "text/plain; charset=utf-8",
            "www-authenticate": 'Bearer realm="metrics"',
          })
          .end("Send the metrics token as Authorization: Bearer <token> (SIGHTLINE_METRICS_TOKEN).\n");
        return;
      }
    }
    metrics.render().then(
      (text) => response.writeHead(200, { "content-type": metrics.contentType }).end(text),
      () => response.writeHead(500, { "content-type": "text/plain; charset=utf-8" }).end("Metrics failed.\n"),
    );
  });
  // A scraper's connection never holds a shutdown.
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
