/**
 * Web technology rules in the Wappalyzer format (the webappanalyzer data set shipped as
 * technologies.json, see update-technologies.ts), evaluated without a browser: headers, cookies, meta
 * tags, script URLs, HTML and the URL. Patterns carry `\;version:\1` and `\;confidence:n` tags.
 */
import { readFileSync } from "node:fs";
import { parseCpe } from "../../vulns/cpe.ts";
import type { Detection, HttpEvidence } from "./types.ts";

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
}

interface Technology {
  name: string;
  tags: string[];
  vendor: string;
  product: string;
  part: "a" | "o" | "h";
  headers: Array<[string, Pattern]>;
  cookies: Array<[RegExp, Pattern]>;
  meta: Array<[string, Pattern]>;
  scriptSrc: Pattern[];
  html: Pattern[];
  url: Pattern[];
  implies: string[];
  excludes: string[];
  requires: string[];
}

const asList = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];
/** Names in implies/excludes may carry tags too (`PHP\;confidence:50`). */
const bareName = (value: string) => value.split("\\;")[0];

function compile(text: string): Pattern | undefined {
  const [source, ...tags] = text.split("\\;");
  const version = tags.find((tag) => tag.startsWith("version:"))?.slice("version:".length) ?? "";
  try {
    // The rules are written for JavaScript's engine, case-insensitive; the odd broken one is skipped.
    return { regex: new RegExp(source, "i"), version };
  } catch {
    return undefined;
  }
}

const compileAll = (values: string[]) => values.map(compile).filter((p): p is Pattern => !!p);

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

let loaded: Technology[] | undefined;

export const TECHNOLOGIES_FILE = new URL("./technologies.json", import.meta.url);

export function webTechnologies(): Technology[] {
  if (loaded) return loaded;
  const data = JSON.parse(readFileSync(TECHNOLOGIES_FILE, "utf8")) as {
    categories: Record<string, string>;
    technologies: Record<string, RawRule>;
  };
  loaded = Object.entries(data.technologies).map(([name, rule]) => {
    const cpe = rule.cpe ? parseCpe(rule.cpe) : undefined;
    return {
      name,
      tags: asList(rule.cats).map((id) => data.categories[String(id)] ?? String(id)),
      vendor: cpe?.vendor ?? "",
      product: cpe?.product ?? "",
      part: (cpe?.part ?? "a") as "a" | "o" | "h",
      headers: Object.entries(rule.headers ?? {}).flatMap(([header, text]) => {
        const pattern = compile(text);
        return pattern ? [[header.toLowerCase(), pattern] as [string, Pattern]] : [];
      }),
      cookies: Object.entries(rule.cookies ?? {}).flatMap(([cookie, text]) => {
        const pattern = compile(text);
        let nameRegex: RegExp;
        try {
          nameRegex = new RegExp(`^(?:${cookie})$`, "i");
        } catch {
          return [];
        }
        return pattern ? [[nameRegex, pattern] as [RegExp, Pattern]] : [];
      }),
      meta: Object.entries(rule.meta ?? {}).flatMap(([key, texts]) =>
        compileAll(asList(texts)).map((pattern) => [key.toLowerCase(), pattern] as [string, Pattern]),
      ),
      scriptSrc: compileAll(asList(rule.scriptSrc)),
      html: compileAll(asList(rule.html)),
      url: compileAll(asList(rule.url)),
      implies: asList(rule.implies).map(bareName),
      excludes: asList(rule.excludes).map(bareName),
      requires: asList(rule.requires).map(bareName),
    };
  });
  return loaded;
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
export function detectWebTechnologies(evidence: HttpEvidence): Detection[] {
  const found = new Map<string, Detection>();
  const technologies = webTechnologies();
  const byName = new Map(technologies.map((technology) => [technology.name, technology]));
  const cookies = cookieJar(evidence.setCookies);
  const html = clip(evidence.body);

  const hit = (technology: Technology, pattern: Pattern, value: string, matchType: string, what: string) => {
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

  for (const technology of technologies) {
    for (const [header, pattern] of technology.headers) {
      for (const [name, value] of evidence.headers)
        if (name === header) hit(technology, pattern, value, "content_headers", `${name} header`);
    }
    for (const [nameRegex, pattern] of technology.cookies) {
      for (const [name, value] of cookies)
        if (nameRegex.test(name)) hit(technology, pattern, value, "content_cookies", `cookie ${name}`);
    }
    for (const [key, pattern] of technology.meta) {
      for (const content of evidence.meta[key] ?? [])
        hit(
          technology,
          pattern,
          content,
          key === "generator" ? "meta_generator" : "content_meta",
          `meta ${key}`,
        );
    }
    for (const pattern of technology.scriptSrc)
      for (const script of evidence.scripts) hit(technology, pattern, script, "script_src", "script");
    for (const pattern of technology.html) hit(technology, pattern, html, "content_body", "body");
    for (const pattern of technology.url) hit(technology, pattern, evidence.url, "url", "url");
  }

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
