/**
 * `sightline export <collection> <kind>`: a result list as the server writes it — CSV, NDJSON or the JSON
 * envelope — streamed to a file or stdout without holding it, with the API's filters. A file is written
 * under a temporary name and renamed when complete, so an interrupted export never looks finished.
 */
import { createWriteStream, renameSync, rmSync } from "node:fs";
import { Readable, Transform, type TransformCallback, type Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import type { Command } from "commander";
import {
  ApiClient,
  type ClientOptions,
  clientSettings,
  collectionPath,
  withClientOptions,
} from "./api-client.ts";
import { RESULT_KINDS } from "./collections.ts";
import {
  CliError,
  chosenFormat,
  type DataOptions,
  megabytes,
  stderrProgressBar,
  withJsonLines,
} from "./output.ts";

/** The lists the API can export: every result but the overview. */
export const EXPORT_KINDS = RESULT_KINDS.filter((kind) => kind !== "overview");

interface ExportOptions extends ClientOptions, DataOptions {
  format: string;
  output?: string;
  run?: string;
  scoped?: string;
  hidden?: string;
  q?: string;
  severity?: string;
  port?: string;
  product?: string;
  limit?: string;
  offset?: string;
}

/** The query string of an export: the format and the filters given (the server checks their values). */
export function exportQuery(options: ExportOptions): string {
  const query = new URLSearchParams({ format: options.format });
  const pairs: Array<[string, string | undefined]> = [
    ["run_id", options.run],
    ["scoped", options.scoped],
    ["hidden", options.hidden],
    ["q", options.q],
    ["severity", options.severity],
    ["port", options.port],
    ["product", options.product],
    ["limit", options.limit],
    ["offset", options.offset],
  ];
  for (const [name, value] of pairs) if (value !== undefined) query.set(name, value);
  return query.toString();
}

const NEWLINE = 0x0a;
const QUOTE = 0x22;

/**
 * Counts an export's items as its bytes pass: NDJSON lines, CSV records after the header row (a newline
 * inside a quoted field belongs to its record; a doubled quote toggles twice). JSON is not counted.
 */
export class ExportCounter extends Transform {
  items = 0;
  bytes = 0;
  readonly #format: string;
  #records = 0;
  #quoted = false;
  readonly #progress: () => void;

  constructor(format: string, progress: () => void = () => {}) {
    super();
    this.#format = format;
    this.#progress = progress;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.#format === "ndjson") this.items += countNewlines(chunk);
    else if (this.#format === "csv") {
      if (!this.#quoted && !chunk.includes(QUOTE)) this.#records += countNewlines(chunk);
      else
        for (const byte of chunk)
          if (byte === QUOTE) this.#quoted = !this.#quoted;
          else if (byte === NEWLINE && !this.#quoted) this.#records++;
      this.items = Math.max(0, this.#records - 1);
    }
    this.#progress();
    done(null, chunk);
  }
}

function countNewlines(chunk: Buffer): number {
  let count = 0;
  for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, at + 1)) count++;
  return count;
}

/** How many items the export holds: the list's total (X-Total-Count) past the offset, up to the limit. */
export function expectedItems(total: number, options: Pick<ExportOptions, "limit" | "offset">): number {
  const rest = Math.max(0, total - Number(options.offset ?? 0));
  return options.limit === undefined ? rest : Math.min(rest, Number(options.limit));
}

/** A progress bar on stderr while an export streams (items against the total; bytes for JSON). */
function progressBar(kind: string, format: string, expected: number) {
  const bar = stderrProgressBar(
    format === "json"
      ? `${kind} | {mb} MB`
      : `${kind} [{bar}] {value}/{total} items | {mb} MB | {duration_formatted}`,
  );
  bar.start(Math.max(expected, 1), 0, { mb: "0.0" });
  return bar;
}

export function registerExportCommand(program: Command): void {
  withJsonLines(
    withClientOptions(
      program
        .command("export <collection> <kind>")
        .description(`stream a result list to a file or stdout; kind: ${EXPORT_KINDS.join(", ")}`)
        .option("--format <format>", "csv (default), ndjson or json (the API's envelope)")
        .option("-o, --output <file>", "write to this file (default: stdout)")
        .option("--run <id>", "the results as of this finished run (default: the latest)")
        .option("--scoped <bool>", "only scoped (true) or unscoped (false) items")
        .option("--hidden <bool>", "only hidden (true) or visible (false) items")
        .option("--q <text>", "only items whose name contains this text")
        .option("--severity <list>", "issues: only these severities, as numbers or words, e.g. critical,high")
        .option("--port <port>", "hosts, applications: only those on this port")
        .option("--product <name>", "applications, vulnerabilities: only those of this product")
        .option("--limit <n>", "at most this many items")
        .option("--offset <n>", "skip this many items first"),
    ),
    { json: "--format json: the API's envelope", jsonl: "--format ndjson: one item per line" },
  ).action(async (collection: string, kind: string, given: ExportOptions) => {
    if (!(EXPORT_KINDS as string[]).includes(kind))
      throw new CliError(`Unknown result list "${kind}"; choose one of ${EXPORT_KINDS.join(", ")}`, 2);
    const options = { ...given, format: chosenFormat(given, "csv", { json: "json", jsonl: "ndjson" }) };
    if (!["csv", "ndjson", "json"].includes(options.format))
      throw new CliError(`--format must be csv, ndjson or json, not "${options.format}"`, 2);
    const client = new ApiClient(clientSettings(options));
    const response = await client.download(collectionPath(collection, `/${kind}?${exportQuery(options)}`));
    const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
    const expected = expectedItems(Number(response.headers.get("x-total-count") ?? 0), options);
    // A bar only where a person watches stderr, and not over the rows themselves on the same terminal.
    const bar =
      process.stderr.isTTY && (options.output || !process.stdout.isTTY)
        ? progressBar(kind, options.format, expected)
        : undefined;
    const counter: ExportCounter = new ExportCounter(options.format, () =>
      bar?.update(counter.items, { mb: megabytes(counter.bytes) }),
    );
    if (!options.output) {
      try {
        await pipeline(body, counter, process.stdout as Writable, { end: false });
      } finally {
        bar?.stop();
      }
      return;
    }
    const partial = `${options.output}.partial`;
    try {
      await pipeline(body, counter, createWriteStream(partial));
      renameSync(partial, options.output);
    } catch (error) {
      rmSync(partial, { force: true });
      throw new CliError(
        `The export stopped before the end (${(error as Error).message}); ${options.output} was not written`,
      );
    } finally {
      bar?.stop();
    }
    const written = options.format === "json" ? expected : counter.items;
    console.error(
      `Wrote ${written} ${kind} of ${collection} to ${options.output} (${megabytes(counter.bytes)} MB).`,
    );
  });
}
