/**
 * Client commands for runs, through the public API of a running server:
 *   sightline run <collection> [--watch]        force a run now (optionally follow it)
 *   sightline runs list <collection>            the collection's runs, newest first
 *   sightline runs show <collection> <id>       one run: progress, settings, notes by kind with examples
 *   sightline runs watch <collection> [id]      follow a run (default: the latest) with a progress bar
 *   sightline runs cancel <collection> <id>     cancel a queued or started run
 */
import { setTimeout as sleep } from "node:timers/promises";
import { Presets, SingleBar } from "cli-progress";
import { type Command, Option } from "commander";
import { parseTimestamp } from "../core/formats.ts";
import {
  ApiClient,
  type ClientOptions,
  clientSettings,
  collectionPath,
  withClientOptions,
} from "./api-client.ts";
import {
  CliError,
  type DataOptions,
  printedForScripts,
  printJsonLine,
  show,
  withJsonLines,
} from "./output.ts";

/** A run as the API lists it. */
interface Run {
  id: number;
  status: string;
  created_at: string;
  priority: number;
  trigger: string;
  started_at: string | null;
  finished_at: string | null;
  error: string | null;
  tasks_total: number;
  tasks_done: number;
  /** Why a queued or started run is not moving (no worker seen), or null. */
  waiting?: string | null;
}

/** One run as GET …/runs/{id} answers it. */
/** One passive source in a run, as GET …/runs/{id} answers it. */
export interface RunSourceLine {
  source: string;
  queried: boolean;
  reason: string | null;
  status: string;
  requests: number;
  answered: number;
  names: number;
  in_scope: number;
  new: number;
  historical: number;
  rate_limited: number;
  failure: string | null;
}

interface RunDetail extends Run {
  settings: Record<string, unknown> | null;
  sources?: { all_failed: boolean; sources: RunSourceLine[] };
  notes: { total: number; by_kind: Array<{ kind: string; count: number }> };
}

interface RunNotes {
  total: number;
  kinds: Array<{ kind: string; count: number; examples: string[] }>;
}

type Options = ClientOptions & DataOptions;
type WatchOptions = Options & { interval: string };

const ENDED = new Set(["finished", "failed", "cancelled"]);

function runId(text: string): number {
  if (!/^\d+$/.test(text)) throw new CliError(`A run id is a whole number, not "${text}"`, 2);
  return Number(text);
}

function interval(text: string): number {
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms < 100)
    throw new CliError(`--interval must be at least 100 ms, not "${text}"`, 2);
  return ms;
}

function took(run: Run): string {
  if (!run.started_at || !run.finished_at) return "";
  const seconds = Math.round(
    (parseTimestamp(run.finished_at).getTime() - parseTimestamp(run.started_at).getTime()) / 1000,
  );
  return ` in ${seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${seconds % 60}s`}`;
}

/**
 * Follows a run until it ends: a progress bar on a terminal, a line per change otherwise; with --jsonl,
 * the run as a JSON line on stdout each time it changes, with --json once when it ends.
 */
async function watch(
  client: ApiClient,
  collection: string,
  id: number,
  everyMs: number,
  options: DataOptions,
): Promise<void> {
  const bar =
    process.stderr.isTTY && !options.jsonl
      ? new SingleBar(
          {
            format: `run ${id} {status} [{bar}] {value}/{total} tasks | {duration_formatted}`,
            stream: process.stderr,
          },
          Presets.shades_classic,
        )
      : undefined;
  let run: Run;
  let last = "";
  let lastJson = "";
  let waitingSaid = false;
  for (;;) {
    run = await client.get<Run>(collectionPath(collection, `/runs/${id}`));
    if (options.jsonl) {
      const line = JSON.stringify(run);
      if (line !== lastJson) printJsonLine(run);
      lastJson = line;
    } else if (bar) {
      if (last === "") bar.start(Math.max(run.tasks_total, 1), run.tasks_done, { status: run.status });
      bar.setTotal(Math.max(run.tasks_total, 1));
      bar.update(run.tasks_done, { status: run.status });
      last = run.status;
      if (run.waiting && !waitingSaid) console.error(run.waiting);
      waitingSaid = Boolean(run.waiting);
    } else {
      const line = `run ${id}: ${run.status}, ${run.tasks_done}/${run.tasks_total} tasks${run.waiting ? ` — ${run.waiting}` : ""}`;
      if (line !== last) console.error(line);
      last = line;
    }
    if (ENDED.has(run.status)) break;
    await sleep(everyMs);
  }
  bar?.stop();
  if (options.json) printedForScripts(options, run);
  if (run.status === "failed")
    throw new CliError(`Run ${id} of ${collection} failed: ${run.error ?? "no reason given"}`);
  if (run.status === "cancelled")
    throw new CliError(`Run ${id} of ${collection} was cancelled${run.error ? `: ${run.error}` : "."}`);
  if (!options.json && !options.jsonl)
    console.log(`Run ${id} of ${collection} finished: ${run.tasks_done} tasks${took(run)}.`);
}

const plural = (count: number, noun: string) =>
  `${count.toLocaleString("en")} ${noun}${count === 1 ? "" : "s"}`;

/** `sightline runs show` for people: the run in a few lines, then its notes by kind with examples. */
export function runLines(collection: string, run: RunDetail, notes: RunNotes): string[] {
  const lines = [
    `Run ${run.id} of ${collection}: ${run.status} (${run.trigger}, priority ${run.priority}), ${run.tasks_done}/${run.tasks_total} tasks`,
    `Created ${run.created_at}${run.started_at ? `, started ${run.started_at}` : ""}${run.finished_at ? `, ended ${run.finished_at}` : ""}${took(run)}`,
  ];
  if (run.waiting) lines.push(run.waiting);
  if (run.error) lines.push(`Reason: ${run.error}`);
  const settings = run.settings as Record<string, unknown> | null;
  if (settings) {
    const list = (value: unknown) => (Array.isArray(value) && value.length ? value.join(", ") : "(none)");
    lines.push(
      `Settings: ports ${settings.ports}, depth ${settings.depth}, wordlist ${settings.dns_wordlist}, timeout ${settings.timeout_ms} ms, resolvers ${Array.isArray(settings.dns_servers) && settings.dns_servers.length ? settings.dns_servers.join(", ") : "the system's"}, scan allow ${list(settings.scan_allow)}, scan deny ${list(settings.scan_deny)}`,
    );
  }
  lines.push(...sourceLines(run.sources));
  if (notes.total === 0) {
    lines.push("Notes: none.");
    return lines;
  }
  lines.push(`Notes: ${plural(notes.total, "note")}`);
  for (const kind of notes.kinds) {
    lines.push(`  ${kind.kind}: ${plural(kind.count, "note")}, e.g.`);
    for (const example of kind.examples) lines.push(`    ${example}`);
  }
  return lines;
}

/** A source's status in a few words: what it gave, or why it gave nothing. */
export function sourceStatusText(source: RunSourceLine): string {
  if (!source.queried) return `not queried: ${source.reason}`;
  const limited = source.rate_limited > 0 ? `, rate-limited ${source.rate_limited}×` : "";
  if (source.status === "failed") return `FAILED: ${source.failure}${limited}`;
  const partly = source.status === "partial" ? `, partly failed: ${source.failure}` : "";
  return `${source.answered}/${source.requests} answered, ${plural(source.names, "name")}, ${source.in_scope} in scope, ${source.new} new, ${source.historical} gone${limited}${partly}`;
}

/** The run's passive sources, one a line: those asked first, then those not asked. */
function sourceLines(sources: RunDetail["sources"]): string[] {
  if (!sources || sources.sources.length === 0) return [];
  const asked = sources.sources.filter((source) => source.queried);
  const lines = [
    `Sources: ${asked.length} asked${sources.all_failed ? " — EVERY SOURCE FAILED: no names is not an answer" : ""}`,
  ];
  const width = Math.max(...sources.sources.map((source) => source.source.length));
  for (const source of [...asked, ...sources.sources.filter((source) => !source.queried)])
    lines.push(`  ${source.source.padEnd(width)}  ${sourceStatusText(source)}`);
  return lines;
}

export function registerRunCommands(program: Command): void {
  withClientOptions(
    program
      .command("run <collection>")
      .description("force a run of a collection now (through the API)")
      .option("--watch", "follow the run with a progress bar until it ends")
      .option("--interval <ms>", "how often --watch asks for progress", "1000")
      .option("--json", "print the run as JSON (with --watch: once it ends)")
      .addOption(
        new Option("--jsonl", "with --watch: print the run as a JSON line each time it changes")
          .conflicts("json")
          .implies({ watch: true }),
      ),
  ).action(async (collection: string, options: WatchOptions & { watch?: boolean }) => {
    const everyMs = interval(options.interval);
    const client = new ApiClient(clientSettings(options));
    const { id } = await client.post<{ id: string }>(collectionPath(collection, "/schedule"));
    if (options.watch) return watch(client, collection, Number(id), everyMs, options);
    const run = await client.get<Run>(collectionPath(collection, `/runs/${id}`));
    if (!printedForScripts(options, run))
      console.log(
        `Run ${id} of ${collection} is ${run.status}; follow it with: sightline runs watch ${collection} ${id}${run.waiting ? `\n${run.waiting}` : ""}`,
      );
  });

  const runs = program
    .command("runs")
    .description("list, follow and cancel the runs of a collection (through the API)");
  withJsonLines(
    withClientOptions(
      runs.command("list <collection>").description("the runs of a collection, newest first"),
    ),
  ).action(async (collection: string, options: Options) => {
    const client = new ApiClient(clientSettings(options));
    const list = await client.get<Run[]>(collectionPath(collection, "/runs"));
    if (printedForScripts(options, list)) return;
    show(
      list.map((run) => ({ ...run, tasks: `${run.tasks_done}/${run.tasks_total}` })),
      ["id", "status", "trigger", "priority", "created_at", "finished_at", "tasks", "error"],
    );
  });
  withJsonLines(
    withClientOptions(
      runs
        .command("watch <collection> [id]")
        .description("follow a run (default: the latest) with a progress bar until it ends")
        .option("--interval <ms>", "how often to ask for progress", "1000"),
    ),
    {
      json: "print the run as JSON when it ends",
      jsonl: "print the run as a JSON line each time it changes",
    },
  ).action(async (collection: string, idText: string | undefined, options: WatchOptions) => {
    const everyMs = interval(options.interval);
    const client = new ApiClient(clientSettings(options));
    let id = idText === undefined ? undefined : runId(idText);
    if (id === undefined) {
      const [latest] = await client.get<Run[]>(collectionPath(collection, "/runs"));
      if (!latest)
        throw new CliError(
          `Collection "${collection}" has no runs yet; start one with: sightline run ${collection}`,
        );
      id = latest.id;
    }
    await watch(client, collection, id, everyMs, options);
  });
  withClientOptions(
    runs
      .command("show <collection> <id>")
      .description("one run: progress, the settings it uses, and its notes by kind with examples"),
  )
    .option("--json", "print JSON")
    .action(async (collection: string, idText: string, options: Options) => {
      const client = new ApiClient(clientSettings(options));
      const id = runId(idText);
      const run = await client.get<RunDetail>(collectionPath(collection, `/runs/${id}`));
      const notes = await client.get<RunNotes>(collectionPath(collection, `/runs/${id}/notes?limit=1`));
      if (printedForScripts(options, { ...run, notes: { total: notes.total, kinds: notes.kinds } })) return;
      for (const line of runLines(collection, run, notes)) console.log(line);
    });
  withClientOptions(runs.command("cancel <collection> <id>").description("cancel a queued or started run"))
    .option("--json", "print JSON")
    .action(async (collection: string, idText: string, options: Options) => {
      const client = new ApiClient(clientSettings(options));
      const run = await client.post<Run>(collectionPath(collection, `/runs/${runId(idText)}/cancel`));
      if (!printedForScripts(options, run)) console.log(`Run ${run.id} of ${collection} is cancelled.`);
    });
}
