/**
 * How CLI commands print: a plain table for people, JSON or JSON Lines for scripts (the same options on
 * every command: docs/cli.md), sentences on stderr for errors.
 */
import { Presets, SingleBar } from "cli-progress";
import { type Command, Option } from "commander";

export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

export function printTable(rows: Array<Record<string, unknown>>, columns?: string[]): void {
  if (rows.length === 0) {
    console.log("(none)");
    return;
  }
  const keys = columns ?? Object.keys(rows[0]);
  const cell = (value: unknown) => (value === null || value === undefined ? "" : String(value));
  const widths = keys.map((key) => Math.max(key.length, ...rows.map((row) => cell(row[key]).length)));
  const line = (values: string[]) =>
    values
      .map((value, i) => value.padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  console.log(line(keys.map((key) => key.toUpperCase())));
  for (const row of rows) console.log(line(keys.map((key) => cell(row[key]))));
}

/**
 * What a command that prints data is asked for: `--json`, the whole value as JSON (a client command's is
 * the API's `result`); `--jsonl`, a list as JSON Lines, one item per line, written as each arrives.
 */
export interface DataOptions {
  json?: boolean;
  jsonl?: boolean;
}

/** Adds `--json` to a command that prints data. */
export function withJson(command: Command, description = "print JSON"): Command {
  return command.option("--json", description);
}

/** Adds `--json` and `--jsonl` to a command that prints a list. */
export function withJsonLines(
  command: Command,
  descriptions: { json?: string; jsonl?: string } = {},
): Command {
  return withJson(command, descriptions.json).addOption(
    new Option("--jsonl", descriptions.jsonl ?? "print the list as JSON Lines: one item per line").conflicts(
      "json",
    ),
  );
}

/** One item as a line of JSON Lines. */
export const printJsonLine = (item: unknown) => console.log(JSON.stringify(item));

/**
 * For scripts: prints `value` as JSON (--json), or `list` (default: `value`, an array) one item per line
 * (--jsonl), and answers true; answers false when a person is to read it instead.
 */
export function printedForScripts(options: DataOptions, value: unknown, list: unknown = value): boolean {
  if (options.jsonl) {
    if (!Array.isArray(list)) throw new Error("--jsonl needs a list to print");
    for (const item of list) printJsonLine(item);
    return true;
  }
  if (options.json) {
    console.log(JSON.stringify(value, null, 2));
    return true;
  }
  return false;
}

/**
 * The format of a command that also takes `--format`, where `--json` and `--jsonl` are other spellings of
 * two of its values (`json` and `jsonl` unless named); `--format` naming another beside them is refused.
 */
export function chosenFormat(
  options: DataOptions & { format?: string },
  fallback: string,
  values: { json: string; jsonl: string } = { json: "json", jsonl: "jsonl" },
): string {
  const flag = options.jsonl ? "jsonl" : options.json ? "json" : undefined;
  if (!flag) return options.format ?? fallback;
  if (options.format !== undefined && options.format !== values[flag])
    throw new CliError(`--${flag} and --format ${options.format} ask for two formats; give one of them`, 2);
  return values[flag];
}

/** For people: rows as a table, an object as `key: value` lines. */
export function show(value: unknown, columns?: string[]): void {
  if (Array.isArray(value)) {
    printTable(value as Array<Record<string, unknown>>, columns);
  } else if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) console.log(`${key}: ${item}`);
  } else {
    console.log(String(value));
  }
}

/** Prints data as JSON or JSON Lines when asked, otherwise for people. */
export function output(options: DataOptions, value: unknown, columns?: string[]): void {
  if (!printedForScripts(options, value)) show(value, columns);
}

/** Bytes as megabytes with one decimal, as progress bars and summaries show them. */
export const megabytes = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** A progress bar on stderr in `format` (cli-progress placeholders), cleared once stopped. */
export function stderrProgressBar(format: string): SingleBar {
  return new SingleBar(
    { stream: process.stderr, format, hideCursor: true, clearOnComplete: true },
    Presets.shades_classic,
  );
}
