/**
 * A nuclei-format template as Sightline runs it, and the parser that reads one from YAML. The parser
 * accepts a documented subset (docs/templates.md): every key it does not know, in a request block, a
 * matcher or an extractor, makes the whole template unsupported, with a reason that names the key —
 * a template is never run half-understood. Every regex and DSL expression is compiled here, once.
 */
import { createHash } from "node:crypto";
import { readFileSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { type DslExpression, identifiersOf, parseDsl } from "./dsl.ts";
import { type SafeRegex, safeRegex, TemplateError } from "./regex.ts";

export { TemplateError } from "./regex.ts";

export const NUCLEI_SEVERITIES = ["critical", "high", "medium", "low", "info"] as const;
export type TemplateSeverity = (typeof NUCLEI_SEVERITIES)[number];

export interface TemplateInfo {
  name: string;
  authors: string[];
  severity: TemplateSeverity;
  description: string;
  remediation: string;
  references: string[];
  cveIds: string[];
  cweIds: string[];
  tags: string[];
  metadata: Record<string, unknown>;
}

/** A text with `{{…}}` holes, each a checked DSL expression. */
export interface Interpolated {
  text: string;
  holes: Array<{ raw: string; expression: DslExpression }>;
}

export type Matcher = {
  name?: string;
  part: string;
  condition: "and" | "or";
  negative: boolean;
  internal: boolean;
} & (
  | { type: "word"; words: Interpolated[]; caseInsensitive: boolean }
  | { type: "regex"; regex: SafeRegex[] }
  | { type: "status"; status: number[] }
  | { type: "size"; size: number[] }
  | { type: "binary"; binary: Buffer[] }
  | { type: "dsl"; dsl: DslExpression[]; sources: string[] }
);

export type Extractor = { name?: string; part: string; internal: boolean } & (
  | { type: "regex"; regex: SafeRegex[]; group: number }
  | { type: "kval"; kval: string[] }
  | { type: "json"; json: string[] }
  | { type: "xpath"; xpath: string[]; attribute?: string }
  | { type: "dsl"; dsl: DslExpression[] }
);

export interface Operators {
  matchers: Matcher[];
  matchersCondition: "and" | "or";
  extractors: Extractor[];
}

export type HttpRequestSpec =
  | {
      kind: "path";
      method: string;
      path: Interpolated;
      headers: Array<[string, Interpolated]>;
      body?: Interpolated;
    }
  | { kind: "raw"; raw: Interpolated };

export interface HttpBlock extends Operators {
  requests: HttpRequestSpec[];
  /**
   * The payload values each round of the requests runs with (`payloads` combined as `attack` says:
   * batteringram, pitchfork or clusterbomb); one empty round without payloads.
   */
  payloadRounds: Array<Record<string, string>>;
  redirects: boolean;
  maxRedirects: number;
  stopAtFirstMatch: boolean;
  reqCondition: boolean;
  cookieReuse: boolean;
  maxSize?: number;
}

export interface NetworkBlock extends Operators {
  hosts: Interpolated[];
  ports: number[];
  /** Plain TCP (false), TLS (true) or both, in that order: as the block's hosts say (`tls://…`). */
  tls: boolean[];
  inputs: Array<{ data: Buffer | Interpolated; read?: number; name?: string }>;
  readSize: number;
}

export interface DnsBlock extends Operators {
  name: Interpolated;
  type: string;
  recursion: boolean;
}

/** nuclei's names of the protocol versions an `ssl` block may ask for, oldest first. */
export const SSL_VERSIONS = ["sslv3", "tls10", "tls11", "tls12", "tls13"] as const;
export type SslVersion = (typeof SSL_VERSIONS)[number];

export interface SslBlock extends Operators {
  address: Interpolated;
  /** `min_version`/`max_version`: the handshake offers exactly these versions. */
  versions?: { min: SslVersion; max: SslVersion };
}

/**
 * A `flow` of the common form: calls of the template's http blocks (`http(1)`, `http()` for all)
 * joined by `&&` and `||` (`&&` binding tighter), evaluated left to right with short-circuit: a
 * block runs only when the expression still needs it. As OR-groups of AND-terms, block numbers
 * from 0 (undefined: every block).
 */
export type Flow = Array<Array<number | undefined>>;

export interface Template {
  id: string;
  /** The template's `flow`, when it has one (its http blocks then run as it says). */
  flow?: Flow;
  /** Where it was read from, and the SHA-256 of its bytes. */
  file: string;
  sha256: string;
  info: TemplateInfo;
  variables: Array<[string, Interpolated]>;
  http: HttpBlock[];
  network: NetworkBlock[];
  dns: DnsBlock[];
  ssl: SslBlock[];
}

/** Templates per protocol block: most public templates have one; a few chain two. */
const MAX_REQUESTS_PER_TEMPLATE = 16;
/** Requests of a block with payloads (rounds × requests): a default-login list, not a brute force. */
export const MAX_PAYLOAD_REQUESTS = 64;
/** A payload file is read up to this many bytes and values. */
const MAX_PAYLOAD_FILE_BYTES = 64 * 1024;
const MAX_PAYLOAD_VALUES = 1000;

/** Where a template was read from, so its payload files can be found (inside the library only). */
export interface TemplateSource {
  /** The library's directory: payload files may not be read from outside it. */
  root: string;
  /** The template file's own directory, where relative payload files are looked up first. */
  directory: string;
}

const fail = (message: string): never => {
  throw new TemplateError(message);
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function only(where: string, value: Record<string, unknown>, allowed: readonly string[]): void {
  for (const key of Object.keys(value))
    if (!allowed.includes(key)) fail(`${where} uses "${key}", which Sightline does not support`);
}

const list = (value: unknown): unknown[] =>
  value === undefined || value === null ? [] : Array.isArray(value) ? value : [value];
const strings = (where: string, value: unknown): string[] =>
  list(value).map((item) =>
    typeof item === "string" || typeof item === "number"
      ? String(item)
      : fail(`${where} must be a list of texts`),
  );
const flag = (where: string, value: unknown, fallback = false): boolean => {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") fail(`${where} must be true or false`);
  return value as boolean;
};
const condition = (where: string, value: unknown): "and" | "or" => {
  if (value === undefined) return "or";
  if (value !== "and" && value !== "or") fail(`${where} must be "and" or "or"`);
  return value as "and" | "or";
};

/** Variables every template may read, whatever its protocol; `randstr` and `randstr_N` too. */
const BUILT_IN_VARIABLES = new Set([
  "BaseURL",
  "RootURL",
  "Hostname",
  "Host",
  "Port",
  "Scheme",
  "Path",
  "File",
  "FQDN",
  "RDN",
  "DN",
  "SD",
  "TLD",
  "Input",
  "ip",
]);

class Reader {
  /** Names a `{{…}}` hole may read: built-ins, template variables, payloads, internal extractors. */
  readonly known = new Set(BUILT_IN_VARIABLES);

  readonly source?: TemplateSource;

  constructor(source?: TemplateSource) {
    this.source = source;
  }

  interpolated(where: string, value: unknown): Interpolated {
    if (typeof value !== "string" && typeof value !== "number") fail(`${where} must be a text`);
    const text = String(value);
    const holes: Interpolated["holes"] = [];
    for (const [raw, inner] of text.matchAll(/\{\{([\s\S]*?)\}\}/g)) {
      if (/interactsh/i.test(inner))
        fail(`${where} uses {{${inner}}}: out-of-band interaction (interactsh) is not supported`);
      const expression = parseDsl(inner.trim());
      for (const name of identifiersOf(expression))
        if (!this.known.has(name) && !/^randstr(_\d+)?$/.test(name))
          fail(`${where} uses the variable {{${name}}}, which is not defined`);
      holes.push({ raw, expression });
    }
    return { text, holes };
  }

  matcher(where: string, raw: unknown): Matcher {
    if (!isObject(raw)) return fail(`${where} must be a mapping`);
    only(where, raw, [
      "type",
      "part",
      "condition",
      "negative",
      "internal",
      "name",
      "words",
      "regex",
      "status",
      "size",
      "binary",
      "dsl",
      "case-insensitive",
      "encoding",
      "match-all",
    ]);
    const base = {
      name: typeof raw.name === "string" ? raw.name : undefined,
      part: typeof raw.part === "string" ? raw.part : "body",
      condition: condition(`${where}.condition`, raw.condition),
      negative: flag(`${where}.negative`, raw.negative),
      internal: flag(`${where}.internal`, raw.internal),
    };
    const caseInsensitive = flag(`${where}.case-insensitive`, raw["case-insensitive"]);
    if (raw.encoding !== undefined && raw.type !== "word")
      fail(`${where}.encoding is for word matchers only`);
    const need = (key: string) => {
      const values = list(raw[key]);
      if (values.length === 0) fail(`${where} of type ${raw.type} needs "${key}"`);
      return values;
    };
    switch (raw.type) {
      case "word": {
        if (raw.encoding !== undefined && raw.encoding !== "hex") fail(`${where}.encoding must be hex`);
        const words = strings(`${where}.words`, need("words")).map((word) =>
          raw.encoding === "hex" ? Buffer.from(word, "hex").toString("latin1") : word,
        );
        return {
          ...base,
          type: "word",
          caseInsensitive,
          words: words.map((word, i) => this.interpolated(`${where}.words[${i}]`, word)),
        };
      }
      case "regex":
        return {
          ...base,
          type: "regex",
          regex: strings(`${where}.regex`, need("regex")).map((pattern) =>
            safeRegex(pattern, { caseInsensitive }),
          ),
        };
      case "status":
      case "size": {
        const numbers = need(raw.type).map((item) =>
          Number.isInteger(Number(item)) ? Number(item) : fail(`${where}.${raw.type} must be whole numbers`),
        );
        return raw.type === "status"
          ? { ...base, type: "status", status: numbers }
          : { ...base, type: "size", size: numbers };
      }
      case "binary":
        return {
          ...base,
          type: "binary",
          binary: strings(`${where}.binary`, need("binary")).map((hex) =>
            /^([0-9a-f]{2})+$/i.test(hex)
              ? Buffer.from(hex, "hex")
              : fail(`${where}.binary must be hex bytes`),
          ),
        };
      case "dsl": {
        const sources = strings(`${where}.dsl`, need("dsl"));
        return { ...base, type: "dsl", sources, dsl: sources.map((source) => parseDsl(source)) };
      }
      default:
        return fail(`${where} has type "${String(raw.type)}", which Sightline does not support`);
    }
  }

  extractor(where: string, raw: unknown): Extractor {
    if (!isObject(raw)) return fail(`${where} must be a mapping`);
    only(where, raw, [
      "type",
      "part",
      "name",
      "internal",
      "group",
      "regex",
      "kval",
      "json",
      "xpath",
      "attribute",
      "dsl",
      "case-insensitive",
    ]);
    const base = {
      name: typeof raw.name === "string" ? raw.name : undefined,
      part: typeof raw.part === "string" ? raw.part : "body",
      internal: flag(`${where}.internal`, raw.internal),
    };
    if (base.internal && !base.name) fail(`${where} is internal and so needs a name`);
    if (base.name) this.known.add(base.name);
    const caseInsensitive = flag(`${where}.case-insensitive`, raw["case-insensitive"]);
    switch (raw.type) {
      case "regex":
        return {
          ...base,
          type: "regex",
          group: Number.isInteger(raw.group) ? (raw.group as number) : 0,
          regex: strings(`${where}.regex`, raw.regex).map((pattern) =>
            safeRegex(pattern, { caseInsensitive }),
          ),
        };
      case "kval":
        return { ...base, type: "kval", kval: strings(`${where}.kval`, raw.kval) };
      case "json":
        return {
          ...base,
          type: "json",
          json: strings(`${where}.json`, raw.json).map((path) =>
            /^(\.[\w$-]*|\[\d*\]|\["[^"]*"\]|\.\[\d*\])*$/.test(path.trim().replace(/\[\]$/, "[]"))
              ? path.trim()
              : fail(`${where}.json "${path}" is more than the supported paths (.a.b, .a[0], .a[])`),
          ),
        };
      case "xpath":
        return {
          ...base,
          type: "xpath",
          xpath: strings(`${where}.xpath`, raw.xpath),
          attribute: typeof raw.attribute === "string" ? raw.attribute : undefined,
        };
      case "dsl":
        return {
          ...base,
          type: "dsl",
          dsl: strings(`${where}.dsl`, raw.dsl).map((source) => parseDsl(source)),
        };
      default:
        return fail(`${where} has type "${String(raw.type)}", which Sightline does not support`);
    }
  }

  operators(where: string, raw: Record<string, unknown>): Operators {
    const extractors = list(raw.extractors).map((item, i) =>
      this.extractor(`${where}.extractors[${i}]`, item),
    );
    const matchers = list(raw.matchers).map((item, i) => this.matcher(`${where}.matchers[${i}]`, item));
    if (matchers.length === 0 && extractors.length === 0)
      fail(`${where} has neither matchers nor extractors`);
    return {
      matchers,
      extractors,
      matchersCondition: condition(`${where}.matchers-condition`, raw["matchers-condition"]),
    };
  }

  /**
   * A block's `payloads` (name → inline list, or a file of one value per line inside the library) as
   * the rounds `attack` makes of them: batteringram (one set, its values in turn), pitchfork (the
   * sets side by side, as long as the shortest) or clusterbomb (every combination).
   */
  payloads(where: string, raw: Record<string, unknown>): Array<Record<string, string>> {
    if (raw.payloads === undefined) {
      if (raw.attack !== undefined) fail(`${where}.attack needs "payloads"`);
      return [{}];
    }
    if (!isObject(raw.payloads)) fail(`${where}.payloads must be a mapping of names to lists or files`);
    const sets = Object.entries(raw.payloads as Record<string, unknown>).map(([name, value]) => {
      if (!/^[A-Za-z_]\w*$/.test(name)) fail(`${where}.payloads name "${name}" is not a plain name`);
      const values =
        typeof value === "string"
          ? this.payloadFile(`${where}.payloads.${name}`, value)
          : strings(`${where}.payloads.${name}`, value).map(String);
      if (values.length === 0) fail(`${where}.payloads.${name} has no values`);
      if (values.length > MAX_PAYLOAD_VALUES)
        fail(`${where}.payloads.${name} has ${values.length} values; at most ${MAX_PAYLOAD_VALUES} are read`);
      this.known.add(name);
      return { name, values };
    });
    if (sets.length === 0) fail(`${where}.payloads is empty`);
    const attack = raw.attack ?? (sets.length === 1 ? "batteringram" : "clusterbomb");
    if (attack === "batteringram") {
      if (sets.length > 1) fail(`${where}.attack batteringram takes one payload set, not ${sets.length}`);
      return sets[0].values.map((value) => ({ [sets[0].name]: value }));
    }
    if (attack === "pitchfork") {
      const rounds = Math.min(...sets.map((set) => set.values.length));
      return Array.from({ length: rounds }, (_, i) =>
        Object.fromEntries(sets.map((set) => [set.name, set.values[i]])),
      );
    }
    if (attack === "clusterbomb") {
      let rounds: Array<Record<string, string>> = [{}];
      for (const set of sets) {
        rounds = rounds.flatMap((round) => set.values.map((value) => ({ ...round, [set.name]: value })));
        // Stop multiplying once past the bound: the block is refused for its size anyway.
        if (rounds.length > MAX_PAYLOAD_REQUESTS) return rounds;
      }
      return rounds;
    }
    return fail(`${where}.attack "${String(attack)}" is not batteringram, pitchfork or clusterbomb`);
  }

  /** The values of a payload file: one per line, blank lines left out; only inside the library. */
  payloadFile(where: string, path: string): string[] {
    if (!this.source) fail(`${where} reads the file ${path}, but the template was not read from a library`);
    const { root, directory } = this.source!;
    const candidates = isAbsolute(path) ? [path] : [resolve(directory, path), resolve(root, path)];
    for (const candidate of candidates) {
      let real: string;
      try {
        real = realpathSync(candidate);
      } catch {
        continue;
      }
      const inside = relative(realpathSync(root), real);
      if (inside.startsWith("..") || isAbsolute(inside))
        fail(`${where} reads ${path}, which is outside the template library`);
      if (statSync(real).size > MAX_PAYLOAD_FILE_BYTES)
        fail(`${where} reads ${path}, larger than the ${MAX_PAYLOAD_FILE_BYTES} bytes a payload file may be`);
      return readFileSync(real, "utf8")
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter((line) => line !== "");
    }
    return fail(`${where} reads ${path}, which is not in the template library`);
  }

  http(where: string, raw: unknown): HttpBlock {
    if (!isObject(raw)) return fail(`${where} must be a mapping`);
    only(where, raw, [
      "id",
      "name",
      "payloads",
      "attack",
      "threads",
      "method",
      "path",
      "raw",
      "headers",
      "body",
      "redirects",
      "host-redirects",
      "max-redirects",
      "matchers-condition",
      "matchers",
      "extractors",
      "stop-at-first-match",
      "req-condition",
      "cookie-reuse",
      "disable-cookie",
      "max-size",
      "skip-variables-check",
    ]);
    // Payloads and extractors first: their names are variables the requests may use.
    const payloadRounds = this.payloads(where, raw);
    const operators = this.operators(where, raw);
    const requests: HttpRequestSpec[] = [];
    if (raw.raw !== undefined) {
      if (raw.path !== undefined) fail(`${where} has both "raw" and "path"`);
      for (const [i, text] of strings(`${where}.raw`, raw.raw).entries())
        requests.push({ kind: "raw", raw: this.interpolated(`${where}.raw[${i}]`, text) });
    } else {
      const method = typeof raw.method === "string" ? raw.method.toUpperCase() : "GET";
      if (!/^(GET|HEAD|POST|PUT|DELETE|OPTIONS|PATCH|TRACE)$/.test(method))
        fail(`${where}.method "${method}" is not an HTTP method Sightline sends`);
      if (!isObject(raw.headers ?? {})) fail(`${where}.headers must be a mapping`);
      const headers = Object.entries((raw.headers ?? {}) as Record<string, unknown>).map(
        ([name, value]) =>
          [name, this.interpolated(`${where}.headers.${name}`, value)] as [string, Interpolated],
      );
      const body = raw.body === undefined ? undefined : this.interpolated(`${where}.body`, raw.body);
      for (const [i, path] of strings(`${where}.path`, raw.path).entries())
        requests.push({
          kind: "path",
          method,
          path: this.interpolated(`${where}.path[${i}]`, path),
          headers,
          body,
        });
    }
    if (requests.length === 0) fail(`${where} has no path and no raw request`);
    if (requests.length > MAX_REQUESTS_PER_TEMPLATE)
      fail(`${where} sends ${requests.length} requests; at most ${MAX_REQUESTS_PER_TEMPLATE} are run`);
    if (payloadRounds.length * requests.length > MAX_PAYLOAD_REQUESTS)
      fail(
        `${where} sends ${payloadRounds.length * requests.length} requests (${payloadRounds.length} payload rounds × ${requests.length}); at most ${MAX_PAYLOAD_REQUESTS} are run`,
      );
    const maxRedirects = raw["max-redirects"] === undefined ? 10 : Number(raw["max-redirects"]);
    if (!Number.isInteger(maxRedirects) || maxRedirects < 0)
      fail(`${where}.max-redirects must be a whole number`);
    const maxSize = raw["max-size"] === undefined ? undefined : Number(raw["max-size"]);
    return {
      ...operators,
      requests,
      payloadRounds,
      redirects:
        flag(`${where}.redirects`, raw.redirects) || flag(`${where}.host-redirects`, raw["host-redirects"]),
      maxRedirects,
      stopAtFirstMatch: flag(`${where}.stop-at-first-match`, raw["stop-at-first-match"]),
      reqCondition: flag(`${where}.req-condition`, raw["req-condition"]),
      cookieReuse:
        flag(`${where}.cookie-reuse`, raw["cookie-reuse"]) &&
        !flag(`${where}.disable-cookie`, raw["disable-cookie"]),
      maxSize: maxSize !== undefined && Number.isInteger(maxSize) && maxSize > 0 ? maxSize : undefined,
    };
  }

  network(where: string, raw: unknown): NetworkBlock {
    if (!isObject(raw)) return fail(`${where} must be a mapping`);
    only(where, raw, [
      "id",
      "name",
      "host",
      "port",
      "inputs",
      "read-size",
      "read-all",
      "matchers",
      "extractors",
      "matchers-condition",
    ]);
    const operators = this.operators(where, raw);
    const hosts = strings(`${where}.host`, raw.host).map((host, i) =>
      this.interpolated(`${where}.host[${i}]`, host),
    );
    if (hosts.length === 0) fail(`${where} has no host`);
    const ports = strings(`${where}.port`, typeof raw.port === "string" ? raw.port.split(",") : raw.port).map(
      (port) => (/^\d{1,5}$/.test(port.trim()) ? Number(port) : fail(`${where}.port must be port numbers`)),
    );
    const tls = new Set<boolean>();
    for (const host of hosts) {
      const fixed = /:(\d{1,5})$/.exec(host.text);
      if (fixed) ports.push(Number(fixed[1]));
      tls.add(/^tls:\/\//.test(host.text));
    }
    const inputs = list(raw.inputs).map((input, i) => {
      const at = `${where}.inputs[${i}]`;
      if (!isObject(input)) return fail(`${at} must be a mapping`);
      only(at, input, ["data", "type", "read", "name"]);
      if (input.type !== undefined && input.type !== "hex" && input.type !== "text")
        fail(`${at}.type must be hex or text`);
      const text = input.data === undefined ? "" : String(input.data);
      const data =
        input.type === "hex"
          ? /^([0-9a-f]{2})*$/i.test(text.replace(/\s/g, ""))
            ? Buffer.from(text.replace(/\s/g, ""), "hex")
            : fail(`${at}.data is not hex`)
          : this.interpolated(`${at}.data`, text);
      const read = input.read === undefined ? undefined : Number(input.read);
      if (read !== undefined && (!Number.isInteger(read) || read < 1))
        fail(`${at}.read must be a whole number`);
      return { data, read, name: typeof input.name === "string" ? input.name : undefined };
    });
    const readSize = raw["read-size"] === undefined ? 1024 : Number(raw["read-size"]);
    if (!Number.isInteger(readSize) || readSize < 1) fail(`${where}.read-size must be a whole number`);
    return { ...operators, hosts, ports: [...new Set(ports)], tls: [...tls].sort(), inputs, readSize };
  }

  dns(where: string, raw: unknown): DnsBlock {
    if (!isObject(raw)) return fail(`${where} must be a mapping`);
    only(where, raw, [
      "id",
      "name",
      "type",
      "class",
      "recursion",
      "retries",
      "matchers",
      "extractors",
      "matchers-condition",
    ]);
    const operators = this.operators(where, raw);
    const type = String(raw.type ?? "A").toUpperCase();
    if (!DNS_TYPES.includes(type))
      fail(`${where}.type ${type} is not one Sightline asks (${DNS_TYPES.join(", ")})`);
    if (raw.class !== undefined && String(raw.class).toLowerCase() !== "inet")
      fail(`${where}.class ${String(raw.class)} is not supported (inet only)`);
    return {
      ...operators,
      name: this.interpolated(`${where}.name`, raw.name ?? "{{FQDN}}"),
      type,
      recursion: flag(`${where}.recursion`, raw.recursion, true),
    };
  }

  ssl(where: string, raw: unknown): SslBlock {
    if (!isObject(raw)) return fail(`${where} must be a mapping`);
    only(where, raw, [
      "id",
      "name",
      "address",
      "min_version",
      "max_version",
      "matchers",
      "extractors",
      "matchers-condition",
    ]);
    const version = (key: string, fallback: SslVersion): SslVersion => {
      const value = raw[key] ?? fallback;
      if (!(SSL_VERSIONS as readonly unknown[]).includes(value))
        fail(`${where}.${key} "${String(value)}" is not one of ${SSL_VERSIONS.join(", ")}`);
      return value as SslVersion;
    };
    const asked = raw.min_version !== undefined || raw.max_version !== undefined;
    const versions = asked
      ? { min: version("min_version", "sslv3"), max: version("max_version", "tls13") }
      : undefined;
    if (versions && SSL_VERSIONS.indexOf(versions.min) > SSL_VERSIONS.indexOf(versions.max))
      fail(`${where}.min_version ${versions.min} is newer than max_version ${versions.max}`);
    return {
      ...this.operators(where, raw),
      address: this.interpolated(`${where}.address`, raw.address ?? "{{Host}}:{{Port}}"),
      ...(versions ? { versions } : {}),
    };
  }
}

const FLOW_CALL = /^(http|dns|ssl|tcp|network|code|javascript|headless)\((\d*)\)$/;

/** A flow of http block calls joined by && and || (the common form); anything else is refused. */
function parseFlow(raw: unknown, httpBlocks: number): Flow {
  if (typeof raw !== "string") return fail(`"flow" must be a text`);
  const text = raw.trim();
  if (text.length > 500) fail(`"flow" is longer than the 500 characters of the supported form`);
  // Only protocol calls and && / || may be there: a loop, a condition or a variable is JavaScript.
  if (
    text
      .replace(/\b[a-z]+\(\d*\)/g, "")
      .replace(/&&|\|\|/g, "")
      .trim() !== ""
  )
    fail(
      `"flow" uses JavaScript beyond protocol calls joined by && and ||, which Sightline does not support`,
    );
  return text.split("||").map((group) =>
    group.split("&&").map((term) => {
      const call = FLOW_CALL.exec(term.trim());
      if (!call)
        return fail(
          `"flow" term "${term.trim()}" is not a protocol call such as http(1); only && and || join them`,
        );
      if (call[1] !== "http")
        return fail(`"flow" calls ${call[1]}(), and Sightline runs flows of http blocks only`);
      if (call[2] === "") return undefined;
      const index = Number(call[2]);
      if (index < 1 || index > httpBlocks)
        fail(`"flow" calls http(${index}), but the template has ${httpBlocks} http block(s)`);
      return index - 1;
    }),
  );
}

export const DNS_TYPES = ["A", "AAAA", "CNAME", "NS", "TXT", "MX", "SOA", "CAA", "SRV", "PTR"];

const TOP_LEVEL = ["id", "info", "variables", "flow", "http", "requests", "tcp", "network", "dns", "ssl"];

function info(raw: unknown): TemplateInfo {
  if (!isObject(raw)) return fail(`"info" must be a mapping`);
  const severity = String(raw.severity ?? "info").toLowerCase();
  if (!(NUCLEI_SEVERITIES as readonly string[]).includes(severity))
    fail(`info.severity "${severity}" is not one of ${NUCLEI_SEVERITIES.join(", ")}`);
  const classification = isObject(raw.classification) ? raw.classification : {};
  const tags = typeof raw.tags === "string" ? raw.tags.split(",") : strings("info.tags", raw.tags);
  const authors = typeof raw.author === "string" ? raw.author.split(",") : strings("info.author", raw.author);
  return {
    name: typeof raw.name === "string" ? raw.name : "",
    authors: authors.map((a) => a.trim()).filter(Boolean),
    severity: severity as TemplateSeverity,
    description: typeof raw.description === "string" ? raw.description.trim() : "",
    remediation: typeof raw.remediation === "string" ? raw.remediation.trim() : "",
    references: strings("info.reference", raw.reference)
      .map((r) => r.trim())
      .filter(Boolean),
    cveIds: strings("info.classification.cve-id", classification["cve-id"]).map((id) => id.toUpperCase()),
    cweIds: strings("info.classification.cwe-id", classification["cwe-id"]).map((id) => id.toUpperCase()),
    tags: tags.map((tag) => tag.trim().toLowerCase()).filter(Boolean),
    metadata: isObject(raw.metadata) ? raw.metadata : {},
  };
}

/**
 * Reads one template. Throws a TemplateError whose message says what is unsupported or wrong; the
 * caller skips the template with that message.
 */
export function parseTemplate(source: string | Buffer, file: string, from?: TemplateSource): Template {
  const bytes = typeof source === "string" ? Buffer.from(source) : source;
  let document: unknown;
  try {
    document = parseYaml(bytes.toString("utf8"), { maxAliasCount: 100, prettyErrors: false });
  } catch (error) {
    throw new TemplateError(`does not parse as YAML: ${(error as Error).message.split("\n")[0]}`);
  }
  if (!isObject(document)) fail("is not a YAML mapping");
  const raw = document as Record<string, unknown>;
  for (const key of Object.keys(raw))
    if (!TOP_LEVEL.includes(key))
      fail(
        [
          "code",
          "javascript",
          "headless",
          "file",
          "websocket",
          "whois",
          "workflows",
          "self-contained",
          "multi",
        ].includes(key)
          ? `uses "${key}", a protocol or feature Sightline does not support`
          : `uses "${key}", which Sightline does not support`,
      );
  if (typeof raw.id !== "string" || !/^[A-Za-z0-9][\w.-]{0,199}$/.test(raw.id))
    fail(`needs an "id" of letters, digits, dots, dashes and underscores`);
  const reader = new Reader(from);
  const variables: Array<[string, Interpolated]> = [];
  if (raw.variables !== undefined) {
    if (!isObject(raw.variables)) fail(`"variables" must be a mapping`);
    for (const [name, value] of Object.entries(raw.variables as Record<string, unknown>)) {
      if (!/^[A-Za-z_]\w*$/.test(name)) fail(`variable "${name}" is not a plain name`);
      variables.push([name, reader.interpolated(`variables.${name}`, value)]);
      reader.known.add(name);
    }
  }
  const blocks = (key: string) => list(raw[key]);
  const template: Template = {
    id: raw.id as string,
    file,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    info: info(raw.info),
    variables,
    http: [...blocks("http"), ...blocks("requests")].map((block, i) => reader.http(`http[${i}]`, block)),
    network: [...blocks("tcp"), ...blocks("network")].map((block, i) => reader.network(`tcp[${i}]`, block)),
    dns: blocks("dns").map((block, i) => reader.dns(`dns[${i}]`, block)),
    ssl: blocks("ssl").map((block, i) => reader.ssl(`ssl[${i}]`, block)),
  };
  const protocols = [template.http, template.network, template.dns, template.ssl].filter((b) => b.length > 0);
  if (protocols.length === 0) fail("has no http, tcp/network, dns or ssl block");
  if (protocols.length > 1)
    fail("mixes protocols in one template (a flow), which Sightline does not support");
  if (raw.flow !== undefined) template.flow = parseFlow(raw.flow, template.http.length);
  return template;
}
