/**
 * The template DSL (nuclei's `dsl` matchers and extractors, and `{{…}}` expressions): parsed by jsep,
 * then walked by a small evaluator that knows literals, variables, the operators below and a whitelist
 * of helper functions. Nothing is ever handed to `eval`; a function outside the whitelist refuses the
 * template when it is loaded, not when it runs. Regexes inside expressions go through the same ReDoS
 * check as regex matchers (regex.ts).
 */
import { createHash } from "node:crypto";
import jsep from "jsep";
import { compareVersions } from "../../core/versions.ts";
import { murmur3 } from "../fingerprint/fingerprint.ts";
import { regexTest, safeRegex, TemplateError } from "./regex.ts";

jsep.addBinaryOp("=~", 6);
jsep.addBinaryOp("!~", 6);
jsep.addBinaryOp("**", 11);

export type DslValue = string | number | boolean;
export type DslVariables = Record<string, DslValue | undefined>;

/** A value read as text the way nuclei does: numbers in decimal, booleans as true/false. */
export const asText = (value: DslValue | undefined) => (value === undefined ? "" : String(value));

function asNumber(value: DslValue): number {
  if (typeof value === "number") return value;
  if (typeof value === "boolean") return value ? 1 : 0;
  const number = Number(value.trim());
  if (Number.isNaN(number)) throw new DslError(`"${value.slice(0, 40)}" is not a number`);
  return number;
}

const truthy = (value: DslValue) =>
  typeof value === "boolean" ? value : typeof value === "number" ? value !== 0 : value !== "";

/**
 * A template's expression that cannot be evaluated here (a variable not known yet, a helper's refusal):
 * an expected outcome, thrown and caught per response, so it carries no stack trace to capture.
 */
export class DslError extends Error {
  constructor(message: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }
}

const hash = (algorithm: string) => (value: DslValue) =>
  createHash(algorithm).update(asText(value)).digest("hex");

/** One constraint of compare_versions: "< 2.0", ">=1.2.3", "= 1.0", "1.0" (equal). */
function satisfies(version: string, constraint: string): boolean {
  const match = /^\s*(<=|>=|==|!=|<|>|=)?\s*v?([\w.+-]+)\s*$/.exec(constraint);
  if (!match) throw new DslError(`"${constraint}" is not a version constraint`);
  const order = compareVersions(version, match[2]);
  switch (match[1] ?? "=") {
    case "<":
      return order < 0;
    case "<=":
      return order <= 0;
    case ">":
      return order > 0;
    case ">=":
      return order >= 0;
    case "!=":
      return order !== 0;
    default:
      return order === 0;
  }
}

type Helper = { min: number; max: number; run: (...args: DslValue[]) => DslValue };
const text = asText;

const regexCall = (pattern: DslValue, input: DslValue) => regexTest(safeRegex(text(pattern)), text(input));

/** The helpers public templates use most, by nuclei's names (and its older spellings). */
export const HELPERS: Record<string, Helper> = {
  contains: { min: 2, max: 2, run: (a, b) => text(a).includes(text(b)) },
  contains_all: { min: 2, max: 64, run: (a, ...rest) => rest.every((b) => text(a).includes(text(b))) },
  contains_any: { min: 2, max: 64, run: (a, ...rest) => rest.some((b) => text(a).includes(text(b))) },
  starts_with: { min: 2, max: 64, run: (a, ...rest) => rest.some((b) => text(a).startsWith(text(b))) },
  ends_with: { min: 2, max: 64, run: (a, ...rest) => rest.some((b) => text(a).endsWith(text(b))) },
  line_starts_with: {
    min: 2,
    max: 64,
    run: (a, ...rest) =>
      text(a)
        .split("\n")
        .some((line) => rest.some((b) => line.startsWith(text(b)))),
  },
  line_ends_with: {
    min: 2,
    max: 64,
    run: (a, ...rest) =>
      text(a)
        .split("\n")
        .some((line) => rest.some((b) => line.replace(/\r$/, "").endsWith(text(b)))),
  },
  regex: { min: 2, max: 2, run: regexCall },
  len: { min: 1, max: 1, run: (a) => text(a).length },
  to_lower: { min: 1, max: 1, run: (a) => text(a).toLowerCase() },
  tolower: { min: 1, max: 1, run: (a) => text(a).toLowerCase() },
  to_upper: { min: 1, max: 1, run: (a) => text(a).toUpperCase() },
  toupper: { min: 1, max: 1, run: (a) => text(a).toUpperCase() },
  trim: { min: 1, max: 2, run: (a, cut) => trimWith(text(a), cut === undefined ? " \t\r\n" : text(cut), 3) },
  trim_left: { min: 2, max: 2, run: (a, cut) => trimWith(text(a), text(cut), 1) },
  trim_right: { min: 2, max: 2, run: (a, cut) => trimWith(text(a), text(cut), 2) },
  trim_space: { min: 1, max: 1, run: (a) => text(a).trim() },
  trim_prefix: {
    min: 2,
    max: 2,
    run: (a, p) => (text(a).startsWith(text(p)) ? text(a).slice(text(p).length) : text(a)),
  },
  trim_suffix: {
    min: 2,
    max: 2,
    run: (a, s) => (text(s) && text(a).endsWith(text(s)) ? text(a).slice(0, -text(s).length) : text(a)),
  },
  replace: { min: 3, max: 3, run: (a, from, to) => text(a).split(text(from)).join(text(to)) },
  replace_regex: {
    min: 3,
    max: 3,
    run: (a, pattern, to) => {
      const safe = safeRegex(text(pattern));
      safe.regex.lastIndex = 0;
      return text(a).replace(safe.regex, text(to));
    },
  },
  concat: { min: 1, max: 64, run: (...args) => args.map(text).join("") },
  join: { min: 2, max: 64, run: (separator, ...args) => args.map(text).join(text(separator)) },
  substr: {
    min: 2,
    max: 3,
    run: (a, start, end) => text(a).slice(asNumber(start), end === undefined ? undefined : asNumber(end)),
  },
  reverse: { min: 1, max: 1, run: (a) => [...text(a)].reverse().join("") },
  repeat: { min: 2, max: 2, run: (a, n) => text(a).repeat(Math.min(4096, Math.max(0, asNumber(n)))) },
  base64: { min: 1, max: 1, run: (a) => Buffer.from(text(a), "latin1").toString("base64") },
  base64_decode: { min: 1, max: 1, run: (a) => Buffer.from(text(a), "base64").toString("latin1") },
  base64_py: {
    min: 1,
    max: 1,
    run: (a) =>
      `${(
        Buffer.from(text(a), "latin1")
          .toString("base64")
          .match(/.{1,76}/g) ?? []
      ).join("\n")}\n`,
  },
  hex_encode: { min: 1, max: 1, run: (a) => Buffer.from(text(a), "latin1").toString("hex") },
  hex_decode: { min: 1, max: 1, run: (a) => Buffer.from(text(a), "hex").toString("latin1") },
  url_encode: { min: 1, max: 1, run: (a) => encodeURIComponent(text(a)) },
  url_decode: {
    min: 1,
    max: 1,
    run: (a) => {
      try {
        return decodeURIComponent(text(a).replace(/\+/g, " "));
      } catch {
        throw new DslError("url_decode: malformed percent-encoding");
      }
    },
  },
  html_escape: {
    min: 1,
    max: 1,
    run: (a) =>
      text(a).replace(
        /[&<>"']/g,
        (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;" })[c] ?? c,
      ),
  },
  html_unescape: {
    min: 1,
    max: 1,
    run: (a) =>
      text(a).replace(
        /&(amp|lt|gt|quot|#34|#39|apos);/g,
        (_, e: string) =>
          ({ amp: "&", lt: "<", gt: ">", quot: '"', "#34": '"', "#39": "'", apos: "'" })[e] ?? "",
      ),
  },
  md5: { min: 1, max: 1, run: hash("md5") },
  sha1: { min: 1, max: 1, run: hash("sha1") },
  sha256: { min: 1, max: 1, run: hash("sha256") },
  sha512: { min: 1, max: 1, run: hash("sha512") },
  mmh3: { min: 1, max: 1, run: (a) => String(murmur3(Buffer.from(text(a), "latin1"))) },
  to_number: { min: 1, max: 1, run: (a) => asNumber(a) },
  to_string: { min: 1, max: 1, run: (a) => text(a) },
  compare_versions: {
    min: 2,
    max: 16,
    run: (version, ...constraints) =>
      constraints.every((constraint) =>
        text(constraint)
          .split(",")
          .every((part) => satisfies(text(version), part)),
      ),
  },
};

function trimWith(value: string, cut: string, sides: 1 | 2 | 3): string {
  let start = 0;
  let end = value.length;
  if (sides & 1) while (start < end && cut.includes(value[start])) start++;
  if (sides & 2) while (end > start && cut.includes(value[end - 1])) end--;
  return value.slice(start, end);
}

export type DslExpression = jsep.Expression;

const NODES = new Set([
  "Literal",
  "Identifier",
  "BinaryExpression",
  "UnaryExpression",
  "ConditionalExpression",
  "CallExpression",
]);

const BINARY = new Set([
  "&&",
  "||",
  "==",
  "===",
  "!=",
  "!==",
  "<",
  "<=",
  ">",
  ">=",
  "+",
  "-",
  "*",
  "/",
  "%",
  "**",
  "=~",
  "!~",
]);
const UNARY = new Set(["!", "-", "+"]);

/** Parses an expression and checks every node and function name; throws a TemplateError naming what is wrong. */
export function parseDsl(source: string): DslExpression {
  let tree: jsep.Expression;
  try {
    tree = jsep(source);
  } catch (error) {
    throw new TemplateError(
      `dsl expression ${JSON.stringify(source)} does not parse: ${(error as Error).message}`,
    );
  }
  const visit = (node: jsep.Expression) => {
    if (!NODES.has(node.type))
      throw new TemplateError(
        `dsl expression ${JSON.stringify(source)} uses ${node.type}, which is not supported`,
      );
    if (node.type === "CallExpression") {
      const call = node as jsep.CallExpression;
      if (call.callee.type !== "Identifier")
        throw new TemplateError(
          `dsl expression ${JSON.stringify(source)} calls something that is not a function name`,
        );
      const name = (call.callee as jsep.Identifier).name;
      const helper = HELPERS[name];
      if (!helper)
        throw new TemplateError(
          `dsl function ${name}() in ${JSON.stringify(source)} does not exist or is not supported`,
        );
      if (call.arguments.length < helper.min || call.arguments.length > helper.max)
        throw new TemplateError(
          `dsl function ${name}() takes ${helper.min === helper.max ? helper.min : `${helper.min}–${helper.max}`} arguments, not ${call.arguments.length}`,
        );
      // A literal pattern is compiled (and refused, if RE2 cannot run it) now, not when it runs.
      const pattern =
        name === "regex" || name === "replace_regex" ? call.arguments[name === "regex" ? 0 : 1] : undefined;
      if (pattern?.type === "Literal") safeRegex(String((pattern as jsep.Literal).value));
      call.arguments.forEach(visit);
      return;
    }
    if (node.type === "BinaryExpression" || node.type === "UnaryExpression") {
      const operator = (node as jsep.BinaryExpression).operator;
      if (!(node.type === "BinaryExpression" ? BINARY : UNARY).has(operator))
        throw new TemplateError(
          `dsl expression ${JSON.stringify(source)} uses the operator ${operator}, which is not supported`,
        );
      if (node.type === "BinaryExpression" && (operator === "=~" || operator === "!~")) {
        const right = (node as jsep.BinaryExpression).right;
        if (right.type === "Literal") safeRegex(String((right as jsep.Literal).value));
      }
    }
    for (const key of ["left", "right", "argument", "test", "consequent", "alternate"] as const) {
      const child = (node as Record<string, unknown>)[key];
      if (child) visit(child as jsep.Expression);
    }
  };
  visit(tree);
  return tree;
}

/** Names an expression reads (not function names). */
export function identifiersOf(tree: DslExpression): string[] {
  const names: string[] = [];
  const visit = (node: jsep.Expression) => {
    if (node.type === "Identifier") names.push((node as jsep.Identifier).name);
    if (node.type === "CallExpression") (node as jsep.CallExpression).arguments.forEach(visit);
    for (const key of ["left", "right", "argument", "test", "consequent", "alternate"] as const) {
      const child = (node as Record<string, unknown>)[key];
      if (child) visit(child as jsep.Expression);
    }
  };
  visit(tree);
  return names;
}

const equal = (a: DslValue, b: DslValue) => {
  if (typeof a === typeof b) return a === b;
  if (typeof a === "number" || typeof b === "number") {
    try {
      return asNumber(a) === asNumber(b);
    } catch {
      return false;
    }
  }
  return text(a) === text(b);
};

/** Evaluates a checked expression; a variable that is not there, or a helper's refusal, throws a DslError. */
export function evaluate(node: DslExpression, variables: DslVariables): DslValue {
  switch (node.type) {
    case "Literal": {
      const value = (node as jsep.Literal).value;
      if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") return value;
      throw new DslError(`the literal ${(node as jsep.Literal).raw} is not supported`);
    }
    case "Identifier": {
      const name = (node as jsep.Identifier).name;
      if (name === "true") return true;
      if (name === "false") return false;
      const value = variables[name];
      if (value === undefined) throw new DslError(`${name} is not known here`);
      return value;
    }
    case "UnaryExpression": {
      const { operator, argument } = node as jsep.UnaryExpression;
      const value = evaluate(argument, variables);
      if (operator === "!") return !truthy(value);
      if (operator === "-") return -asNumber(value);
      if (operator === "+") return asNumber(value);
      throw new DslError(`the operator ${operator} is not supported`);
    }
    case "ConditionalExpression": {
      const { test, consequent, alternate } = node as jsep.ConditionalExpression;
      return truthy(evaluate(test, variables))
        ? evaluate(consequent, variables)
        : evaluate(alternate, variables);
    }
    case "CallExpression": {
      const call = node as jsep.CallExpression;
      const helper = HELPERS[(call.callee as jsep.Identifier).name];
      try {
        return helper.run(...call.arguments.map((argument) => evaluate(argument, variables)));
      } catch (error) {
        if (error instanceof DslError) throw error;
        throw new DslError((error as Error).message);
      }
    }
    case "BinaryExpression": {
      const { operator, left, right } = node as jsep.BinaryExpression;
      if (operator === "&&") return truthy(evaluate(left, variables)) && truthy(evaluate(right, variables));
      if (operator === "||") return truthy(evaluate(left, variables)) || truthy(evaluate(right, variables));
      const a = evaluate(left, variables);
      const b = evaluate(right, variables);
      switch (operator) {
        case "==":
        case "===":
          return equal(a, b);
        case "!=":
        case "!==":
          return !equal(a, b);
        case "<":
          return asNumber(a) < asNumber(b);
        case "<=":
          return asNumber(a) <= asNumber(b);
        case ">":
          return asNumber(a) > asNumber(b);
        case ">=":
          return asNumber(a) >= asNumber(b);
        case "+":
          return typeof a === "number" && typeof b === "number" ? a + b : text(a) + text(b);
        case "-":
          return asNumber(a) - asNumber(b);
        case "*":
          return asNumber(a) * asNumber(b);
        case "/":
          return asNumber(a) / asNumber(b);
        case "%":
          return asNumber(a) % asNumber(b);
        case "**":
          return asNumber(a) ** asNumber(b);
        case "=~":
          return regexCall(b, a);
        case "!~":
          return !regexCall(b, a);
        default:
          throw new DslError(`the operator ${operator} is not supported`);
      }
    }
    default:
      throw new DslError(`${node.type} is not supported`);
  }
}

/** Evaluates to a boolean (a matcher); a failure is no match. */
export function holds(node: DslExpression, variables: DslVariables): boolean {
  try {
    return truthy(evaluate(node, variables));
  } catch {
    return false;
  }
}
