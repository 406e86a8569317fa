/**
 * Matchers and extractors over one response, seen as named parts (`body`, `header`, `status_code`, a
 * header by its name, …) that the protocol runners fill in. Every part is already bounded in size by
 * the client that read it; regexes are bounded further by their ReDoS verdict (regex.ts).
 */
import { createRequire } from "node:module";
import { DOMParser } from "@xmldom/xmldom";
import { asText, DslError, type DslVariables, evaluate, holds } from "./dsl.ts";
import { allMatches, firstMatch, regexTest } from "./regex.ts";
import type { Extractor, Interpolated, Matcher, Operators } from "./template.ts";

/** Values one extractor may yield, and characters one value may hold: findings stay readable. */
const MAX_VALUES = 50;
const MAX_VALUE_LENGTH = 1024;
/** JSON and XPath documents larger than this are not parsed. */
const MAX_DOCUMENT_BYTES = 1024 * 1024;

/**
 * The xpath package, loaded without its typings: they pull the DOM library's types into the whole
 * program (`/// <reference lib="dom" />`), which then clash with Node's. This is the part used: a
 * parsed expression selected with options.
 */
const xpath = createRequire(import.meta.url)("xpath") as XPathParser;

interface XPathParser {
  parse(expression: string): {
    select(options: { node: unknown; isHtml: boolean; allowAnyNamespaceForNoPrefix: boolean }): unknown[];
  };
}

export interface Parts {
  variables: DslVariables;
  /** Raw bytes of parts a binary matcher may read (body); others are their text in latin1. */
  bytes?: Record<string, Buffer>;
}

/**
 * A `{{…}}` text made concrete. A hole that reads a variable not known yet (an extractor's value
 * before its request ran) stays as written, as nuclei leaves it; a helper's failure throws a DslError.
 */
export function interpolate(value: Interpolated, variables: DslVariables): string {
  if (value.holes.length === 0) return value.text;
  let out = value.text;
  for (const hole of value.holes) {
    let replacement: string;
    try {
      replacement = asText(evaluate(hole.expression, variables));
    } catch (error) {
      if (error instanceof DslError && /is not known here$/.test(error.message)) continue;
      throw error;
    }
    out = out.split(hole.raw).join(replacement);
  }
  return out;
}

const partOf = (parts: Parts, name: string) => {
  const key = name === "all_headers" ? "header" : name === "raw" ? "response" : name;
  return asText(parts.variables[key] ?? parts.variables[key.toLowerCase().replace(/-/g, "_")]);
};

function matchOne(matcher: Matcher, parts: Parts): boolean {
  const combine = (results: boolean[]) =>
    matcher.condition === "and" ? results.every(Boolean) : results.some(Boolean);
  switch (matcher.type) {
    case "status":
      return matcher.status.includes(Number(parts.variables.status_code));
    case "size": {
      const size = Number(parts.variables.content_length ?? partOf(parts, matcher.part).length);
      return matcher.size.includes(size);
    }
    case "word": {
      const text = partOf(parts, matcher.part);
      const haystack = matcher.caseInsensitive ? text.toLowerCase() : text;
      return combine(
        matcher.words.map((word) => {
          let needle: string;
          try {
            needle = interpolate(word, parts.variables);
          } catch {
            return false;
          }
          return haystack.includes(matcher.caseInsensitive ? needle.toLowerCase() : needle);
        }),
      );
    }
    case "regex": {
      const text = partOf(parts, matcher.part);
      return combine(matcher.regex.map((pattern) => regexTest(pattern, text)));
    }
    case "binary": {
      const bytes = parts.bytes?.[matcher.part] ?? Buffer.from(partOf(parts, matcher.part), "latin1");
      return combine(matcher.binary.map((needle) => bytes.includes(needle)));
    }
    case "dsl":
      return combine(matcher.dsl.map((expression) => holds(expression, parts.variables)));
  }
}

export function matches(matcher: Matcher, parts: Parts): boolean {
  return matchOne(matcher, parts) !== matcher.negative;
}

const clip = (value: string) =>
  value.length > MAX_VALUE_LENGTH ? `${value.slice(0, MAX_VALUE_LENGTH)}…` : value;

/** `.a.b[0]`, `.a[]`, `.["x"]` on a parsed JSON document. */
function jsonPath(document: unknown, path: string): unknown[] {
  let current: unknown[] = [document];
  for (const [, key, index, quoted] of path.matchAll(/\.?([\w$-]+)|\[(\d*)\]|\["([^"]*)"\]/g)) {
    const next: unknown[] = [];
    for (const value of current) {
      if (key !== undefined || quoted !== undefined) {
        if (value && typeof value === "object" && !Array.isArray(value))
          next.push((value as Record<string, unknown>)[key ?? quoted]);
      } else if (Array.isArray(value)) {
        if (index === "") next.push(...value);
        else next.push(value[Number(index)]);
      }
    }
    current = next.filter((value) => value !== undefined);
  }
  return current;
}

function extractOne(extractor: Extractor, parts: Parts): string[] {
  const text = () => partOf(parts, extractor.part);
  switch (extractor.type) {
    case "regex": {
      const input = text();
      return extractor.regex.flatMap((pattern) => allMatches(pattern, input, extractor.group, MAX_VALUES));
    }
    case "kval":
      return extractor.kval.flatMap((key) => {
        const value = parts.variables[key.toLowerCase().replace(/-/g, "_")];
        return value === undefined ? [] : [asText(value)];
      });
    case "json": {
      const source = text();
      if (source.length > MAX_DOCUMENT_BYTES) return [];
      let document: unknown;
      try {
        document = JSON.parse(source);
      } catch {
        return [];
      }
      return extractor.json.flatMap((path) =>
        jsonPath(document, path).map((value) => (typeof value === "string" ? value : JSON.stringify(value))),
      );
    }
    case "xpath": {
      const source = text();
      if (source.length > MAX_DOCUMENT_BYTES || source.trim() === "") return [];
      let document: unknown;
      try {
        document = new DOMParser({ onError: () => {} }).parseFromString(source, "text/html");
      } catch {
        return [];
      }
      return extractor.xpath.flatMap((expression) => {
        let nodes: unknown;
        try {
          // An HTML document's elements are in the XHTML namespace; isHtml lets templates name them plainly.
          nodes = xpath
            .parse(expression)
            .select({ node: document, isHtml: true, allowAnyNamespaceForNoPrefix: true });
        } catch {
          return [];
        }
        return (Array.isArray(nodes) ? nodes : [nodes]).flatMap((node) => {
          if (node === null || node === undefined) return [];
          if (typeof node !== "object") return [String(node)];
          const element = node as { getAttribute?(name: string): string | null; textContent?: string | null };
          if (extractor.attribute) {
            const value = element.getAttribute?.(extractor.attribute);
            return value ? [value] : [];
          }
          return [element.textContent ?? String(node)];
        });
      });
    }
    case "dsl":
      return extractor.dsl.flatMap((expression) => {
        try {
          return [asText(evaluate(expression, parts.variables))];
        } catch (error) {
          if (error instanceof DslError) return [];
          throw error;
        }
      });
  }
}

export interface OperatorResult {
  matched: boolean;
  /** Names of the matchers that matched (internal ones left out). */
  matcherNames: string[];
  /** Values per extractor name (`extracted` for unnamed), internal ones left out. */
  extracted: Record<string, string[]>;
  /** Internal extractors' first values: variables for the template's next requests. */
  internal: Record<string, string>;
}

/**
 * Runs a block's matchers and extractors on one set of parts. Matchers go first, an `and` stopping at
 * its first miss; then the extractors whose values can count: all of them on a match (or when the block
 * has no matchers, whose match is having extracted something), else only the internal ones, whose values
 * feed the template's next requests either way. Neither reads the other's values, so the result is the
 * one running every extractor first would give; most responses match no template, and this skips their
 * extraction (4% of the discovery thread's time in a run of the library).
 */
export function runOperators(operators: Operators, parts: Parts): OperatorResult {
  const matcherNames: string[] = [];
  let matched = operators.matchers.length === 0;
  if (!matched) {
    const all = operators.matchersCondition === "and";
    matched = all;
    for (const matcher of operators.matchers) {
      const hit = matches(matcher, parts);
      if (hit && matcher.name && !matcher.internal) matcherNames.push(matcher.name);
      if (all && !hit) {
        matched = false;
        break;
      }
      if (!all && hit) matched = true;
    }
  }
  const extracted: Record<string, string[]> = {};
  const internal: Record<string, string> = {};
  for (const extractor of operators.extractors) {
    if (!matched && !extractor.internal) continue;
    const values = [
      ...new Set(
        extractOne(extractor, parts)
          .filter((value) => value !== "")
          .map(clip),
      ),
    ].slice(0, MAX_VALUES);
    if (values.length === 0) continue;
    if (extractor.internal && extractor.name) internal[extractor.name] = values[0];
    else {
      const key = extractor.name ?? "extracted";
      extracted[key] = [...new Set([...(extracted[key] ?? []), ...values])];
    }
  }
  if (operators.matchers.length === 0) matched = Object.keys(extracted).length > 0;
  return {
    matched,
    matcherNames: matched ? matcherNames : [],
    extracted: matched ? extracted : {},
    internal,
  };
}

/** Where the first word or regex matcher found its match: the part and a short excerpt around it. */
export function evidence(operators: Operators, parts: Parts): { part: string; excerpt: string } | undefined {
  for (const matcher of operators.matchers) {
    if (matcher.negative || (matcher.type !== "word" && matcher.type !== "regex")) continue;
    const text = partOf(parts, matcher.part);
    let at = -1;
    let length = 0;
    if (matcher.type === "word") {
      const haystack = matcher.caseInsensitive ? text.toLowerCase() : text;
      for (const word of matcher.words) {
        let needle: string;
        try {
          needle = interpolate(word, parts.variables);
        } catch {
          continue;
        }
        at = haystack.indexOf(matcher.caseInsensitive ? needle.toLowerCase() : needle);
        length = needle.length;
        if (at !== -1) break;
      }
    } else {
      for (const pattern of matcher.regex) {
        const found = firstMatch(pattern, text);
        if (found) {
          at = found.index;
          length = (found[0] ?? "").length;
          break;
        }
      }
    }
    if (at === -1) continue;
    const start = Math.max(0, at - 80);
    return {
      part: matcher.part,
      excerpt: text.slice(start, Math.min(text.length, at + length + 80, start + 400)),
    };
  }
  return undefined;
}
