/** How CLI commands print: a plain table for people, JSON for scripts, sentences on stderr for errors. */
import { Presets, SingleBar } from "cli-progress";

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

/** Prints rows as JSON when asked, otherwise as a table. */
export function output(json: boolean | undefined, value: unknown, columns?: string[]): void {
  if (json) {
    console.log(JSON.stringify(value, null, 2));
  } else if (Array.isArray(value)) {
    printTable(value as Array<Record<string, unknown>>, columns);
  } else if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) console.log(`${key}: ${item}`);
  } else {
    console.log(String(value));
  }
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
