/**
 * Recog's patterns are Ruby regular expressions; this turns one into a JavaScript RegExp that the
 * template engine's bound applies to (templates/regex.ts: V8 redoes a match that backtracks too much
 * in its linear-time engine). Ruby's semantics kept:
 *  - `^`/`$` always match at line breaks in Ruby → the `m` flag, always;
 *  - Ruby's MULTILINE (REG_MULTILINE, REG_DOT_NEWLINE, inline `(?m)`) is dot-matches-newline → `s`;
 *  - REG_ICASE and `(?i)` → `i`;
 *  - `\A` at the start and `\z`/`\Z` at the end are checked on the match's position after it;
 *  - possessive quantifiers (`*+`) and atomic groups (`(?>…)`) become greedy ones: they can only
 *    match more, and the examples prove the translation;
 *  - `\h` and POSIX classes (`[[:alpha:]]`) become JavaScript classes; named groups are the same.
 * A pattern that the linear engine cannot run (look-around, back-references) would have no bound,
 * so it is refused with that reason, as is anything else that does not compile.
 */
import { setFlagsFromString } from "node:v8";
import "../templates/regex.ts";

setFlagsFromString("--enable-experimental-regexp-engine");

export type TranslatedPattern =
  | { source: string; flags: string; anchorStart?: boolean; anchorEnd?: "z" | "Z" }
  | { reason: string };

const POSIX: Record<string, string> = {
  alpha: "a-zA-Z",
  digit: "0-9",
  alnum: "a-zA-Z0-9",
  upper: "A-Z",
  lower: "a-z",
  space: "\\s",
  xdigit: "0-9a-fA-F",
  punct: "!-\\/:-@\\[-`{-~",
  word: "\\w",
  print: "\\x20-\\x7e",
  graph: "\\x21-\\x7e",
  cntrl: "\\x00-\\x1f\\x7f",
  blank: " \\t",
};

/** Ruby inline flags as JavaScript ones: Ruby's `m` is JavaScript's `s`; `x` is not supported. */
function inlineFlags(ruby: string): string | undefined {
  if (ruby.includes("x")) return undefined;
  return ruby.replace(/m/g, "s");
}

export function translateRecogPattern(pattern: string, recogFlags: string): TranslatedPattern {
  const flags = new Set(["m"]);
  for (const flag of recogFlags.split(",").filter(Boolean)) {
    if (flag === "REG_ICASE") flags.add("i");
    else if (flag === "REG_MULTILINE" || flag === "REG_DOT_NEWLINE") flags.add("s");
    else return { reason: `unknown flag ${flag}` };
  }
  let rest = pattern;
  for (;;) {
    const leading = /^\(\?([imx]+)\)/.exec(rest);
    if (!leading) break;
    const js = inlineFlags(leading[1]);
    if (js === undefined) return { reason: "extended mode (?x)" };
    for (const flag of js) flags.add(flag);
    rest = rest.slice(leading[0].length);
  }
  let anchorStart = false;
  let anchorEnd: "z" | "Z" | undefined;
  if (rest.startsWith("\\A")) {
    anchorStart = true;
    rest = rest.slice(2);
  }
  const end = /(\\+)([zZ])$/.exec(rest);
  if (end && end[1].length % 2 === 1) {
    anchorEnd = end[2] as "z" | "Z";
    rest = rest.slice(0, -2);
  }
  let out = "";
  let inClass = false;
  for (let i = 0; i < rest.length; i++) {
    const c = rest[i];
    if (c === "\\") {
      const next = rest[i + 1];
      if (next === undefined) return { reason: "trailing backslash" };
      if (next === "A" || next === "z" || next === "Z" || next === "G")
        return { reason: `\\${next} inside the pattern` };
      if (/[1-9k]/.test(next) && !inClass) return { reason: "a back-reference (no linear-time bound)" };
      if (next === "h") out += inClass ? "0-9a-fA-F" : "[0-9a-fA-F]";
      else if (next === "H") out += inClass ? "\\x00-\\/:-@G-`g-\\uffff" : "[^0-9a-fA-F]";
      else out += c + next;
      i++;
      continue;
    }
    if (inClass) {
      if (c === "[" && rest[i + 1] === ":") {
        const posix = /^\[:(\^?)([a-z]+):\]/.exec(rest.slice(i));
        if (!posix || !POSIX[posix[2]] || posix[1]) return { reason: `POSIX class ${posix?.[0] ?? "["}` };
        out += POSIX[posix[2]];
        i += posix[0].length - 1;
        continue;
      }
      if (c === "[") return { reason: "a nested character class" };
      if (c === "]") inClass = false;
      out += c;
      continue;
    }
    if (c === "[") {
      inClass = true;
      out += c;
      // A `]` first in the class is a literal in Ruby.
      if (rest[i + 1] === "^") {
        out += "^";
        i++;
      }
      if (rest[i + 1] === "]") {
        out += "\\]";
        i++;
      }
      continue;
    }
    if (c === "(" && rest[i + 1] === "?") {
      const group = /^\(\?([a-z]*)(-[a-z]+)?([:)])/.exec(rest.slice(i));
      if (rest.startsWith("(?>", i)) {
        out += "(?:";
        i += 2;
        continue;
      }
      if (rest.startsWith("(?=", i) || rest.startsWith("(?!", i) || /^\(\?<[=!]/.test(rest.slice(i)))
        return { reason: "look-around (no linear-time bound)" };
      if (group && (group[1] || group[2])) {
        if (group[3] === ")") return { reason: "inline flags inside the pattern" };
        const on = inlineFlags(group[1]);
        const off = group[2] ? inlineFlags(group[2]) : "";
        if (on === undefined || off === undefined) return { reason: "extended mode (?x)" };
        out += `(?${on}${off}:`;
        i += group[0].length - 1;
        continue;
      }
      out += c;
      continue;
    }
    if (c === "+" && /[*+?}]/.test(rest[i - 1] ?? "") && rest[i - 2] !== "\\" && out.length > 0) continue;
    out += c;
  }
  if (inClass) return { reason: "an unterminated character class" };
  const jsFlags = [...flags].sort().join("");
  try {
    new RegExp(out, jsFlags);
  } catch (error) {
    return { reason: `does not compile in JavaScript: ${(error as Error).message}` };
  }
  try {
    new RegExp(out, `${jsFlags}l`);
  } catch {
    return { reason: "outside what the linear-time engine runs, so unbounded" };
  }
  return {
    source: out,
    flags: jsFlags,
    ...(anchorStart ? { anchorStart } : {}),
    ...(anchorEnd ? { anchorEnd } : {}),
  };
}
