/**
 * Runs a template's `http` blocks against one web application through the run's HTTP client: the
 * client pins the application's host to its address and asks the scope about every host before a
 * request leaves, bodies are cut at the client's bound (or the template's smaller `max-size`), and
 * redirects are followed by hand, only within the application's host and at most the smaller of the
 * template's `max-redirects` and SIGHTLINE_HTTP_MAX_REDIRECTS hops. Identical GET requests of several
 * templates (the front page, most often) are sent once per application and run.
 */
import { setBounded } from "../../core/bounded-map.ts";
import { answersLikeCatchAll, type CatchAllBaseline } from "../http/catch-all.ts";
import type { HttpClient, HttpExchange } from "../net/http-fetch.ts";
import type { DslVariables } from "./dsl.ts";
import { hostVariables } from "./host-variables.ts";
import { evidence, interpolate, type OperatorResult, runOperators } from "./operators.ts";
import type { HttpBlock, HttpRequestSpec, Interpolated, Template } from "./template.ts";

export interface TemplateHit {
  /** The request that matched, in the spec's issue shape, with what answered. */
  request: { method: string; url: string; headers: Record<string, string>; hostname: string };
  status?: string;
  uri: string;
  matched?: { part: string; excerpt: string };
  matcherNames: string[];
  extracted: Record<string, string[]>;
}

export interface HttpEnvironment {
  client: HttpClient;
  /** Wraps one network operation in the run's politeness limits. */
  throttle<T>(work: () => Promise<T>): Promise<T>;
  /** The run's signal. */
  signal: AbortSignal;
  /**
   * The template's own time bound (a clock time): no request starts after it, and each request is
   * bounded by the client's time-out, so a template ends at most one time-out after its deadline.
   */
  deadline: number;
  maxRedirects: number;
  /** Responses of plain GET requests already sent to this application in this run. */
  cache: Map<string, Promise<HttpExchange>>;
  /**
   * When the application answers every path alike: its answer to a path that does not exist. A match
   * on an answer to another path that reads like it is not a hit (`skipped` counts them).
   */
  catchAll?: { baseline: CatchAllBaseline; skipped: number };
  note(message: string): void;
}

const canonicalNames = new Map<string, string>();

/** Go's canonical header name (net/textproto), as nuclei's header part spells names: `X-Frame-Options`. */
function canonical(name: string): string {
  let spelled = canonicalNames.get(name);
  if (spelled === undefined) {
    spelled = name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
    if (canonicalNames.size < 10_000) canonicalNames.set(name, spelled);
  }
  return spelled;
}

/** The parts of a response, made once per response (several templates read the same cached one), kept on it. */
const PARTS = Symbol("response variables");

const STATUS_TEXT: Record<number, string> = {
  200: "OK",
  301: "Moved Permanently",
  302: "Found",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  500: "Internal Server Error",
};

/** A header's DSL variable (`x-frame-options` → `x_frame_options`), spelled once per name. */
const variableNames = new Map<string, string>();
function variableName(header: string): string {
  let name = variableNames.get(header);
  if (name === undefined) {
    name = header.replace(/-/g, "_");
    if (variableNames.size < 10_000) variableNames.set(header, name);
  }
  return name;
}

/** The host names of the origins responses came from, parsed once per origin. */
const originHosts = new Map<string, string>();
function hostOf(url: string): string {
  const path = url.indexOf("/", url.indexOf("//") + 2);
  const origin = path === -1 ? url : url.slice(0, path);
  let host = originHosts.get(origin);
  if (host === undefined) {
    host = new URL(origin).hostname;
    setBounded(originHosts, origin, host, 1024);
  }
  return host;
}

/**
 * Names nuclei gives the parts of a response, as DSL variables, without `request` and `duration` (which
 * differ per template): made once per response. Paid for nearly every template request, so made
 * without a URL parse, a map of headers copied over or a WeakMap (about 3 µs a response where those
 * took 9).
 */
export function responseVariables(exchange: HttpExchange): DslVariables {
  const made = exchange as HttpExchange & { [PARTS]?: DslVariables };
  const known = made[PARTS];
  if (known) return known;
  const body = exchange.body.toString("utf8");
  let header = `HTTP/1.1 ${exchange.status} ${STATUS_TEXT[exchange.status] ?? ""}`.trimEnd();
  for (const [name, value] of exchange.headers) header += `\r\n${canonical(name)}: ${value}`;
  const response = `${header}\r\n\r\n${body}`;
  const variables: DslVariables = {
    body,
    header,
    all_headers: header,
    response,
    all: response,
    status_code: exchange.status,
    content_length: exchange.body.length,
    host: hostOf(exchange.url),
    url: exchange.url,
  };
  // Each header by its name, a repeated one as its values joined by spaces; a header named like a part
  // (`content-length`, `host`) stands for it.
  const fromHeaders = new Set<string>();
  for (const [name, value] of exchange.headers) {
    const key = variableName(name);
    variables[key] = fromHeaders.has(key) ? `${variables[key]} ${value}` : value;
    fromHeaders.add(key);
  }
  variables.content_type ??= "";
  made[PARTS] = variables;
  return variables;
}

/** The variables of an application URL, parsed once per URL (every template run on it asks for them). */
const urlParts = new Map<string, DslVariables>();

/** A template's `{{…}}` variables for one application URL. */
export function urlVariables(base: string, template: Template): DslVariables {
  let parts = urlParts.get(base);
  if (!parts) {
    const url = new URL(base);
    const port = url.port || (url.protocol === "https:" ? "443" : "80");
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
    parts = {
      BaseURL: `${url.origin}${path}`,
      RootURL: url.origin,
      Hostname: url.port ? `${url.hostname}:${url.port}` : url.hostname,
      Host: host,
      Port: port,
      Scheme: url.protocol.slice(0, -1),
      Path: path,
      File: path.split("/").pop() ?? "",
      FQDN: host,
      ...hostVariables(host),
      Input: base,
    };
    setBounded(urlParts, base, parts, 256);
  }
  const variables: DslVariables = { ...parts };
  // randstr and randstr_1 … randstr_4 from one draw, for the templates that name them.
  if (usesRandom(template)) {
    const random = randomHex(80);
    for (let i = 0; i <= 4; i++)
      variables[i === 0 ? "randstr" : `randstr_${i}`] = random.slice(i * 16, i * 16 + 16);
  }
  for (const [name, value] of template.variables) variables[name] = interpolate(value, variables);
  return variables;
}

const randomUsers = new WeakMap<Template, boolean>();

/** Whether a template names randstr anywhere (a request, a variable, a matcher), asked once per template. */
function usesRandom(template: Template): boolean {
  let uses = randomUsers.get(template);
  if (uses === undefined) {
    uses = JSON.stringify(template).includes("randstr");
    randomUsers.set(template, uses);
  }
  return uses;
}

/**
 * Hex digits for randstr: paths that must not exist and markers to find reflected, not secrets, so
 * Math.random serves (a draw of crypto randomness per template run was 3% of the discovery thread's time).
 */
function randomHex(digits: number): string {
  let text = "";
  while (text.length < digits)
    text += Math.floor(Math.random() * 2 ** 52)
      .toString(16)
      .padStart(13, "0");
  return text.slice(0, digits);
}

/** Headers undici sets itself, or refuses: a template may not set them. */
const MANAGED = new Set([
  "host",
  "content-length",
  "connection",
  "transfer-encoding",
  "keep-alive",
  "upgrade",
  "expect",
]);

interface Built {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

function build(spec: HttpRequestSpec, variables: DslVariables): Built {
  const value = (text: Interpolated) => interpolate(text, variables);
  if (spec.kind === "path") {
    const headers: Record<string, string> = {};
    for (const [name, text] of spec.headers)
      if (!MANAGED.has(name.toLowerCase())) headers[name.toLowerCase()] = value(text);
    return {
      method: spec.method,
      url: new URL(value(spec.path)).href,
      headers,
      body: spec.body ? value(spec.body) : undefined,
    };
  }
  const text = value(spec.raw).replace(/\r\n/g, "\n").replace(/^\s+/, "");
  const split = text.indexOf("\n\n");
  const head = (split === -1 ? text : text.slice(0, split)).split("\n");
  const body = split === -1 ? undefined : text.slice(split + 2).replace(/\n$/, "");
  const first = /^([A-Z]+)\s+(\S+)(?:\s+HTTP\/[\d.]+)?$/.exec(head[0].trim());
  if (!first)
    throw new Error(`the raw request's first line "${head[0].slice(0, 60)}" is not "METHOD PATH HTTP/1.1"`);
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!MANAGED.has(name)) headers[name] = line.slice(colon + 1).trim();
  }
  const target = /^https?:\/\//.test(first[2])
    ? first[2]
    : `${String(variables.RootURL)}${first[2].startsWith("/") ? "" : "/"}${first[2]}`;
  return { method: first[1], url: new URL(target).href, headers, body: body === "" ? undefined : body };
}

function requestText(built: Built): string {
  const url = new URL(built.url);
  let text = `${built.method} ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n`;
  for (const name in built.headers) text += `${canonical(name)}: ${built.headers[name]}\r\n`;
  return `${text}\r\n${built.body ?? ""}`;
}

async function send(
  block: HttpBlock,
  built: Built,
  env: HttpEnvironment,
  origin: URL,
  cookies: Map<string, string>,
) {
  const sendOne = (request: Built) => {
    const headers = { ...request.headers };
    if (block.cookieReuse && cookies.size > 0)
      headers.cookie = [...cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const cacheable =
      (request.method === "GET" || request.method === "HEAD") &&
      request.body === undefined &&
      !headers.cookie &&
      block.maxSize === undefined;
    const key = `${request.method} ${request.url} ${JSON.stringify(headers)}`;
    if (cacheable) {
      const cached = env.cache.get(key);
      if (cached) return cached;
    }
    const pending = env.throttle(() =>
      env.client.fetch(request.url, request.method, headers, {
        body: request.body,
        maxBodyBytes: block.maxSize,
      }),
    );
    if (cacheable) {
      env.cache.set(key, pending);
      pending.catch(() => env.cache.delete(key));
    }
    return pending;
  };
  let exchange = await sendOne(built);
  if (!block.redirects) return exchange;
  const most = Math.min(block.maxRedirects, env.maxRedirects);
  let request = built;
  for (let hop = 0; ; hop++) {
    const location = exchange.headers.find(([name]) => name === "location")?.[1];
    if (exchange.status < 300 || exchange.status >= 400 || !location) return exchange;
    if (hop >= most) {
      env.note(
        `stopped following redirects from ${built.url} after ${most} hops (a redirect loop, or a longer chain than SIGHTLINE_HTTP_MAX_REDIRECTS allows)`,
      );
      return exchange;
    }
    let next: URL;
    try {
      next = new URL(location, exchange.url);
    } catch {
      return exchange;
    }
    // Only within the application's host: anywhere else is another application, or out of scope.
    if (!/^https?:$/.test(next.protocol) || next.hostname !== origin.hostname || !env.client.addressOf(next))
      return exchange;
    const keep = exchange.status === 307 || exchange.status === 308;
    request = {
      method: keep ? request.method : "GET",
      url: next.href,
      headers: request.headers,
      body: keep ? request.body : undefined,
    };
    exchange = await sendOne(request);
  }
}

function hitOf(exchange: HttpExchange, result: OperatorResult, matched: TemplateHit["matched"]): TemplateHit {
  const url = new URL(exchange.url);
  return {
    request: {
      method: exchange.method,
      url: exchange.url,
      headers: exchange.requestHeaders,
      hostname: url.hostname,
    },
    status: String(exchange.status),
    uri: exchange.url,
    matched,
    matcherNames: result.matcherNames,
    extracted: result.extracted,
  };
}

/** Whether a matched answer is only the catch-all's answer to any path (counted when it is). */
function onCatchAll(env: HttpEnvironment, origin: URL, exchange: HttpExchange): boolean {
  if (!env.catchAll || new URL(exchange.url).pathname === origin.pathname) return false;
  if (!answersLikeCatchAll(env.catchAll.baseline, exchange)) return false;
  env.catchAll.skipped++;
  return true;
}

/** Every hit of the template's http blocks on the application at `base` (empty when it does not match). */
export async function runHttpTemplate(
  template: Template,
  base: string,
  env: HttpEnvironment,
): Promise<TemplateHit[]> {
  const variables = urlVariables(base, template);
  const origin = new URL(base);
  /** One block's hits; `stopped` when the run or the template's time ended it. */
  const runBlock = async (block: HttpBlock) => {
    const hits: TemplateHit[] = [];
    // Each payload round runs the block's requests with its values (one round without payloads).
    for (const round of block.payloadRounds) {
      const found = await runRound(block, variables, round, origin, env);
      hits.push(...found.hits);
      if (found.stopped) return { hits, stopped: true };
      if (block.stopAtFirstMatch && found.hits.length > 0) break;
    }
    return { hits, stopped: false };
  };
  /** The hits of some blocks in turn; `stopped` as for one block. */
  const runBlocks = async (blocks: HttpBlock[]) => {
    const hits: TemplateHit[] = [];
    for (const block of blocks) {
      const found = await runBlock(block);
      hits.push(...found.hits);
      if (found.stopped) return { hits, stopped: true };
    }
    return { hits, stopped: false };
  };
  if (!template.flow) return (await runBlocks(template.http)).hits;
  // A flow: the first OR-group whose every term matches gives the hits; a term that does not match
  // ends its group, and the blocks after it in the group are not sent.
  for (const group of template.flow) {
    const hits: TemplateHit[] = [];
    let holds = true;
    for (const term of group) {
      const ran = await runBlocks(term === undefined ? template.http : [template.http[term]]);
      if (ran.stopped) return [];
      if (ran.hits.length === 0) {
        holds = false;
        break;
      }
      hits.push(...ran.hits);
    }
    if (holds) return hits;
  }
  return [];
}

/**
 * One round of a block's requests with a payload round's values; `stopped` when the run or the
 * template's time ended it. What internal extractors find goes into `variables` too, so the template's
 * later requests and blocks read it, as in nuclei.
 */
async function runRound(
  block: HttpBlock,
  variables: DslVariables,
  round: Record<string, string>,
  origin: URL,
  env: HttpEnvironment,
): Promise<{ hits: TemplateHit[]; stopped: boolean }> {
  const scope: DslVariables = { ...variables, ...round };
  const hits: TemplateHit[] = [];
  const cookies = new Map<string, string>();
  const history: DslVariables = {};
  let last: { exchange: HttpExchange; result: OperatorResult; parts: DslVariables } | undefined;
  for (const [index, spec] of block.requests.entries()) {
    if (env.signal.aborted) return { hits, stopped: true };
    if (Date.now() > env.deadline) {
      env.note(`stopped before request ${index + 1}: the template ran out of its time bound`);
      return { hits, stopped: true };
    }
    let built: Built;
    try {
      built = build(spec, scope);
    } catch (error) {
      env.note(`request ${index + 1} was not sent: ${(error as Error).message}`);
      continue;
    }
    const started = performance.now();
    let exchange: HttpExchange;
    try {
      exchange = await send(block, built, env, origin, cookies);
    } catch {
      continue; // refused by the scope, timed out, reset: no response to match
    }
    if (exchange.truncated)
      env.note(
        `matched on the first ${exchange.body.length} bytes of the body of ${exchange.url} (a larger body is cut at the bound)`,
      );
    for (const line of exchange.headers.filter(([name]) => name === "set-cookie")) {
      const [pair] = line[1].split(";");
      const at = pair.indexOf("=");
      if (at > 0) cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    const parts = responseVariables(exchange);
    const own = { request: requestText(built), duration: (performance.now() - started) / 1000 };
    // Parts by request number (status_code_2, body_1) are for req-condition blocks only.
    if (block.reqCondition)
      for (const [name, value] of Object.entries({ ...parts, ...own }))
        history[`${name}_${index + 1}`] = value;
    const all = { ...scope, ...history, ...parts, ...own };
    const result = runOperators(block, {
      variables: all,
      bytes: { body: exchange.body, raw: exchange.body },
    });
    Object.assign(scope, result.internal);
    Object.assign(variables, result.internal);
    last = { exchange, result, parts: all };
    if (block.reqCondition) continue;
    if (result.matched && onCatchAll(env, origin, exchange)) continue;
    if (result.matched) {
      hits.push(hitOf(exchange, result, evidence(block, { variables: all })));
      if (block.stopAtFirstMatch) break;
    }
  }
  if (block.reqCondition && last?.result.matched && !onCatchAll(env, origin, last.exchange))
    hits.push(hitOf(last.exchange, last.result, evidence(block, { variables: last.parts })));
  return { hits, stopped: false };
}
