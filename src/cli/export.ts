/**
 * `sightline export <collection> <kind>`: a result list as the server writes it — CSV, NDJSON or the JSON
 * envelope — streamed to a file or stdout without holding it, with the API's filters. A file is written
 * under a temporary name and renamed when complete, so an interrupted export never looks finished.
 */
import { createWriteStream, renameSync, rmSync } from "node:fs";
import { Readable, type Writable } from "node:stream";
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
import { CliError } from "./output.ts";

/** The lists the API can export: every result but the overview. */
export const EXPORT_KINDS = RESULT_KINDS.filter((kind) => kind !== "overview");

interface ExportOptions extends ClientOptions {
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

export function registerExportCommand(program: Command): void {
  withClientOptions(
    program
      .command("export <collection> <kind>")
      .description(`stream a result list to a file or stdout; kind: ${EXPORT_KINDS.join(", ")}`)
      .option("--format <format>", "csv, ndjson or json (the API's envelope)", "csv")
      .option("-o, --output <file>", "write to this file (default: stdout)")
      .option("--run <id>", "the results as of this finished run (default: the latest)")
      .option("--scoped <bool>", "only scoped (true) or unscoped (false) items")
      .option("--hidden <bool>", "only hidden (true) or visible (false) items")
      .option("--q <text>", "only items whose name contains this text")
      .option("--severity <list>", "issues: only these severities, e.g. 1,2")
      .option("--port <port>", "hosts, applications: only those on this port")
      .option("--product <name>", "applications, vulnerabilities: only those of this product")
      .option("--limit <n>", "at most this many items")
      .option("--offset <n>", "skip this many items first"),
  ).action(async (collection: string, kind: string, options: ExportOptions) => {
    if (!(EXPORT_KINDS as string[]).includes(kind))
      throw new CliError(`Unknown result list "${kind}"; choose one of ${EXPORT_KINDS.join(", ")}`, 2);
    if (!["csv", "ndjson", "json"].includes(options.format))
      throw new CliError(`--format must be csv, ndjson or json, not "${options.format}"`, 2);
    const client = new ApiClient(clientSettings(options));
    const response = await client.download(collectionPath(collection, `/${kind}?${exportQuery(options)}`));
    const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
    if (!options.output) {
      await pipeline(body, process.stdout as Writable, { end: false });
      return;
    }
    const partial = `${options.output}.partial`;
    try {
      await pipeline(body, createWriteStream(partial));
      renameSync(partial, options.output);
    } catch (error) {
      rmSync(partial, { force: true });
      throw new CliError(
        `The export stopped before the end (${(error as Error).message}); ${options.output} was not written`,
      );
    }
    const total = response.headers.get("x-total-count");
    console.error(`Wrote ${total ?? "the"} ${kind} of ${collection} to ${options.output}.`);
  });
}
