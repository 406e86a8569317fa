/**
 * Web technology rules in the Wappalyzer format, evaluated without a browser: headers, cookies, meta
 * tags, script URLs, HTML and the URL. Patterns carry `\;version:\1` and `\;confidence:n` tags. The
 * built-in rules (builtin-technologies.json) are Sightline's own; a full rule set (such as webappanalyzer's,
 * GPL-3.0) is data an operator installs with `sightline fingerprints update`, read beside them.
 */
import { readFileSync, statSync } from "node:fs";
import { parseCpe } from "../../core/cpe.ts";
import type { Detection, HttpEvidence } from "../../core/facts.ts";

interface RawRule {
  cats?: number[];
  cpe?: string;
  headers?: Record<string, string>;
  cookies?: Record<string, string>;
  meta?: Record<string, string | string[]>;
  scriptSrc?: string | string[];
  html?: string | string[];
  url?: string | string[];
  implies?: string | string[];
  excludes?: string | string[];
  requires?: string | string[];
}

interface Pattern {
  regex: RegExp;
  version: string;
  /** A lower-case literal every match contains: where it is absent the regex need not run. */
  literal?: string;
}

interface Technology {
  name: string;
  /** Position in the rule file: detections come out in this order, whatever evidence found them. */
  index: number;
  tags: string[];
  vendor: string;
  product: string;
  part: "a" | "o" | "h";
  implies: string[];
  excludes: string[];
  requires: string[];
}

interface Rule {
  technology: Technology;
  pattern: Pattern;
}

/** The rules compiled once and indexed by the evidence they read, so a page runs only the rules it can meet. */
export interface RuleIndex {
  byName: Map<string, Technology>;
  /** By lower-case header name. */
  headers: Map<string, Rule[]>;
  /** By lower-case cookie name, for rules naming one cookie; `cookiePatterns` for rules with a name pattern. */
  cookies: Map<string, Rule[]>;
  cookiePatterns: Array<Rule & { name: RegExp }>;
  /** By lower-case meta name or property. */
  meta: Map<string, Rule[]>;
  scriptSrc: Rule[];
  html: Rule[];
  url: Rule[];
}

const asList = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];
/** Names in implies/excludes may carry tags too (`PHP\;confidence:50`). */
const bareName = (value: string) => value.split("\\;")[0];

/** Characters that make a cookie name in a rule a pattern rather than a name. */
const REGEX_SYNTAX = /[\\^$.|?*+()[\]{}]/;

/**
 * The longest literal (lower case, at least 3 characters) that every match of `source` must contain, or
 * undefined when there is none worth checking. Conservative: a top-level alternation, groups, classes,
 * escapes of classes and anything a quantifier makes optional end a literal or give up.
 */
export function requiredLiteral(source: string): string | undefined {
  const runs: string[] = [];
  let run = "";
  const end = () => {
    runs.push(run);
    run = "";
  };
  /** Skips a group or class starting at `i`; answers the index of its closing character. */
  const skip = (i: number): number => {
    const close = source[i] === "[" ? "]" : ")";
    for (let j = i + 1, depth = 0; j < source.length; j++) {
      const c = source[j];
      if (c === "\\") j++;
      else if (c === "[" && close === ")") j = skip(j);
      else if (c === source[i] && close === ")") depth++;
      else if (c === close && depth-- === 0) return j;
    }
    return source.length;
  };
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "|") return undefined; // an alternative without this literal
    if (c === "\\") {
      const next = source[++i] ?? "";
      if (/[A-Za-z0-9]/.test(next))
        end(); // \d \w \s \b \1 \x.. \u.. …: not a literal character
      else run += next;
    } else if (c === "(" || c === "[") {
      end();
      i = skip(i);
    } else if (c === "?" || c === "*" || c === "{") {
      run = run.slice(0, -1); // the quantified character may be absent
      end();
      if (c === "{") i = source.indexOf("}", i) < 0 ? source.length : source.indexOf("}", i);
    } else if (c === "+" || c === "." || c === "^" || c === "$" || c === ")" || c === "]" || c === "}") {
      end();
    } else {
      run += c;
    }
  }
  end();
  const longest = runs.reduce((best, candidate) => (candidate.length > best.length ? candidate : best), "");
  return longest.length >= 3 ? longest.toLowerCase() : undefined;
}

function compile(text: string): Pattern | undefined {
  const [source, ...tags] = text.split("\\;");
  const version = tags.find((tag) => tag.startsWith("version:"))?.slice("version:".length) ?? "";
  try {
    // The rules are written for JavaScript's engine, case-insensitive; the odd broken one is skipped.
    return { regex: new RegExp(source, "i"), version, literal: requiredLiteral(source) };
  } catch {
    return undefined;
  }
}

/** Fills `\1` back-references and `\1?a:b` ternaries of a version template from a match. */
function resolveVersion(template: string, match: RegExpExecArray): string {
  if (!template) return "";
  let resolved = template;
  match.forEach((group, index) => {
    const ternary = new RegExp(`\\\\${index}\\?([^:]+):(.*)$`).exec(resolved);
    if (ternary) resolved = resolved.replace(ternary[0], group ? ternary[1] : ternary[2]);
    resolved = resolved.replace(new RegExp(`\\\\${index}`, "g"), group ?? "");
  });
  resolved = resolved.trim();
  // A version is digits and dots with an optional suffix; anything else is a misfired template.
  return /^\d[\w.-]*$/.test(resolved) && resolved.length <= 32 ? resolved : "";
}

/** Sightline's own rules (MIT), always used. */
export const BUILTIN_RULES_FILE = new URL("./builtin-technologies.json", import.meta.url);

/** A rules file in the Wappalyzer shape: technologies by name, and the names of their category ids. */
export interface RulesFile {
  categories?: Record<string, string>;
  technologies: Record<string, RawRule>;
}

const push = <K, V>(map: Map<K, V[]>, key: K, value: V) => {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
};

/** Why a rules file cannot be used, in a sentence; undefined when it has the Wappalyzer shape. */
export function rulesFileProblem(data: unknown): string | undefined {
  if (typeof data !== "object" || data === null || Array.isArray(data)) return "it is not a JSON object";
  const technologies = (data as { technologies?: unknown }).technologies;
  if (typeof technologies !== "object" || technologies === null || Array.isArray(technologies))
    return 'it has no "technologies" object (technology name → rule)';
  const bad = Object.entries(technologies).find(
    ([, rule]) => typeof rule !== "object" || rule === null || Array.isArray(rule),
  );
  if (bad) return `its technology ${JSON.stringify(bad[0])} is not an object`;
  return undefined;
}

/**
 * Compiles rule files into one index. A technology named in several files is one technology: the
 * first file's CPE and categories stand (the built-in rules come first), patterns and implications add up.
 */
export function compileRules(files: RulesFile[]): RuleIndex {
  const index: RuleIndex = {
    byName: new Map(),
    headers: new Map(),
    cookies: new Map(),
    cookiePatterns: [],
    meta: new Map(),
    scriptSrc: [],
    html: [],
    url: [],
  };
  for (const data of files) {
    const categories = data.categories ?? {};
    for (const [name, rule] of Object.entries(data.technologies)) {
      const cpe = typeof rule.cpe === "string" ? parseCpe(rule.cpe) : undefined;
      let technology = index.byName.get(name);
      if (!technology) {
        technology = {
          name,
          index: index.byName.size,
          tags: asList(rule.cats).map((id) => categories[String(id)] ?? String(id)),
          vendor: cpe?.vendor ?? "",
          product: cpe?.product ?? "",
          part: (cpe?.part ?? "a") as "a" | "o" | "h",
          implies: [],
          excludes: [],
          requires: [],
        };
        index.byName.set(name, technology);
      } else if (!technology.vendor && cpe) {
        Object.assign(technology, { vendor: cpe.vendor, product: cpe.product, part: cpe.part });
      }
      const known = technology;
      const addAll = (list: string[], values: string[]) => {
        for (const value of values) if (!list.includes(value)) list.push(value);
      };
      addAll(known.implies, asList(rule.implies).map(bareName));
      addAll(known.excludes, asList(rule.excludes).map(bareName));
      addAll(known.requires, asList(rule.requires).map(bareName));
      const rules = (texts: unknown[]) =>
        texts.flatMap((text) => {
          const pattern = typeof text === "string" ? compile(text) : undefined;
          return pattern ? [{ technology: known, pattern }] : [];
        });
      for (const [header, text] of Object.entries(rule.headers ?? {}))
        for (const compiled of rules([text])) push(index.headers, header.toLowerCase(), compiled);
      for (const [cookie, text] of Object.entries(rule.cookies ?? {})) {
        for (const compiled of rules([text])) {
          if (!REGEX_SYNTAX.test(cookie)) push(index.cookies, cookie.toLowerCase(), compiled);
          else
            try {
              index.cookiePatterns.push({ ...compiled, name: new RegExp(`^(?:${cookie})$`, "i") });
            } catch {
              // a broken name pattern: the rule is skipped
            }
        }
      }
      for (const [key, texts] of Object.entries(rule.meta ?? {}))
        for (const compiled of rules(asList(texts))) push(index.meta, key.toLowerCase(), compiled);
      index.scriptSrc.push(...rules(asList(rule.scriptSrc)));
      index.html.push(...rules(asList(rule.html)));
      index.url.push(...rules(asList(rule.url)));
    }
  }
  return index;
}

const readRules = (file: string | URL) => JSON.parse(readFileSync(file, "utf8")) as RulesFile;

let builtin: RuleIndex | undefined;
/** The index of an added rules file, kept while the file is unchanged. */
const added = new Map<string, { stamp: string; index: RuleIndex }>();

/**
 * The rules discovery uses: the built-in ones, plus those of `extraFile` (rules installed by
 * `sightline fingerprints update`) when it exists. A missing or unusable extra file leaves the built-in
 * rules alone; a changed one is read again.
 */
export function webRules(extraFile?: string): RuleIndex {
  builtin ??= compileRules([readRules(BUILTIN_RULES_FILE)]);
  if (!extraFile) return builtin;
  let stamp: string;
  try {
    const stat = statSync(extraFile);
    stamp = `${stat.mtimeMs}:${stat.size}`;
  } catch {
    return builtin;
  }
  const cached = added.get(extraFile);
  if (cached?.stamp === stamp) return cached.index;
  let index = builtin;
  try {
    const data = readRules(extraFile);
    if (rulesFileProblem(data) === undefined) index = compileRules([readRules(BUILTIN_RULES_FILE), data]);
  } catch {
    // unreadable or not JSON: the built-in rules stand; `fingerprints update` checks files before installing
  }
  added.set(extraFile, { stamp, index });
  return index;
}

// Large pages are cut to their head and tail, where generators, scripts and footers are.
const HTML_LIMIT = 64 * 1024;
const clip = (text: string) =>
  text.length <= HTML_LIMIT ? text : `${text.slice(0, HTML_LIMIT / 2)}\n${text.slice(-HTML_LIMIT / 2)}`;
const quote = (text: string) => JSON.stringify(text.length > 120 ? `${text.slice(0, 117)}...` : text);

function cookieJar(setCookies: string[]): Array<[string, string]> {
  return setCookies.flatMap((line) => {
    const pair = line.split(";")[0];
    const equals = pair.indexOf("=");
    return equals > 0
      ? [[pair.slice(0, equals).trim(), pair.slice(equals + 1).trim()] as [string, string]]
      : [];
  });
}

/** The web technologies the evidence shows, with versions where the rules extract one. */
export function detectWebTechnologies(evidence: HttpEvidence, rules: RuleIndex = webRules()): Detection[] {
  const found = new Map<string, Detection>();
  const { byName } = rules;
  const html = clip(evidence.body);
  const lowerHtml = html.toLowerCase();

  const hit = ({ technology, pattern }: Rule, value: string, matchType: string, what: string) => {
    const match = pattern.regex.exec(value);
    if (!match) return;
    const version = resolveVersion(pattern.version, match);
    const previous = found.get(technology.name);
    if (previous && previous.matchType !== "implied" && previous.version.length >= version.length) return;
    found.set(technology.name, {
      name: technology.name,
      vendor: technology.vendor,
      product: technology.product,
      part: technology.part,
      version,
      update: "",
      tags: technology.tags,
      matchType,
      matchDetails: `${what} ${quote(value)}`,
    });
  };

  // Evidence in the order the rules' fields are read: headers, cookies, meta, scripts, HTML, URL.
  for (const [name, value] of evidence.headers)
    for (const rule of rules.headers.get(name) ?? []) hit(rule, value, "content_headers", `${name} header`);
  for (const [name, value] of cookieJar(evidence.setCookies)) {
    for (const rule of rules.cookies.get(name.toLowerCase()) ?? [])
      hit(rule, value, "content_cookies", `cookie ${name}`);
    for (const rule of rules.cookiePatterns)
      if (rule.name.test(name)) hit(rule, value, "content_cookies", `cookie ${name}`);
  }
  for (const [key, contents] of Object.entries(evidence.meta))
    for (const rule of rules.meta.get(key) ?? [])
      for (const content of contents)
        hit(rule, content, key === "generator" ? "meta_generator" : "content_meta", `meta ${key}`);
  if (evidence.scripts.length > 0) {
    const scripts = evidence.scripts.map((script) => [script, script.toLowerCase()] as const);
    const allScripts = scripts.map(([, lower]) => lower).join("\n");
    for (const rule of rules.scriptSrc) {
      const literal = rule.pattern.literal;
      if (literal && !allScripts.includes(literal)) continue;
      for (const [script, lower] of scripts)
        if (!literal || lower.includes(literal)) hit(rule, script, "script_src", "script");
    }
  }
  if (html)
    for (const rule of rules.html)
      if (!rule.pattern.literal || lowerHtml.includes(rule.pattern.literal))
        hit(rule, html, "content_body", "body");
  for (const rule of rules.url) hit(rule, evidence.url, "url", "url");

  // Detections in rule order, as a reader of the rule file would list them.
  const ordered = [...found.values()].sort((a, b) => byName.get(a.name)!.index - byName.get(b.name)!.index);
  found.clear();
  for (const detection of ordered) found.set(detection.name, detection);

  // Implied technologies (WordPress → PHP), then the rules' requires/excludes.
  const queue = [...found.values()];
  while (queue.length > 0) {
    const detection = queue.shift()!;
    for (const name of byName.get(detection.name)?.implies ?? []) {
      const implied = byName.get(name);
      if (!implied || found.has(name)) continue;
      const entry: Detection = {
        name,
        vendor: implied.vendor,
        product: implied.product,
        part: implied.part,
        version: "",
        update: "",
        tags: implied.tags,
        matchType: "implied",
        matchDetails: `implied by ${detection.name}`,
      };
      found.set(name, entry);
      queue.push(entry);
    }
  }
  for (const detection of [...found.values()]) {
    const technology = byName.get(detection.name);
    if (technology?.requires.some((name) => !found.has(name))) found.delete(detection.name);
  }
  for (const detection of [...found.values()]) {
    for (const name of byName.get(detection.name)?.excludes ?? []) found.delete(name);
  }
  return [...found.values()];
}
