/**
 * Web probing: every web port of an address, and of every name that resolves to it (virtual hosts: the
 * engine runs this module once per name, see `virtualHosts`), is asked for its front page over HTTP or
 * HTTPS. Each answer becomes a Uri entity
 * ("https://www.acme.test:443") with the spec's Application details: status, title, headers,
 * cookies, redirect chain, scripts, forms, request hosts, content checks, cloud providers, API
 * detection, response hash and fingerprints (with CVEs for precise versions). The web checks then run
 * on it and raise their issues.
 */

import { createHash } from "node:crypto";
import { isIP } from "node:net";
import type { FoundEntity, FoundIssue } from "../../core/entities.ts";
import { parseServiceName, serviceEndpoint } from "../../core/service-names.ts";
import type { ProbedApplication } from "../checks/application.ts";
import { inferredCveIssues } from "../checks/inferred-cve.ts";
import { checkApplication } from "../checks/web.ts";
import {
  type CveLookup,
  displayVersion,
  faviconHash,
  fingerprintHttp,
  toFingerprints,
} from "../fingerprint/fingerprint.ts";
import { BANNER_BYTES, libraryFromUrl, MAX_BANNER_SCRIPTS } from "../fingerprint/js-libraries.ts";
import { webRules } from "../fingerprint/web-rules.ts";
import { cloudProviders, contentChecks, isApiEndpoint } from "../http/analysis.ts";
import { probeCatchAll } from "../http/catch-all.ts";
import { type Page, parsePage, type ResourceKind } from "../http/page.ts";
import type { DiscoveryContext, DiscoveryModule } from "../module.ts";
import { DnsClient } from "../net/dns-client.ts";
import { type FetchLimits, fetchLimits, HttpClient, type HttpExchange, timedOut } from "../net/http-fetch.ts";
import { responseTime, stableBody, stableHeaders, stableSetCookie } from "../volatile.ts";

/** Ports where TLS is tried first; elsewhere plain HTTP is, and the other scheme is the fallback. */
const TLS_FIRST = new Set([443, 2376, 4443, 6443, 8443, 9443, 10250, 10443]);
const WEB_SERVICES = new Set([
  "http",
  "https",
  "http-proxy",
  "http-alt",
  "kibana",
  "elasticsearch",
  "couchdb",
  "kubernetes",
  "kubelet",
  "docker",
  "docker-tls",
  "docker-registry",
  "etcd",
  "consul",
  "prometheus",
]);

export interface WebTarget {
  scheme: "http" | "https";
  /** A host name or an IP address, as it goes into the URL and Host header. */
  host: string;
  /** The IP address to connect to. */
  address: string;
  port: number;
}

/** "https://www.acme.test:443", "http://[2001:db8::1]:8080": the application's address. */
export function applicationName(target: Pick<WebTarget, "scheme" | "host" | "port">): string {
  return `${target.scheme}://${hostAndPort(target.host, target.port)}`;
}

const hostAndPort = (host: string, port: number) => `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;

export interface ProbeOutcome {
  entity: FoundEntity;
  issues: FoundIssue[];
  application: ProbedApplication;
}

const isWebService = (details: Record<string, unknown>) => {
  if (details.protocol === "udp") return false; // SSDP answers look like HTTP, over UDP
  const service = String(details.service ?? "");
  const banner = String(details.banner ?? "");
  return WEB_SERVICES.has(service) || banner.startsWith("HTTP/");
};

/** A plain-HTTP request answered by a TLS-only port (nginx and Apache say so in a 400 page). */
const wantsTls = (exchange: HttpExchange) =>
  exchange.status === 400 &&
  /sent to HTTPS port|speaking plain HTTP to an SSL-enabled/i.test(exchange.body.toString("utf8", 0, 2048));

/**
 * Probes one host:port, trying the given or likely scheme first, then the other. Answers the application, or
 * undefined when nothing web-like answered.
 */
export async function probeWebTarget(
  target: Omit<WebTarget, "scheme"> & { scheme?: WebTarget["scheme"] },
  options: {
    signal: AbortSignal;
    mayTouch: (address: string) => boolean;
    cves?: CveLookup;
    limits?: Partial<FetchLimits>;
    /** Fingerprint rules installed beside the built-in ones (`sightline fingerprints update`). */
    rulesFile?: string;
  },
): Promise<ProbeOutcome | undefined> {
  const pins = isIP(target.host) ? {} : { [target.host]: target.address };
  const client = new HttpClient({
    pins,
    limits: options.limits,
    signal: options.signal,
    mayTouch: options.mayTouch,
  });
  try {
    // A port speaks one protocol whatever a URI says: the given (or likely) scheme first, then the other.
    const preferred = target.scheme ?? (TLS_FIRST.has(target.port) ? "https" : "http");
    const schemes: Array<WebTarget["scheme"]> = [preferred, preferred === "https" ? "http" : "https"];
    for (const scheme of schemes) {
      if (options.signal.aborted) return undefined;
      const url = `${applicationName({ scheme, host: target.host, port: target.port })}/`;
      let result: Awaited<ReturnType<HttpClient["fetchFollowing"]>>;
      try {
        result = await client.fetchFollowing(url);
      } catch (error) {
        // A plain request the port left unanswered to the end of the timeout: a TLS server answers plain
        // bytes at once (an alert, a 400, a close), so a silent port costs one timeout, not two.
        if (scheme === "http" && timedOut(error)) return undefined;
        continue;
      }
      if (scheme === "http" && wantsTls(result.final)) continue;
      return await describe({ ...target, scheme }, result, client, options.cves, options.rulesFile);
    }
    return undefined;
  } finally {
    await client.close();
  }
}

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

async function fetchFavicon(client: HttpClient, url: string): Promise<number | undefined> {
  try {
    const exchange = await client.fetch(url);
    const type = exchange.headers.find(([name]) => name === "content-type")?.[1] ?? "";
    if (
      exchange.status !== 200 ||
      exchange.body.length === 0 ||
      exchange.truncated ||
      /text\/html/i.test(type)
    )
      return undefined;
    return faviconHash(exchange.body);
  } catch {
    return undefined;
  }
}

/**
 * The first BANNER_BYTES of the page's own scripts (same scheme, host and port) whose URL names no
 * library version, at most MAX_BANNER_SCRIPTS of them: their banner comments name libraries.
 */
async function fetchScriptBanners(
  client: HttpClient,
  pageUrl: string,
  scripts: string[],
): Promise<Array<{ url: string; text: string }>> {
  const origin = new URL(pageUrl).origin;
  const candidates = scripts
    .filter((script) => {
      try {
        return new URL(script).origin === origin && !libraryFromUrl(script);
      } catch {
        return false;
      }
    })
    .slice(0, MAX_BANNER_SCRIPTS);
  const banners: Array<{ url: string; text: string }> = [];
  for (const url of candidates) {
    try {
      const range = { range: `bytes=0-${BANNER_BYTES - 1}` };
      const exchange = await client.fetch(url, "GET", range, { maxBodyBytes: BANNER_BYTES });
      const type = exchange.headers.find(([name]) => name === "content-type")?.[1] ?? "";
      if ((exchange.status === 200 || exchange.status === 206) && !/text\/html/i.test(type))
        banners.push({ url, text: exchange.body.toString("utf8") });
    } catch {
      // unreachable or too slow: the script's banner is not known
    }
  }
  return banners;
}

async function describe(
  target: WebTarget,
  result: { final: HttpExchange; first: HttpExchange; chain: string[] },
  client: HttpClient,
  cves: CveLookup | undefined,
  rulesFile: string | undefined,
): Promise<ProbeOutcome> {
  const { final } = result;
  const name = applicationName(target);
  const body = final.body.toString("utf8");
  const isHtml = /<html|<!doctype html|<head|<body|<title/i.test(body.slice(0, 4096));
  const page = parsePage(isHtml ? body : "", final.url);
  const setCookies = [result.first, final]
    .flatMap((exchange) => exchange.headers.filter(([key]) => key === "set-cookie").map(([, value]) => value))
    .filter((value, index, all) => all.indexOf(value) === index);
  const favicon = await fetchFavicon(client, page.favicon ?? new URL("/favicon.ico", final.url).href);
  const scriptBanners = await fetchScriptBanners(client, final.url, page.scripts);
  // Whether it answers a path that does not exist as if it did: path checks then compare with that.
  const catchAll = await probeCatchAll(client, final.url);
  const detections = fingerprintHttp(
    {
      url: final.url,
      headers: final.headers,
      setCookies,
      body: isHtml ? body : "",
      meta: page.meta,
      scripts: page.scripts,
      scriptBanners,
      faviconHash: favicon,
    },
    webRules(rulesFile),
  );
  const products = await toFingerprints(detections, cves);
  const providers = cloudProviders(final);
  // What changes on every visit (the clock, session ids, nonces) is kept out, so an unchanged site reads
  // the same in every run and keeps its version (see volatile.ts); checks and fingerprints saw it all.
  const stable = stableBody(body);
  const now = responseTime(final.headers);
  const details: Record<string, unknown> = {
    uri: final.url,
    code: String(final.status),
    title: page.title,
    headers: stableHeaders(final.headers, stable.varies),
    cookies: [...new Set(setCookies.map((line) => stableSetCookie(line, now)))].join("\n"),
    redirect_chain: result.chain,
    scripts: page.scripts,
    forms: page.forms.length > 0,
    request_hosts: hostsOf(page.resources),
    resource_hosts: resourceHosts(page),
    ...(catchAll ? { catch_all: catchAll } : {}),
    content: contentChecks(final, page, body),
    cloud_providers: providers,
    cloud_hosted: providers.length > 0,
    api_endpoint: isApiEndpoint(final, body),
    response_data_hash: stable.varies ? sha256(Buffer.from(stable.text)) : sha256(final.body),
    fingerprint: products.map((product) => product.fingerprint),
    products: products.map((product) => [product.detection.name, displayVersion(product.detection)]),
    protocol: "HTTP/1.1",
    service: target.scheme,
    port: target.port,
    ip_address: target.address,
    hostname: isIP(target.host) ? null : target.host,
    favicon_hash: favicon ?? null,
  };
  const application: ProbedApplication = {
    name,
    exchange: final,
    first: result.first,
    body,
    page,
    products,
    client,
  };
  const entityRef = { kind: "Uri" as const, name };
  const issues = [
    ...(await checkApplication(application)),
    ...products.flatMap((product) => inferredCveIssues(product, entityRef)),
  ];
  return { entity: { kind: "Uri", name, details }, issues, application };
}

/** Where to probe for an entity: a web service by its address or by one name (`details.hostname`), or a Uri as given. */
async function targetOf(
  entity: FoundEntity,
  ctx: DiscoveryContext,
): Promise<(Omit<WebTarget, "scheme"> & { scheme?: WebTarget["scheme"] }) | undefined> {
  const details = entity.details ?? {};
  if (entity.kind === "NetworkService") {
    if (!isWebService(details)) return undefined;
    const endpoint = serviceEndpoint(entity);
    if (!endpoint || !isIP(endpoint.address)) return undefined;
    const { address, port } = endpoint;
    return { host: typeof details.hostname === "string" ? details.hostname : address, address, port };
  }
  const target = uriTarget(entity.name);
  if (!target) return undefined;
  const address = isIP(target.host)
    ? target.host
    : typeof details.ip_address === "string"
      ? details.ip_address
      : await resolve(target.host, ctx);
  return address ? { ...target, address } : undefined;
}

/** Scheme, host and port of an http(s) URI. */
function uriTarget(uri: string): Omit<WebTarget, "address"> | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if (!/^https?:$/.test(url.protocol)) return undefined;
  const scheme = url.protocol === "https:" ? "https" : "http";
  const port = url.port ? Number(url.port) : scheme === "https" ? 443 : 80;
  return { scheme, host: url.hostname.replace(/^\[|\]$/g, ""), port };
}

/**
 * One application per host and port: the scheme follows from what the port speaks, so a service probed
 * by address or name and a URI of the same host and port are the same work.
 */
function applicationKey(entity: FoundEntity): string {
  const hostname = entity.details?.hostname;
  const parsed = entity.kind === "NetworkService" ? parseServiceName(entity.name) : uriTarget(entity.name);
  if (!parsed) return `${entity.kind}:${entity.name}`;
  const host = "address" in parsed ? (typeof hostname === "string" ? hostname : parsed.address) : parsed.host;
  return hostAndPort(host, parsed.port);
}

/** The first IPv4 address of a URI's host, through the run's resolvers, throttle and limits. */
async function resolve(host: string, ctx: DiscoveryContext): Promise<string | undefined> {
  const answer = await new DnsClient(ctx).a(host);
  if (answer.ok) return answer.value[0];
  if (answer.code !== "cancelled") ctx.note(`${host} did not resolve; its web application was not probed.`);
  return undefined;
}

export function createHttpModule(
  options: { cves?: CveLookup; limits?: Partial<FetchLimits>; rulesFile?: string } = {},
): DiscoveryModule {
  return {
    name: "http",
    consumes: ["NetworkService", "Uri"],
    produces: ["Uri"],
    virtualHosts: true,
    // A web probe still running after a moment waits on the network (a silent port waits its timeout).
    waits: true,
    wants: (entity) => entity.kind !== "NetworkService" || isWebService(entity.details ?? {}),
    workKey: applicationKey,
    async run(entity, ctx) {
      // An application this module emitted comes back as a Uri to explore: it was probed already.
      if (entity.kind === "Uri" && entity.details?.response_data_hash !== undefined) return;
      const limits = { ...fetchLimits(ctx.settings), ...options.limits };
      const target = await targetOf(entity, ctx);
      if (!target) return;
      if (!ctx.mayTouch(target.address) || (!isIP(target.host) && !ctx.mayTouch(target.host))) {
        ctx.note(`${target.host}:${target.port} was not probed over HTTP: the deny list covers it.`);
        return;
      }
      const probe = () =>
        probeWebTarget(target, {
          signal: ctx.signal,
          mayTouch: ctx.mayTouch,
          cves: options.cves,
          limits,
          rulesFile: options.rulesFile,
        });
      let outcome: ProbeOutcome | undefined;
      try {
        outcome = await ctx.throttle.run(target.address, probe, ctx.signal);
      } catch {
        return; // aborted while waiting for a slot
      }
      if (!outcome) return;
      ctx.emit(outcome.entity);
      for (const issue of outcome.issues) ctx.raise(issue);
    },
  };
}

const hostsOf = (urls: string[]) => [...new Set(urls.map((url) => new URL(url).hostname))].sort();

/** The hosts of the page's stylesheets, frames and form targets, by kind (kinds with none left out). */
function resourceHosts(page: Page): Partial<Record<ResourceKind, string[]>> {
  const byKind: Partial<Record<ResourceKind, string[]>> = {};
  for (const [kind, urls] of Object.entries(page.resourcesByKind) as Array<[ResourceKind, string[]]>)
    if (urls.length > 0) byKind[kind] = hostsOf(urls);
  return byKind;
}
