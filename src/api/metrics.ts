/**
 * Metrics in the Prometheus text format at GET /metrics: HTTP requests by method, route and status, their
 * latency, process figures, and whatever other parts register (runs by state, queue depth, discovery tasks).
 * The registry is small and ours (no prom-client): counters and histograms that code updates, and gauges
 * whose values are collected at scrape time from a callback, so a gauge never goes stale.
 */
import { timingSafeEqual } from "node:crypto";
import fp from "fastify-plugin";
import { ApiError } from "../core/errors.ts";

export type Labels = Record<string, string>;
export interface Sample {
  labels?: Labels;
  value: number;
}
/** What a gauge's callback answers: one value, or one value per label set. */
export type GaugeValue = number | Sample[];

export interface Counter {
  inc(labels?: Labels, by?: number): void;
}
export interface Histogram {
  observe(labels: Labels, value: number): void;
}

type Family =
  | { kind: "counter"; help: string; values: Map<string, { labels: Labels; value: number }> }
  | { kind: "gauge"; help: string; collect: () => GaugeValue | Promise<GaugeValue> }
  | {
      kind: "histogram";
      help: string;
      buckets: number[];
      series: Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>;
    };

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

const escapeLabel = (value: string) =>
  value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
const escapeHelp = (value: string) => value.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");

function labelText(labels: Labels | undefined, extra?: [string, string]): string {
  const pairs = Object.entries(labels ?? {});
  if (extra) pairs.push(extra);
  if (pairs.length === 0) return "";
  return `{${pairs.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`;
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}

/**
 * A series' identity: its labels in a fixed key order, so the same set always lands in the same series.
 * Made on every request: plain concatenation, each value prefixed by its length so no two sets meet.
 */
function keyOf(labels: Labels): string {
  const names = Object.keys(labels);
  if (names.length > 1) names.sort();
  let key = "";
  for (const name of names) key += `${name}=${labels[name].length}:${labels[name]}`;
  return key;
}

export class MetricsRegistry {
  readonly #families = new Map<string, Family>();
  /** Called when a gauge's callback fails; the scrape goes on without it. */
  onCollectError: (name: string, error: unknown) => void = () => {};

  #add(name: string, family: Family) {
    if (!NAME.test(name)) throw new Error(`metric name "${name}" is not a valid Prometheus name`);
    if (this.#families.has(name)) throw new Error(`metric "${name}" is registered twice`);
    this.#families.set(name, family);
  }

  counter(name: string, help: string): Counter {
    const values = new Map<string, { labels: Labels; value: number }>();
    this.#add(name, { kind: "counter", help, values });
    return {
      inc(labels = {}, by = 1) {
        for (const label of Object.keys(labels))
          if (!LABEL.test(label)) throw new Error(`label "${label}" of ${name} is not a valid name`);
        const key = keyOf(labels);
        const entry = values.get(key);
        if (entry) entry.value += by;
        else values.set(key, { labels: { ...labels }, value: by });
      },
    };
  }

  /** A value read at scrape time: `collect` may query the store; a failure leaves the gauge out of that scrape. */
  gauge(name: string, help: string, collect: () => GaugeValue | Promise<GaugeValue>): void {
    this.#add(name, { kind: "gauge", help, collect });
  }

  histogram(name: string, help: string, buckets: number[]): Histogram {
    const sorted = [...buckets].sort((a, b) => a - b);
    const series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
    this.#add(name, { kind: "histogram", help, buckets: sorted, series });
    return {
      observe(labels, value) {
        const key = keyOf(labels);
        let entry = series.get(key);
        if (!entry) {
          entry = { labels: { ...labels }, counts: sorted.map(() => 0), sum: 0, count: 0 };
          series.set(key, entry);
        }
        for (let i = 0; i < sorted.length; i++) if (value <= sorted[i]) entry.counts[i]++;
        entry.sum += value;
        entry.count++;
      },
    };
  }

  /** The exposition text (format 0.0.4). */
  async render(): Promise<string> {
    const lines: string[] = [];
    for (const [name, family] of this.#families) {
      const header = [`# HELP ${name} ${escapeHelp(family.help)}`, `# TYPE ${name} ${family.kind}`];
      if (family.kind === "counter") {
        lines.push(...header);
        for (const { labels, value } of family.values.values())
          lines.push(`${name}${labelText(labels)} ${formatValue(value)}`);
      } else if (family.kind === "gauge") {
        let value: GaugeValue;
        try {
          value = await family.collect();
        } catch (error) {
          this.onCollectError(name, error);
          continue;
        }
        lines.push(...header);
        const samples = typeof value === "number" ? [{ value }] : value;
        for (const sample of samples)
          lines.push(`${name}${labelText(sample.labels)} ${formatValue(sample.value)}`);
      } else {
        lines.push(...header);
        for (const entry of family.series.values()) {
          family.buckets.forEach((bound, i) => {
            lines.push(
              `${name}_bucket${labelText(entry.labels, ["le", formatValue(bound)])} ${entry.counts[i]}`,
            );
          });
          lines.push(`${name}_bucket${labelText(entry.labels, ["le", "+Inf"])} ${entry.count}`);
          lines.push(`${name}_sum${labelText(entry.labels)} ${formatValue(entry.sum)}`);
          lines.push(`${name}_count${labelText(entry.labels)} ${entry.count}`);
        }
      }
    }
    return `${lines.join("\n")}\n`;
  }
}

declare module "fastify" {
  interface FastifyInstance {
    /** Register gauges and counters here (e.g. runs by state); they appear at GET /metrics. */
    metrics: MetricsRegistry;
    /** Counts an answered request (for answers written outside Fastify's lifecycle, see cached-answers.ts). */
    recordHttpRequest: RecordHttpRequest;
  }
}

export type RecordHttpRequest = (method: string, route: string, status: number, seconds: number) => void;

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

function processGauges(metrics: MetricsRegistry) {
  const started = Date.now() / 1000 - process.uptime();
  metrics.gauge("process_start_time_seconds", "Start time of the process since the Unix epoch.", () =>
    Math.round(started),
  );
  metrics.gauge("process_resident_memory_bytes", "Resident memory size in bytes.", () =>
    process.memoryUsage.rss(),
  );
  metrics.gauge("process_cpu_seconds_total", "User and system CPU time spent, in seconds.", () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  });
  metrics.gauge("nodejs_heap_used_bytes", "V8 heap in use, in bytes.", () => process.memoryUsage().heapUsed);
}

function tokenMatches(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * GET /metrics (outside /api, so API keys are not asked for). With a token configured it answers only
 * `Authorization: Bearer <token>`; without one it is open, like /healthz: it holds counts, never customer data.
 */
export const metricsEndpoint = fp<{ metrics: MetricsRegistry; token: string }>(async (app, options) => {
  const { metrics, token } = options;
  app.decorate("metrics", metrics);
  processGauges(metrics);
  metrics.onCollectError = (name, error) =>
    app.log.warn({ err: error, metric: name }, "a metric could not be collected");
  const requests = metrics.counter(
    "sightline_http_requests_total",
    "HTTP requests answered, by method, route template and status.",
  );
  const latency = metrics.histogram(
    "sightline_http_request_duration_seconds",
    "Time to answer HTTP requests, by method and route template.",
    LATENCY_BUCKETS,
  );

  const record: RecordHttpRequest = (method, route, status, seconds) => {
    requests.inc({ method, route, status: String(status) });
    latency.observe({ method, route }, seconds);
  };
  app.decorate("recordHttpRequest", record);
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
    reply.type("text/plain; version=0.0.4; charset=utf-8");
    return metrics.render();
  });
});
