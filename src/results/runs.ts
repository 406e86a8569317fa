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

export const RunDetail = Type.Object({
  ...Run.properties,
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
) {
  const settings = row.settings ? (JSON.parse(row.settings) as RunSettings) : null;
  return {
    ...describeRun(row, waiting),
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
