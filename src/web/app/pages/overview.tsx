/**
 * A collection at a glance: tiles for what was found and the last run, issues by severity, the most
 * common products, and how the counts changed over the finished runs (GET …/overview/history).
 */
import type { ComponentChildren } from "preact";
import { SEVERITIES } from "../../../core/severities.ts";
import { collectionPath } from "../api.ts";
import { BarChart, LineChart } from "../components/charts.tsx";
import { Empty, ErrorNote, Loading } from "../components/notice.tsx";
import { fieldLabel, toNumber } from "../format.ts";
import { type Resource, useApi } from "../use-api.ts";

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

interface OverviewData {
  last_run?: { id: number; status: string; created_at: string; finished_at?: string | null } | null;
  counts?: Record<string, number>;
  issues_by_severity?: Array<{ severity: string; count: number }>;
  top_products?: Array<{ product: string; count: string }>;
  top_ports?: Array<{ port: string; protocol: string; count: number }>;
  change_note?: string | null;
  /** How the results run's passive sources fared; `note` when every one it asked failed. */
  sources?: { note: string | null };
}

interface HistoryPoint {
  run_id: number;
  finished_at: string;
  hosts: number;
  services: number;
  applications: number;
  issues: number;
  critical: number;
}

/** The figures people look for first: what was found, how bad, and how the last run went. */
function Tiles({ overview }: { overview: OverviewData }) {
  const counts = overview.counts ?? {};
  const critical = toNumber(
    overview.issues_by_severity?.find((entry) => toNumber(entry.severity) === 1)?.count ?? 0,
  );
  const tiles: Array<[string, string]> = [
    ["Hosts", (counts.hosts ?? 0).toLocaleString("en")],
    ["Services", (counts.services ?? 0).toLocaleString("en")],
    ["Applications", (counts.applications ?? 0).toLocaleString("en")],
    ["Issues", (counts.issues ?? 0).toLocaleString("en")],
    ["Critical issues", critical.toLocaleString("en")],
  ];
  const run = overview.last_run;
  return (
    <ul class="tiles">
      {tiles.map(([label, value]) => (
        <li key={label} class="tile">
          <span class="tile-value">{value}</span>
          <span class="tile-label">{label}</span>
        </li>
      ))}
      <li class="tile">
        <span class="tile-value">{run ? run.status : "none yet"}</span>
        <span class="tile-label">
          {run ? `Last run (${run.id}), ${run.finished_at ?? run.created_at}` : "Last run"}
        </span>
      </li>
    </ul>
  );
}

export function OverviewSection({ name }: { name: string }) {
  // Summary figures only: counts from the overview and the history, never whole result lists.
  const overview = useApi<OverviewData>(collectionPath(name, "/overview"));
  const history = useApi<HistoryPoint[]>(collectionPath(name, "/overview/history"));
  const runsLink = <a href={`/collections/${encodeURIComponent(name)}/runs`}>the runs</a>;

  return (
    <section aria-labelledby="overview-heading">
      <h2 id="overview-heading">Overview</h2>
      <Loaded resource={overview} what="the overview">
        {(data) => (
          <>
            {typeof data.change_note === "string" && (
              <p class="notice error" role="status">
                {data.change_note}
              </p>
            )}
            {typeof data.sources?.note === "string" && (
              <p class="notice error" role="status">
                {data.sources.note}
              </p>
            )}
            <Tiles overview={data} />
          </>
        )}
      </Loaded>
      <div class="charts">
        <ChartPanel title="Issues by severity">
          <Loaded resource={overview} what="issues">
            {(data) =>
              (data.counts?.issues ?? 0) === 0 ? (
                <Empty>
                  <p>No issues found yet. Results appear when a run finishes; see {runsLink}.</p>
                </Empty>
              ) : (
                <BarChart
                  title="Issues by severity"
                  unit="issues"
                  bars={SEVERITIES.map((severity, index) => ({
                    label: severity,
                    value: toNumber(
                      data.issues_by_severity?.find((entry) => toNumber(entry.severity) === index + 1)
                        ?.count ?? 0,
                    ),
                    tone: `severity-${index + 1}`,
                  }))}
                />
              )
            }
          </Loaded>
        </ChartPanel>
        <ChartPanel title="Most common open ports">
          <Loaded resource={overview} what="open ports">
            {(data) => {
              const top = data.top_ports ?? [];
              return top.length === 0 ? (
                <Empty>
                  <p>No open ports found yet. Hosts and their ports appear when a run finishes.</p>
                </Empty>
              ) : (
                <BarChart
                  title="Most common open ports"
                  unit="hosts"
                  bars={top.map((p) => ({ label: `${toNumber(p.port)}/${p.protocol}`, value: p.count }))}
                />
              );
            }}
          </Loaded>
        </ChartPanel>
        <ChartPanel title="Most common products">
          <Loaded resource={overview} what="products">
            {(data) => {
              const top = data.top_products ?? [];
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
          <Loaded resource={history} what="the change over runs">
            {(points) =>
              points.length > 1 ? (
                <LineChart
                  title="Change over runs"
                  labels={points.map((point) => `Run ${point.run_id}`)}
                  series={(["hosts", "services", "applications", "issues", "critical"] as const).map(
                    (field) => ({
                      name: field === "critical" ? "Critical issues" : fieldLabel(field),
                      values: points.map((point) => point[field]),
                    }),
                  )}
                />
              ) : (
                <Empty>
                  <p>Shown once two runs have finished.</p>
                </Empty>
              )
            }
          </Loaded>
        </ChartPanel>
      </div>
    </section>
  );
}
