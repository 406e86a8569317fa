/**
 * The overview of a collection: its seeds, its last run, how much of each result kind the results run
 * holds, issues by severity, the most common products, and what is new since the finished run before.
 * Every figure is a count query on the indexed tables, so the overview costs the same whatever the size.
 */
import { type Static, Type } from "typebox";
import { DOMAIN_KINDS } from "../core/entities.ts";
import { formatDecimalExponent, formatTimestamp } from "../core/formats.ts";
import { OrNull } from "../core/or-null.ts";
import { collect, type ResultQueries, type ResultRun } from "../store/result-queries.ts";
import type { RunRow } from "../store/runs.ts";
import { APPLICATIONS } from "./applications.ts";
import { HOST_KINDS } from "./hosts.ts";
import { NETBLOCK_KINDS } from "./netblocks.ts";
import { ProductItem } from "./products.ts";
import { describeRun, Run, SourcesHeadline, type sourcesHeadline } from "./runs.ts";

const count = (description: string) => Type.Integer({ minimum: 0, description });

export const Overview = Type.Object({
  seed_count: count("Seeds of the collection."),
  last_run: OrNull(Run, {
    description: "The newest run of the collection, whatever its status; null before the first.",
  }),
  results_run_id: OrNull(Type.Integer(), {
    description:
      "The finished run these figures are from (the latest, or `run_id`); null before any run has finished.",
  }),
  counts: Type.Object(
    {
      applications: count("Web applications (GET …/applications)."),
      domains: count("DNS names (GET …/domains)."),
      hosts: count("IP addresses (GET …/hosts)."),
      services: count("Open ports (NetworkService entities)."),
      certificates: count("TLS certificates."),
      netblocks: count("Network blocks (GET …/netblocks)."),
      issues: count("Issues (GET …/issues)."),
      products: count("Distinct products with their versions (GET …/products)."),
      vulnerabilities: count("CVEs (GET …/vulnerabilities)."),
      recent: count("Entities first seen by the run (GET …/recent)."),
    },
    { description: "How many items each result holds." },
  ),
  issues_by_severity: Type.Array(
    Type.Object({
      severity: Type.String({ description: "Decimal-exponent number, 1 (critical) … 5 (informational)." }),
      count: Type.Integer({ minimum: 0 }),
    }),
    { description: "Every severity from 1 to 5, with how many issues have it." },
  ),
  top_products: Type.Array(ProductItem, { description: "The ten most common products." }),
  top_ports: Type.Array(
    Type.Object({
      port: Type.String({ description: 'Decimal-exponent number, e.g. "0.443e3".' }),
      protocol: Type.String({ description: "tcp or udp." }),
      count: count("Services with this port open."),
    }),
    { description: "The ten most common open ports." },
  ),
  new_since_previous_run: Type.Object(
    {
      previous_run_id: OrNull(Type.Integer(), {
        description: "The finished run before; null when this is the first (everything is new).",
      }),
      entities: count("Entities the previous run did not see (GET …/runs/{id}/diff lists them)."),
      issues: count("Issues the previous run did not have."),
    },
    { description: "What appeared since the previous finished run." },
  ),
  disappeared_since_previous_run: Type.Object(
    {
      entities: count("Entities the previous finished run saw and this one did not."),
      issues: count("Issues the previous finished run had and this one does not."),
    },
    { description: "What the previous finished run saw that is gone now." },
  ),
  change_note: OrNull(Type.String(), {
    description:
      "A sentence when the run lost most of what the previous one saw (a scope, resolver or network change is the usual cause); null otherwise.",
  }),
  // Optional in the type only: every overview has it; readers built for older servers do without.
  sources: Type.Optional(SourcesHeadline),
});

/** A run that no longer sees more than this share of what the previous one saw says so. */
const COLLAPSE_SHARE = 0.5;
/** ...when the previous run saw at least this many entities (small collections come and go). */
const COLLAPSE_MINIMUM = 10;

/**
 * What changed between the previous finished run and `run`: new and disappeared entities and issues,
 * and a sentence when most of what the previous run saw is gone. Count queries only.
 */
export async function changeSincePrevious(queries: ResultQueries, run: ResultRun | undefined) {
  const previous = run && (await queries.previousRun(run.collectionId, run.runId));
  const newer = {
    entities: await queries.countEntities(run, { notSeenIn: previous?.runId }),
    issues: await queries.countFindings(run, { notSeenIn: previous?.runId }),
  };
  if (!run || !previous)
    return { previous, new: newer, disappeared: { entities: 0, issues: 0 }, note: null as string | null };
  const disappeared = {
    entities: await queries.countEntities(previous, { notSeenIn: run.runId }),
    issues: await queries.countFindings(previous, { notSeenIn: run.runId }),
  };
  const before = await queries.countEntities(previous, {});
  const note =
    before >= COLLAPSE_MINIMUM && disappeared.entities > before * COLLAPSE_SHARE
      ? `Run ${run.runId} did not see ${disappeared.entities} of the ${before} entities run ${previous.runId} saw (${Math.round((100 * disappeared.entities) / before)}%). If nothing was taken down, check the run's notes and settings (GET …/runs/${run.runId}): a changed scan allow list, resolver or port list is the usual cause.`
      : null;
  return { previous, new: newer, disappeared, note };
}

export async function overview(
  queries: ResultQueries,
  input: {
    seedCount: number;
    lastRun: RunRow | undefined;
    run: ResultRun | undefined;
    sources: ReturnType<typeof sourcesHeadline>;
  },
): Promise<Static<typeof Overview>> {
  const { run } = input;
  const change = await changeSincePrevious(queries, run);
  const entities = (kinds: string[]) => queries.countEntities(run, { kinds });
  const severities = await queries.severityCounts(run);
  const last = input.lastRun;
  return {
    seed_count: input.seedCount,
    last_run: last ? describeRun(last) : null,
    results_run_id: run?.runId ?? null,
    counts: {
      applications: await queries.countEntities(run, APPLICATIONS),
      domains: await queries.countEntities(run, { kinds: DOMAIN_KINDS }, { distinctNames: true }),
      hosts: await entities(HOST_KINDS),
      services: await entities(["NetworkService"]),
      certificates: await entities(["SslCertificate"]),
      netblocks: await entities(NETBLOCK_KINDS),
      issues: await queries.countFindings(run, {}),
      products: await queries.countProducts(run, {}),
      vulnerabilities: await queries.countVulnerabilities(run, {}),
      recent: await queries.countEntities(run, { firstSeenInRun: true }),
    },
    issues_by_severity: [1, 2, 3, 4, 5].map((severity) => ({
      severity: formatDecimalExponent(severity),
      count: severities.get(severity) ?? 0,
    })),
    top_products: (await collect(queries.products(run, {}, { limit: 10 }))).map(({ product, count }) => ({
      product,
      count: String(count),
    })),
    top_ports: (await queries.topPorts(run, 10)).map(({ port, protocol, count }) => ({
      port: formatDecimalExponent(port),
      protocol,
      count,
    })),
    new_since_previous_run: { previous_run_id: change.previous?.runId ?? null, ...change.new },
    disappeared_since_previous_run: change.disappeared,
    change_note: change.note,
    sources: input.sources,
  };
}

export const OverviewHistory = Type.Array(
  Type.Object({
    run_id: Type.Integer(),
    finished_at: Type.String({ description: "YYYY-MM-DD HH:MM:SS UTC" }),
    hosts: count("IP addresses the run saw."),
    services: count("Open ports."),
    applications: count("Web applications."),
    issues: count("Issues."),
    critical: count("Issues of severity 1 (critical)."),
  }),
  { description: "The newest finished runs, oldest first, with the headline counts of each." },
);

/**
 * The headline counts of each of the newest `limit` finished runs, oldest first: a handful of indexed
 * count queries per run, never a result list.
 */
export async function overviewHistory(
  queries: ResultQueries,
  runs: Array<{ id: number; collectionId: number; finishedAt: string }>,
): Promise<Static<typeof OverviewHistory>> {
  const points: Static<typeof OverviewHistory> = [];
  for (const row of [...runs].sort((a, b) => a.id - b.id)) {
    const run: ResultRun = { collectionId: row.collectionId, runId: row.id, finishedAt: row.finishedAt };
    points.push({
      run_id: row.id,
      finished_at: formatTimestamp(row.finishedAt),
      hosts: await queries.countEntities(run, { kinds: HOST_KINDS }),
      services: await queries.countEntities(run, { kinds: ["NetworkService"] }),
      applications: await queries.countEntities(run, APPLICATIONS),
      issues: await queries.countFindings(run, {}),
      critical: await queries.countFindings(run, { severities: [1] }),
    });
  }
  return points;
}
