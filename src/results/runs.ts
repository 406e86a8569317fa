/** A run as the API shows it: its schema and the view of a stored run row. */
import { type TSchema, Type } from "typebox";
import { CONFIG_SCHEMA, type SettingSchema } from "../core/config-schema.ts";
import { formatTimestamp, formatTimestampOrNull } from "../core/formats.ts";
import { OrNull } from "../core/or-null.ts";
import {
  describeRunSettings,
  RUN_SETTING_KEYS,
  type RunSettingKey,
  type RunSettings,
  wireName,
} from "../core/run-settings.ts";
import { RUN_STATUSES } from "../core/runs.ts";
import { ScanProfileSchema } from "../core/scan-profile-schema.ts";
import { SOURCE_IDS, type SourceStatus, sourceFailed, sumStatuses } from "../core/sources.ts";
import type { TargetStatus } from "../store/run-sources.ts";
import type { RunRow } from "../store/runs.ts";

const Timestamp = (description: string) =>
  OrNull(Type.String(), {
    description: `${description} (YYYY-MM-DD HH:MM:SS UTC), or null`,
  });

export const Run = Type.Object({
  id: Type.Integer(),
  status: Type.String({
    enum: [...RUN_STATUSES],
    description:
      "queued → started → finished; or failed (see `error`) or cancelled. Only a finished run's results are served.",
  }),
  created_at: Type.String({ description: "YYYY-MM-DD HH:MM:SS UTC" }),
  priority: Type.Integer({
    description: "Lower runs first when workers are busy: forced runs 1, scheduled 5.",
  }),
  trigger: Type.String({
    enum: ["forced", "scheduled"],
    description: "Who started it: the API, or the scheduler.",
  }),
  started_at: Timestamp("When a worker began it"),
  finished_at: Timestamp("When it finished, failed or was cancelled"),
  error: OrNull(Type.String(), {
    description: "Why it failed or who cancelled it; null otherwise.",
  }),
  tasks_total: Type.Integer({ description: "Tasks known so far; grows as tasks find more work." }),
  tasks_done: Type.Integer({ description: "Tasks completed." }),
  waiting: OrNull(Type.String(), {
    description:
      "Why a queued or started run is not moving, in a sentence (no worker seen in distributed mode); null otherwise.",
  }),
});

/** A queued or started run that is not saving its results: the runs a missing worker holds up. */
export const isWaitingKind = (row: RunRow) =>
  (row.status === "queued" || row.status === "started") && !row.finishing_at;

export function describeRun(row: RunRow, waiting: string | null = null) {
  const timestamp = formatTimestampOrNull;
  return {
    id: row.id,
    status: row.status,
    created_at: formatTimestamp(row.created_at),
    priority: row.priority,
    trigger: row.trigger,
    started_at: timestamp(row.started_at),
    finished_at: timestamp(row.finished_at),
    error: row.error,
    tasks_total: row.tasks_total,
    tasks_done: row.tasks_done,
    waiting: isWaitingKind(row) ? waiting : null,
  };
}

/**
 * A run setting's schema on the wire, from its configuration schema: its type, items and description
 * (an enum as a string with `enum`, which the serialiser writes without a validator of its own).
 */
function wireSchema(key: RunSettingKey): TSchema {
  const setting = (CONFIG_SCHEMA.properties as unknown as Record<RunSettingKey, SettingSchema>)[
    key
  ] as SettingSchema & {
    anyOf?: Array<{ const: string }>;
  };
  const { description } = setting;
  if (setting.anyOf) return Type.String({ enum: setting.anyOf.map((option) => option.const), description });
  if (setting.type === "array") return Type.Array(Type.String(), { description });
  return setting.type === "integer" ? Type.Integer({ description }) : Type.String({ description });
}

/**
 * The discovery settings fixed when the run was created, which every worker applies: each run setting
 * under its wire name (core/run-settings.ts), absent from runs created before the setting existed.
 */
export const RunSettingsView = Type.Object(
  {
    ...Object.fromEntries(
      RUN_SETTING_KEYS.flatMap((key) => [
        [wireName(key), Type.Optional(wireSchema(key))],
        ...(key === "permutations"
          ? [
              [
                "permutation_words",
                Type.Optional(
                  OrNull(Type.Integer(), {
                    description: "Words of a permutation word file; null: the shipped words.",
                  }),
                ),
              ],
            ]
          : []),
        ...(key === "dnsWordlist"
          ? [
              [
                "dns_wordlist_lines",
                OrNull(Type.Integer(), {
                  description:
                    "Lines of a wordlist file, read when the run was created; null for small, large and off.",
                }),
              ],
            ]
          : []),
      ]),
    ),
    profile: Type.Optional(ScanProfileSchema),
  },
  {
    description:
      "The discovery settings of the run, taken from the server's configuration and the collection's scan profile when the run was created and applied by every worker; null for runs created before settings were stored.",
  },
);

const NoteCount = Type.Object({
  kind: Type.String({
    description: "What wrote the notes: a discovery module (dns, ports, http, …) or plan.",
  }),
  count: Type.Integer(),
});

const Count = (description: string) => Type.Integer({ description });

/** One passive source in one run (a Sightline extension of the spec's run object). */
export const RunSourceView = Type.Object({
  source: Type.String({ description: "The source's id (docs/sources.md)." }),
  queried: Type.Boolean({ description: "Whether the run asked it." }),
  reason: OrNull(Type.String(), {
    description:
      "Why it was not asked (no key set, not chosen, nothing it consumes in scope); null when asked.",
  }),
  status: Type.String({
    enum: ["answered", "partial", "failed", "not queried"],
    description:
      "answered: every ask answered; partial: some asks failed; failed: none answered (see failure); not queried: see reason.",
  }),
  targets: Count("Domains or addresses it was asked about."),
  requests: Count("Requests made, retries included."),
  answered: Count("Requests answered with a usable body."),
  names: Count("Names it returned, normalised, duplicates dropped."),
  in_scope: Count("Of those, inside the collection's scope."),
  new: Count("In-scope names that resolved and that no other part of the run had found before."),
  historical: Count("In-scope names that no longer resolve, kept as historical names."),
  refused: Count("Names refused (too long, undecodable punycode, not a host name)."),
  rate_limited: Count("429 answers it gave."),
  failed: Count("Asks that failed."),
  failure: OrNull(Type.String(), {
    description:
      "Why the first failed ask failed: `http <status>`, `time-out`, `too large`, `parse error: …`, `network: …`.",
  }),
});

export const RunSources = Type.Object(
  {
    all_failed: Type.Boolean({
      description: "Every source the run asked failed: no names is not an answer.",
    }),
    sources: Type.Array(RunSourceView),
  },
  {
    description:
      "How each passive source fared in the run (a Sightline extension of the spec's run object): a source that failed never reads as no names.",
  },
);

type Summed = ReturnType<typeof sumStatuses>;

export const sourceView = (sum: Summed) => ({
  source: sum.source,
  queried: sum.queried,
  reason: sum.queried ? null : (sum.reason ?? null),
  status: !sum.queried
    ? "not queried"
    : sourceFailed(sum)
      ? "failed"
      : sum.failed > 0
        ? "partial"
        : "answered",
  targets: sum.targets,
  requests: sum.requests,
  answered: sum.answered,
  names: sum.names,
  in_scope: sum.inScope,
  new: sum.new,
  historical: sum.historical,
  refused: sum.refused,
  rate_limited: sum.rateLimited,
  failed: sum.failed,
  failure: sum.failure ?? null,
});

/**
 * Every source's status in a run: those it asked, summed over what they were asked about; those it chose
 * but had nothing to ask about; those it did not choose, with why (from the run's settings).
 */
export function describeRunSources(settings: RunSettings | null, statuses: Map<string, TargetStatus[]>) {
  const chosen = new Set(settings?.sources ?? []);
  const skipped = settings?.sourcesSkipped ?? {};
  const sources = SOURCE_IDS.flatMap((id) => {
    const asked = statuses.get(id);
    if (asked && asked.length > 0) return [sourceView(sumStatuses(id, asked))];
    const reason = chosen.has(id)
      ? "nothing it is asked about was in scope (a domain, or an address for shodanidb)"
      : skipped[id];
    if (reason === undefined) return [];
    const none: SourceStatus = { ...sumStatuses(id, []), queried: false, reason };
    return [sourceView({ ...none, targets: 0, failed: 0 })];
  });
  const queried = sources.filter((source) => source.queried);
  return { all_failed: queried.length > 0 && queried.every((source) => source.status === "failed"), sources };
}

export const SourcesHeadline = Type.Object(
  {
    run_id: OrNull(Type.Integer(), { description: "The run these figures are from; null before any." }),
    asked: Type.Integer({ description: "Passive sources the run asked." }),
    failed: Type.Array(Type.String(), { description: "Those that gave nothing because every ask failed." }),
    all_failed: Type.Boolean({ description: "Every source asked failed." }),
    note: OrNull(Type.String(), {
      description: "A sentence when every source asked failed; null otherwise.",
    }),
  },
  { description: "How the run's passive sources fared, in short (GET …/runs/{id} has each one's status)." },
);

/** The run's passive sources in short: how many were asked, which failed, and a sentence if all did. */
export function sourcesHeadline(runId: number | null, described: ReturnType<typeof describeRunSources>) {
  const asked = described.sources.filter((source) => source.queried);
  const failed = asked.filter((source) => source.status === "failed");
  return {
    run_id: runId,
    asked: asked.length,
    failed: failed.map((source) => source.source),
    all_failed: described.all_failed,
    note: described.all_failed
      ? `Every passive source run ${runId} asked failed (${failed.map((source) => `${source.source}: ${source.failure}`).join("; ")}): its names come from DNS alone, and "no names" from the sources is not an answer. See GET …/runs/${runId}.`
      : null,
  };
}

export const RunDetail = Type.Object({
  ...Run.properties,
  sources: RunSources,
  settings: OrNull(RunSettingsView),
  notes: Type.Object(
    {
      total: Type.Integer({ description: "Notes the run wrote." }),
      by_kind: Type.Array(NoteCount, { description: "Notes per kind, most first." }),
    },
    {
      description:
        "What the run noted on the way (a seed that did not resolve, a name server that timed out, a module that failed on an entity): read them with GET …/runs/{id}/notes.",
    },
  ),
});

/** One run with what only its own page shows: its settings and how many notes of each kind it wrote. */
export function describeRunDetail(
  row: RunRow,
  notes: Array<{ kind: string; count: number }>,
  waiting: string | null = null,
  sources: Map<string, TargetStatus[]> = new Map(),
) {
  const settings = row.settings ? (JSON.parse(row.settings) as RunSettings) : null;
  return {
    ...describeRun(row, waiting),
    sources: describeRunSources(settings, sources),
    settings: settings && describeRunSettings(settings),
    notes: { total: notes.reduce((sum, kind) => sum + kind.count, 0), by_kind: notes },
  };
}

export const RunNotes = Type.Object({
  total: Type.Integer({ description: "Notes of the run (of `kind`, when asked for one)." }),
  kinds: Type.Array(
    Type.Object({
      ...NoteCount.properties,
      examples: Type.Array(Type.String(), { description: "The first few notes of the kind." }),
    }),
    { description: "Every kind of note the run wrote, most first, each with examples." },
  ),
  notes: Type.Array(
    Type.Object({
      kind: Type.String(),
      message: Type.String(),
      created_at: Type.String({ description: "YYYY-MM-DD HH:MM:SS UTC" }),
    }),
    { description: "One page of the notes (limit/offset), in the order they were written." },
  ),
});
