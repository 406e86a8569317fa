/**
 * Template regular expressions: written for Go's regexp (RE2 syntax), run by V8. Catastrophic
 * backtracking is bounded by V8 itself: this module turns on
 * `--enable-experimental-regexp-engine-on-excessive-backtracks`, so a match that backtracks too much
 * is redone by V8's linear-time engine — `(a+)+$` on 1 MB costs about a second instead of forever,
 * while ordinary patterns keep V8's full speed. That engine has no back-references or look-around, and
 * RE2 (so Go, so nuclei) has none either, so a pattern using them is refused: every pattern that runs
 * can fall back. The input is bounded before it gets here (SIGHTLINE_HTTP_MAX_BODY_BYTES, the network
 * read bound). Go's leading inline flags `(?i)`, `(?s)`, `(?m)` become JavaScript flags and `(?P<n>…)`
 * becomes `(?<n>…)`; other RE2-only syntax refuses the template rather than being misread.
 * (re2-wasm and recheck were tried: RE2 in WebAssembly ran ordinary patterns 100–300× slower than V8,
 * recheck needed seconds to judge one pattern.)
 */
import { setFlagsFromString } from "node:v8";

setFlagsFromString("--enable-experimental-regexp-engine-on-excessive-backtracks");

export class TemplateError extends Error {}

export interface SafeRegex {
  /** The pattern as the template wrote it. */
  source: string;
  regex: RegExp;
}

const compiled = new Map<string, SafeRegex>();
/** Patterns kept compiled per process (DSL regex() calls with computed patterns included). */
const MAX_COMPILED = 20_000;

/** Go's leading inline flags as JavaScript flags: `(?i)abc` → `abc` with `i`. */
function translate(pattern: string, caseInsensitive: boolean): { source: string; flags: string } {
  let source = pattern;
  const flags = new Set(["g"]);
  if (caseInsensitive) flags.add("i");
  for (;;) {
    const inline = /^\(\?([imsU]+)\)/.exec(source);
    if (!inline) break;
    for (const flag of inline[1]) {
      if (flag === "U") throw new TemplateError(`regex ${JSON.stringify(pattern)} uses RE2's (?U) flag`);
      flags.add(flag);
    }
    source = source.slice(inline[0].length);
  }
  const plain = source.replace(/\\\\/g, "");
  const refuse = (what: string) => {
    throw new TemplateError(`regex ${JSON.stringify(pattern)} uses ${what}, which Sightline does not run`);
  };
  if (/\(\?[imsU-]+[:)]/.test(plain)) refuse("inline flags inside the pattern (RE2 only)");
  if (/\\[zApP]|\[\[:/.test(plain)) refuse("RE2-only syntax (\\z, \\A, \\p, [[:class:]])");
  if (/\\[1-9]|\\k</.test(plain))
    refuse("a back-reference (RE2 has none, and it could backtrack without bound)");
  if (/\(\?<?[=!]/.test(plain)) refuse("look-around (RE2 has none, and it could backtrack without bound)");
  return { source: source.replace(/\(\?P</g, "(?<"), flags: [...flags].join("") };
}

/** A compiled pattern, or a TemplateError saying why it may not run. */
export function safeRegex(pattern: string, options: { caseInsensitive?: boolean } = {}): SafeRegex {
  const key = `${options.caseInsensitive ? "i" : ""}/${pattern}`;
  const known = compiled.get(key);
  if (known) return known;
  const { source, flags } = translate(pattern, options.caseInsensitive ?? false);
  let regex: RegExp;
  try {
    regex = new RegExp(source, flags);
  } catch (error) {
    throw new TemplateError(`regex ${JSON.stringify(pattern)} does not compile: ${(error as Error).message}`);
  }
  const safe = { source: pattern, regex };
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  compiled.set(key, safe);
  return safe;
}

/** The first match: where, and what (and the groups). */
export function firstMatch(pattern: SafeRegex, input: string) {
  pattern.regex.lastIndex = 0;
  const found = pattern.regex.exec(input);
  pattern.regex.lastIndex = 0;
  return found;
}

export const regexTest = (pattern: SafeRegex, input: string) => firstMatch(pattern, input) !== null;

/** Group `group` of every match, at most `most`. */
export function allMatches(pattern: SafeRegex, input: string, group: number, most: number): string[] {
  const values: string[] = [];
  pattern.regex.lastIndex = 0;
  for (let found = pattern.regex.exec(input); found; found = pattern.regex.exec(input)) {
    const value = found[group];
    if (value !== undefined) values.push(value);
    if (values.length >= most) break;
    // An empty match must still move on.
    if (found[0] === "") pattern.regex.lastIndex = found.index + 1;
  }
  pattern.regex.lastIndex = 0;
  return values;
}
