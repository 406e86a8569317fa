/**
 * A collection at a glance: the overview's counts, issues by severity, the most common open ports and
 * products, and how the counts changed over the finished runs.
 */
import type { ComponentChildren } from "preact";
import { SEVERITIES } from "../../../core/severities.ts";
import { collectionPath } from "../api.ts";
import { BarChart, LineChart, type Series } from "../components/charts.tsx";
import { Empty, ErrorNote, Loading } from "../components/notice.tsx";
import { fieldLabel, toNumber } from "../format.ts";
import type { Host, Issue, Product } from "../model.ts";
import { type Resource, useApi } from "../use-api.ts";

type Overview = Record<string, unknown>;

function Loaded<T>({
  resource,
  what,
  children,
}: {
  resource: Resource<T>;
  what: string;
  children: (data: T) => ComponentChildren;
}) {
  if (resource.loading) return <Loading what={what} />;
  if (resource.error) return <ErrorNote error={resource.error} onRetry={() => resource.reload()} />;
  if (resource.data === undefined) return null;
  return <>{children(resource.data)}</>;
}

function ChartPanel({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section class="chart-panel" aria-label={title}>
      <h3>{title}</h3>
      {children}
    </section>
  );
}

/** The overview's top-level counts (plain or decimal-exponent numbers) as tiles. */
function Tiles({ overview }: { overview: Overview }) {
  const counts = Object.entries(overview).filter(
    ([, value]) =>
      (typeof value === "number" || typeof value === "string") && Number.isFinite(toNumber(value)),
  );
  if (counts.length === 0) return null;
  return (
    <ul class="tiles">
      {counts.map(([key, value]) => (
        <li key={key} class="tile">
          <span class="tile-value">{toNumber(value).toLocaleString("en")}</span>
          <span class="tile-label">{fieldLabel(key)}</span>
        </li>
      ))}
    </ul>
  );
}

/** Per-run counts from the overview: the first array of objects that carry numbers over runs. */
function history(overview: Overview): { labels: string[]; series: Series[] } | undefined {
  const candidate = Object.values(overview).find(
    (value): value is Overview[] =>
      Array.isArray(value) &&
      value.length > 0 &&
      value.every((v) => v && typeof v === "object" && ("run_id" in v || "run" in v)),
  );
  if (!candidate) return undefined;
  const points = [...candidate].sort((a, b) => Number(a.run_id ?? a.run) - Number(b.run_id ?? b.run));
  const fields = Object.keys(points[0]).filter(
    (key) =>
      !["run_id", "run", "id"].includes(key) &&
      points.every((point) => Number.isFinite(toNumber(point[key]))),
  );
  return {
    labels: points.map((point) => `Run ${point.run_id ?? point.run}`),
    series: fields.map((field) => ({
      name: fieldLabel(field),
      values: points.map((point) => toNumber(point[field])),
    })),
  };
}

function countBy<T>(items: T[], key: (item: T) => string): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1]);
}

export function OverviewSection({ name }: { name: string }) {
  const overview = useApi<Overview>(collectionPath(name, "/overview"));
  const issues = useApi<Issue[]>(collectionPath(name, "/issues"));
  const hosts = useApi<Record<string, Host>>(collectionPath(name, "/hosts"));
  const products = useApi<Product[]>(collectionPath(name, "/products"));
  const runsLink = <a href={`/collections/${encodeURIComponent(name)}/runs`}>the runs</a>;

  return (
    <section aria-labelledby="overview-heading">
      <h2 id="overview-heading">Overview</h2>
      <Loaded resource={overview} what="the overview">
        {(data) => (data && typeof data === "object" ? <Tiles overview={data} /> : null)}
      </Loaded>
      <div class="charts">
        <ChartPanel title="Issues by severity">
          <Loaded resource={issues} what="issues">
            {(list) =>
              list.length === 0 ? (
                <Empty>
                  <p>No issues found yet. Results appear when a run finishes; see {runsLink}.</p>
                </Empty>
              ) : (
                <BarChart
                  title="Issues by severity"
                  unit="issues"
                  bars={SEVERITIES.map((severity, index) => ({
                    label: severity,
                    value: list.filter((issue) => toNumber(issue.severity) === index + 1).length,
                    tone: `severity-${index + 1}`,
                  }))}
                />
              )
            }
          </Loaded>
        </ChartPanel>
        <ChartPanel title="Most common open ports">
          <Loaded resource={hosts} what="hosts">
            {(map) => {
              const ports = Object.values(map ?? {}).flatMap((host) => host.ports ?? []);
              const top = countBy(ports, (port) => `${toNumber(port.number)}/${port.protocol}`).slice(0, 10);
              return top.length === 0 ? (
                <Empty>
                  <p>No open ports found yet. Hosts and their ports appear when a run finishes.</p>
                </Empty>
              ) : (
                <BarChart
                  title="Most common open ports"
                  unit="hosts"
                  bars={top.map(([label, value]) => ({ label, value }))}
                />
              );
            }}
          </Loaded>
        </ChartPanel>
        <ChartPanel title="Most common products">
          <Loaded resource={products} what="products">
            {(list) => {
              const top = [...list].sort((a, b) => toNumber(b.count) - toNumber(a.count)).slice(0, 10);
              return top.length === 0 ? (
                <Empty>
                  <p>No products fingerprinted yet.</p>
                </Empty>
              ) : (
                <BarChart
                  title="Most common products"
                  unit="applications"
                  bars={top.map((p) => ({ label: p.product, value: toNumber(p.count) }))}
                />
              );
            }}
          </Loaded>
        </ChartPanel>
        <ChartPanel title="Change over runs">
          {(() => {
            // The overview's own error shows once, above; here only what it means for this chart.
            if (overview.loading) return <Loading what="the change over runs" />;
            const trend =
              overview.data && typeof overview.data === "object" ? history(overview.data) : undefined;
            if (trend && trend.labels.length > 1) {
              return <LineChart title="Change over runs" labels={trend.labels} series={trend.series} />;
            }
            return (
              <Empty>
                <p>
                  {overview.error
                    ? "Shown from the overview, which could not be read (see above)."
                    : "Shown once two runs have finished."}
                </p>
              </Empty>
            );
          })()}
        </ChartPanel>
      </div>
    </section>
  );
}
