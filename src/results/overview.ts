/**
 * The overview of a collection: its seeds, its last run, how much of each result kind the results run
 * holds, issues by severity, the most common products, and what is new since the finished run before.
 * Every figure is a count query on the indexed tables, so the overview costs the same whatever the size.
 */
import { type Static, Type } from "typebox";
import { describeRun, Run } from "../api/runs.ts";
import { formatDecimalExponent } from "../core/formats.ts";
import type { RunRow } from "../runs/repository.ts";
import { APPLICATIONS } from "./applications.ts";
import { DOMAIN_KINDS } from "./domains.ts";
import { HOST_KINDS } from "./hosts.ts";
import { NETBLOCK_KINDS } from "./netblocks.ts";
import { ProductItem } from "./products.ts";
import { collect, type ResultQueries, type ResultRun } from "./query.ts";

const count = (description: string) => Type.Integer({ minimum: 0, description });

export const Overview = Type.Object({
  seed_count: count("Seeds of the collection."),
  last_run: Type.Union([Run, Type.Null()], {
    description: "The newest run of the collection, whatever its status; null before the first.",
  }),
  results_run_id: Type.Union([Type.Integer(), Type.Null()], {
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
  new_since_previous_run: Type.Object(
    {
      previous_run_id: Type.Union([Type.Integer(), Type.Null()], {
        description: "The finished run before; null when this is the first (everything is new).",
      }),
      entities: count("Entities the previous run did not see (GET …/runs/{id}/diff lists them)."),
      issues: count("Issues the previous run did not have."),
    },
    { description: "What appeared since the previous finished run." },
  ),
});

export async function overview(
  queries: ResultQueries,
  input: { seedCount: number; lastRun: RunRow | undefined; run: ResultRun | undefined },
): Promise<Static<typeof Overview>> {
  const { run } = input;
  const previous = run && (await queries.previousRun(run.collectionId, run.runId));
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
    new_since_previous_run: {
      previous_run_id: previous?.runId ?? null,
      entities: await queries.countEntities(run, { notSeenIn: previous?.runId }),
      issues: await queries.countFindings(run, { notSeenIn: previous?.runId }),
    },
  };
}
