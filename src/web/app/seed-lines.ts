/**
 * Seeds typed or pasted in bulk, one per line, each read by `parseSeedText` and checked with the API's
 * own rules (src/core/seeds.ts). A line may name its type first ("Nameserver ns1.example.com", "Domain,acme.co.uk")
 * where detection cannot know it. Errors the API returns for `seeds.N` map back to their line.
 */
import {
  checkSeed,
  parseSeedText,
  SEED_TYPES,
  type Seed,
  type SeedType,
  seedHint,
} from "../../core/seeds.ts";
import type { ErrorDetail } from "./api.ts";

export interface SeedLine {
  /** 1-based line number in the text. */
  line: number;
  value: string;
  type: SeedType | undefined;
  /** The line named its type instead of leaving it to detection. */
  explicit: boolean;
  /** The canonical seed, when the line is valid. */
  seed?: Seed;
  /** Why the line cannot be sent, in the API's words where the API has words for it. */
  problem?: string;
}

/** Parses the text; blank lines, `#` comments and a `type,name` header are skipped. */
export function parseSeedLines(text: string): SeedLine[] {
  const lines: SeedLine[] = [];
  text.split(/\r\n|\r|\n/).forEach((raw, index) => {
    const parsed = parseSeedText(raw);
    if (!parsed) return;
    const { value, type, explicit } = parsed;
    const entry: SeedLine = { line: index + 1, value, type, explicit };
    const hint = type ? undefined : seedHint(value);
    if (hint) entry.problem = `"${value}": ${hint}`;
    else if (!type) {
      entry.problem = `"${value}" is not recognised as a domain, DNS name, IP address, CIDR block or http(s) URL; put its type first, e.g. "Nameserver ns1.example.com"`;
    } else {
      const check = checkSeed({ type, name: value });
      if (check.ok) entry.seed = check.seed;
      else entry.problem = check.message;
    }
    lines.push(entry);
  });
  return lines;
}

/** The same line with its type written out, so that a chosen type survives in the text. */
export function retypeLine(text: string, line: number, type: SeedType): string {
  const rows = text.split(/\r\n|\r|\n/);
  const raw = rows[line - 1];
  if (raw === undefined) return text;
  rows[line - 1] = `${type} ${parseSeedText(raw)?.value ?? raw.trim()}`;
  return rows.join("\n");
}

/** What is sent: every valid line's seed, and for each seed index the line it came from. */
export function seedsToSend(lines: SeedLine[]): { seeds: Seed[]; lineOf: number[] } {
  const seeds: Seed[] = [];
  const lineOf: number[] = [];
  for (const entry of lines) {
    if (!entry.seed) continue;
    seeds.push({ type: entry.seed.type, name: entry.value });
    lineOf.push(entry.line);
  }
  return { seeds, lineOf };
}

/** The API's `seeds.N` details as messages per line; details about other fields stay general. */
export function errorsByLine(
  details: ErrorDetail[],
  lineOf: number[],
): { byLine: Map<number, string[]>; general: ErrorDetail[] } {
  const byLine = new Map<number, string[]>();
  const general: ErrorDetail[] = [];
  for (const detail of details) {
    const match = /^seeds\.(\d+)(\.|$)/.exec(detail.field);
    const line = match ? lineOf[Number(match[1])] : undefined;
    if (line === undefined) {
      general.push(detail);
      continue;
    }
    byLine.set(line, [...(byLine.get(line) ?? []), detail.message]);
  }
  return { byLine, general };
}

/** "3 Domain, 2 IpAddress" for a summary. */
export function countByType(lines: SeedLine[]): Array<[SeedType, number]> {
  const counts = new Map<SeedType, number>();
  for (const entry of lines)
    if (entry.seed) counts.set(entry.seed.type, (counts.get(entry.seed.type) ?? 0) + 1);
  return SEED_TYPES.filter((type) => counts.has(type)).map((type) => [type, counts.get(type)!]);
}
