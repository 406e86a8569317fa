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

/** A class body (between `[` and `]`) with both cases of each letter and letter range. */
function foldClass(body: string): string {
  let extra = "";
  for (let i = 0; i < body.length; i++) {
    if (body[i] === "\\") {
      i++;
      continue;
    }
    const range = /^([a-zA-Z])-([a-zA-Z])/.exec(body.slice(i));
    if (range) {
      const swap = (x: string) => (x === x.toLowerCase() ? x.toUpperCase() : x.toLowerCase());
      extra += `${swap(range[1])}-${swap(range[2])}`;
      i += 2;
    } else if (/[a-zA-Z]/.test(body[i])) {
      extra += body[i] === body[i].toLowerCase() ? body[i].toUpperCase() : body[i].toLowerCase();
    }
  }
  // Before the body (after a `^`), so a trailing `-` stays a literal.
  return body.startsWith("^") ? `^${extra}${body.slice(1)}` : extra + body;
}

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
  // `^(?i)…` is `(?i)^…`; a large counted repetition becomes `*`/`+` (the linear engine unrolls
  // counts, and the text is already bounded in length).
  let rest = pattern
    .replace(/^\^(\(\?[imx]+\))/, "$1^")
    .replace(
      /(^|[^\\])\{([01]),(\d{3,})\}/g,
      (_all, before: string, min: string) => `${before}${min === "0" ? "*" : "+"}`,
    );
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
  let classStart = 0;
  const caseless = [flags.has("i")];
  flags.delete("i");
  const folding = () => caseless[caseless.length - 1];
  // Dot-matches-newline per group, as `(?m:…)` may set it for a part only.
  const dotAlls = [false];
  const dotAll = () => dotAlls[dotAlls.length - 1];
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
      else {
        // `\xHH`, `\uHHHH` and `\cX` carry their payload: copied whole, never case-folded.
        const payload = /^(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{4}|c[a-zA-Z])/.exec(rest.slice(i + 1));
        const escaped = payload ? payload[0] : next;
        out += c + escaped;
        i += escaped.length;
        continue;
      }
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
      if (c === "]") {
        inClass = false;
        if (folding()) out = out.slice(0, classStart) + foldClass(out.slice(classStart));
      }
      out += c;
      continue;
    }
    if (c === "[") {
      inClass = true;
      out += c;
      classStart = out.length;
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
        caseless.push(folding());
        dotAlls.push(dotAll());
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
        const js = (on + off).replace(/i/g, "");
        caseless.push(on.includes("i") ? true : off.includes("i") ? false : folding());
        dotAlls.push(on.includes("s") ? true : off.includes("s") ? false : dotAll());
        out += js === "" || js === "-" ? "(?:" : `(?${js}:`;
        i += group[0].length - 1;
        continue;
      }
      caseless.push(folding());
      dotAlls.push(dotAll());
      out += c;
      continue;
    }
    if (c === "(") {
      caseless.push(folding());
      dotAlls.push(dotAll());
    }
    if (c === ")" && caseless.length > 1) {
      caseless.pop();
      dotAlls.pop();
    }
    // Ruby's `.` stops only at `\n`; JavaScript's also at `\r`, U+2028 and U+2029.
    if (c === "." && !flags.has("s") && !dotAll()) {
      out += "[^\\n]";
      continue;
    }
    if (folding() && /[a-zA-Z]/.test(c)) {
      out += `[${c.toLowerCase()}${c.toUpperCase()}]`;
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
