/**
 * `sightline results <collection> overview` for people: the collection at a glance in a few lines —
 * seeds, the last run, how much of each result, issues by severity, what is new, the top products —
 * where a table of its scalar fields would show two numbers. `--format json` keeps the API's object.
 */
import type { Static } from "typebox";
import { parseDecimalExponent } from "../core/formats.ts";
import { SEVERITIES } from "../core/severities.ts";
import type { Overview } from "../results/overview.ts";
import { printTable } from "./output.ts";

type OverviewResult = Static<typeof Overview>;

/** The overview's lines, in the order a person reads them. */
export function overviewLines(collection: string, overview: OverviewResult): string[] {
  const run = overview.last_run;
  const lines = [
    `${collection}: ${overview.seed_count} seed${overview.seed_count === 1 ? "" : "s"}`,
    run
      ? `Last run: ${run.id}, ${run.status} (${run.trigger}), ${run.tasks_done}/${run.tasks_total} tasks, started ${run.started_at ?? "not yet"}${run.finished_at ? `, ended ${run.finished_at}` : ""}${run.error ? `: ${run.error}` : ""}`
      : "Last run: none yet",
  ];
  if (overview.results_run_id === null) {
    lines.push("Results: none yet (no run has finished)");
    return lines;
  }
  lines.push(
    `Results of run ${overview.results_run_id}: ${Object.entries(overview.counts)
      .map(([kind, count]) => `${count} ${kind}`)
      .join(", ")}`,
    `Issues by severity: ${overview.issues_by_severity
      .map(({ severity, count }) => `${count} ${SEVERITIES[parseDecimalExponent(severity) - 1] ?? severity}`)
      .join(", ")}`,
  );
  const { previous_run_id: previous, entities, issues } = overview.new_since_previous_run;
  lines.push(
    previous === null
      ? "New: everything (the first finished run)"
      : `New since run ${previous}: ${entities} entities, ${issues} issues`,
  );
  const gone = overview.disappeared_since_previous_run;
  if (previous !== null && gone)
    lines.push(`Gone since run ${previous}: ${gone.entities} entities, ${gone.issues} issues`);
  if (overview.change_note) lines.push(`Note: ${overview.change_note}`);
  if (overview.sources?.note) lines.push(`Sources: ${overview.sources.note}`);
  return lines;
}

export function printOverview(collection: string, overview: OverviewResult): void {
  for (const line of overviewLines(collection, overview)) console.log(line);
  if (overview.top_products.length === 0) return;
  console.log("Top products:");
  printTable(overview.top_products.map(({ product, count }) => ({ count, product })));
}
