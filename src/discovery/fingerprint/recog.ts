/**
 * Identification from Rapid7's Recog databases (shipped translated in ./recog/, BSD 2-Clause, see
 * ./recog/NOTICE). A database is read and compiled the first time a text of its kind is matched, so
 * a discovery worker pays only for the kinds it meets. Matching is bounded: the text is cut to
 * MAX_TEXT_CHARS, and every pattern runs with V8's fallback to its linear-time engine (recog-pattern.ts).
 * When several fingerprints match, the most specific one wins (most facts, a version, a CPE with a
 * version); ties go to the first in Recog's order, which is Recog's own precedence.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RecogDatabase, RecogFingerprint, RecogParam } from "./recog-compile.ts";

/** Recog's texts are banners and headers; anything longer is cut before matching. */
export const MAX_TEXT_CHARS = 8192;

const SHIPPED_DIR = join(import.meta.dirname, "recog");
let dataDir = SHIPPED_DIR;

interface Compiled extends RecogFingerprint {
  regex: RegExp;
}
const loaded = new Map<string, Compiled[] | null>();

/** Points the loader at another translated copy (tests, or an update written elsewhere). */
export function useRecogData(dir: string): void {
  dataDir = dir;
  loaded.clear();
}

export function recogDataDir(): string {
  return dataDir;
}

/** Where `sightline fingerprints update --recog DIR` installs a translated copy. */
export const installedRecogDir = (dataDir: string) => join(dataDir, "recog");

/** The copy installed under the data directory when there is one, else the one shipped in the package. */
export function useInstalledRecog(settings: { dataDir: string }): void {
  const installed = installedRecogDir(settings.dataDir);
  useRecogData(existsSync(join(installed, "index.json")) ? installed : SHIPPED_DIR);
}

function load(kind: string): Compiled[] | null {
  if (loaded.has(kind)) return loaded.get(kind) ?? null;
  const file = join(dataDir, `${kind}.json`);
  let compiled: Compiled[] | null = null;
  if (existsSync(file)) {
    const database = JSON.parse(readFileSync(file, "utf8")) as RecogDatabase;
    compiled = database.fingerprints.map((fingerprint) => ({
      ...fingerprint,
      regex: new RegExp(fingerprint.source, fingerprint.flags),
    }));
  }
  loaded.set(kind, compiled);
  return compiled;
}

/** The raw database (for the examples test and the CLI summary). */
export function readRecogDatabase(kind: string): RecogDatabase | undefined {
  const file = join(dataDir, `${kind}.json`);
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as RecogDatabase) : undefined;
}

export function recogKinds(): string[] {
  const index = join(dataDir, "index.json");
  return existsSync(index) ? Object.keys(JSON.parse(readFileSync(index, "utf8"))) : [];
}

export interface RecogMatch {
  /** `recog:ssh.banner`. */
  source: string;
  description: string;
  /** Recog's parameters: `service.vendor`, `service.product`, `service.version`, `service.cpe23`, `os.*`, `hw.*`. */
  params: Record<string, string>;
}

/** A fingerprint's match on a text, with Recog's anchors and its parameters filled in. */
export function matchFingerprint(fingerprint: RecogFingerprint & { regex: RegExp }, text: string) {
  const found = fingerprint.regex.exec(text);
  if (!found) return undefined;
  if (fingerprint.anchorStart && found.index !== 0) return undefined;
  const endAt = found.index + found[0].length;
  if (fingerprint.anchorEnd === "z" && endAt !== text.length) return undefined;
  if (
    fingerprint.anchorEnd === "Z" &&
    endAt !== text.length &&
    !(endAt === text.length - 1 && text.endsWith("\n"))
  )
    return undefined;
  return paramsOf(fingerprint.params, found);
}

function paramsOf(params: RecogParam[], found: RegExpExecArray): Record<string, string> {
  const values: Record<string, string> = {};
  for (const param of params) {
    if (param.pos > 0) {
      const captured = found[param.pos];
      if (captured !== undefined) values[param.name] = captured;
    } else if (param.value !== undefined) values[param.name] = param.value;
  }
  // `{service.version}` and friends: a value naming another parameter; unset ones leave the value out.
  for (const [name, value] of Object.entries(values)) {
    if (!value.includes("{")) continue;
    let missing = false;
    const filled = value.replace(/\{([a-z0-9_.]+)\}/g, (_all, other: string) => {
      const replacement = values[other];
      if (replacement === undefined || replacement.includes("{")) missing = true;
      return replacement ?? "";
    });
    if (missing) delete values[name];
    else values[name] = filled;
  }
  return values;
}

/** How specific a match is: the winner among several is the one that tells the most. */
export function specificity(params: Record<string, string>): number {
  let score = Object.values(params).filter((value) => value !== "").length;
  if (params["service.product"]) score += 10;
  if (params["service.version"]) score += 20;
  const cpe = params["service.cpe23"];
  if (cpe && !/[:](-|\*)?$/.test(cpe)) score += 5;
  return score;
}

/** A text against one Recog database: the most specific fingerprint that matches, or undefined. */
export function recogIdentify(kind: string, text: string): RecogMatch | undefined {
  const fingerprints = load(kind);
  if (!fingerprints || text.length === 0) return undefined;
  const bounded = text.length > MAX_TEXT_CHARS ? text.slice(0, MAX_TEXT_CHARS) : text;
  let best: { fingerprint: Compiled; params: Record<string, string>; score: number } | undefined;
  for (const fingerprint of fingerprints) {
    const params = matchFingerprint(fingerprint, bounded);
    if (!params) continue;
    const score = specificity(params);
    if (!best || score > best.score) best = { fingerprint, params, score };
  }
  if (!best) return undefined;
  // An empty capture is Recog's "said nothing": left out of what Sightline records.
  const params = Object.fromEntries(Object.entries(best.params).filter(([, value]) => value !== ""));
  return { source: `recog:${kind}`, description: best.fingerprint.description, params };
}

export interface RecogExamplesCheck {
  databases: number;
  fingerprints: number;
  examples: number;
  skipped: number;
  /** Why fingerprints were skipped, with how many each reason kept out. */
  reasons: Map<string, number>;
  /** One line per example a fingerprint does not match, or matches with other values than expected. */
  failures: string[];
  /** Fingerprints whose every example gives the expected values. */
  passing: number;
}

/**
 * Recog's `<example>` entries are its test suite: every fingerprint of every database in the copy in
 * use, against each of its examples, with the values each example expects.
 */
export function checkRecogExamples(): RecogExamplesCheck {
  const check: RecogExamplesCheck = {
    databases: 0,
    fingerprints: 0,
    examples: 0,
    skipped: 0,
    reasons: new Map(),
    failures: [],
    passing: 0,
  };
  for (const kind of recogKinds()) {
    const database = readRecogDatabase(kind);
    if (!database) {
      check.failures.push(`${kind}: listed in index.json but missing`);
      continue;
    }
    check.databases++;
    check.skipped += database.skipped.length;
    for (const { reason } of database.skipped)
      check.reasons.set(reason, (check.reasons.get(reason) ?? 0) + 1);
    for (const fingerprint of database.fingerprints) {
      check.fingerprints++;
      const compiled = { ...fingerprint, regex: new RegExp(fingerprint.source, fingerprint.flags) };
      const before = check.failures.length;
      for (const example of fingerprint.examples) {
        check.examples++;
        const text = JSON.stringify(example.text.slice(0, 120));
        const params = matchFingerprint(compiled, example.text);
        if (!params) {
          check.failures.push(`${kind}: ${fingerprint.pattern} does not match ${text}`);
          continue;
        }
        for (const [name, expected] of Object.entries(example.expect))
          if (params[name] !== expected)
            check.failures.push(
              `${kind}: ${fingerprint.pattern} gives ${name}=${params[name]} for ${text}, expected ${expected}`,
            );
      }
      if (check.failures.length === before) check.passing++;
    }
  }
  return check;
}

/** Recog writes CPEs as 2.2 URIs (`cpe:/a:vendor:product:version`); Sightline's facts are CPE 2.3. */
export function toCpe23(cpe: string | undefined): string | undefined {
  if (!cpe) return undefined;
  if (cpe.startsWith("cpe:2.3:")) return cpe;
  const uri = /^cpe:\/([aho]):(.*)$/.exec(cpe);
  if (!uri) return undefined;
  const parts = uri[2].split(":").map((part) => (part === "" ? "*" : part));
  while (parts.length < 10) parts.push("*");
  return `cpe:2.3:${uri[1]}:${parts.slice(0, 10).join(":")}`;
}
