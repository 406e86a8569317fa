/**
 * What the run machinery and discovery may record: counters, histograms, and gauges collected at scrape
 * time. The process that serves /metrics (src/app/metrics.ts) implements it.
 */
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

/**
 * Every metric declares the names of its labels up front (Prometheus clients do: a series is a fixed set
 * of labels); using another label is an error.
 */
export interface Metrics {
  counter(name: string, help: string, labelNames?: readonly string[]): Counter;
  gauge(
    name: string,
    help: string,
    collect: () => GaugeValue | Promise<GaugeValue>,
    labelNames?: readonly string[],
  ): void;
  histogram(name: string, help: string, buckets: number[], labelNames?: readonly string[]): Histogram;
}

/** A registry that also renders the Prometheus text exposition, as GET /metrics serves it. */
export interface MetricsExposition extends Metrics {
  render(): Promise<string>;
  /** The Content-Type of what render() writes. */
  readonly contentType: string;
  /** Told when a gauge's callback fails; the scrape goes on without it. */
  onCollectError: (name: string, error: unknown) => void;
}
