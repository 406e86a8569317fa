/**
 * Web probing: every web port of an address, and every name known to resolve to it (virtual hosts),
 * is asked for its front page over HTTP or HTTPS. Each answer becomes a Uri entity
 * ("https://www.acme.test:443") with the spec's Application details: status, title, headers,
 * cookies, redirect chain, scripts, forms, request hosts, content checks, cloud providers, API
 * detection, response hash and fingerprints (with CVEs for precise versions). The web checks then run
 * on it and raise their issues.
 */
import { createHash } from "node:crypto";
import { Resolver } from "node:dns/promises";
import { isIP } from "node:net";
import type { ProbedApplication } from "./checks/application.ts";
import { inferredCveIssues } from "./checks/inferred-cve.ts";
import { checkApplication } from "./checks/web.ts";
import {
  type CveLookup,
  displayVersion,
  faviconHash,
  fingerprintHttp,
  toFingerprints,
} from "./fingerprint/fingerprint.ts";
import { cloudProviders, contentChecks, isApiEndpoint } from "./http/analysis.ts";
import { type FetchLimits, fetchLimits, HttpClient, type HttpExchange } from "./http/fetch.ts";
import { parsePage } from "./http/page.ts";
import type { DiscoveryContext, DiscoveryModule, FoundEntity, FoundIssue } from "./module.ts";

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
  const host = isIP(target.host) === 6 ? `[${target.host}]` : target.host;
  return `${target.scheme}://${host}:${target.port}`;
}

export interface ProbeOutcome {
  entity: FoundEntity;
  issues: FoundIssue[];
  application: ProbedApplication;
}

const isWebService = (details: Record<string, unknown>) => {
  const service = String(details.service ?? "");
  const banner = String(details.banner ?? "");
  return WEB_SERVICES.has(service) || banner.startsWith("HTTP/");
};

/** A plain-HTTP request answered by a TLS-only port (nginx and Apache say so in a 400 page). */
const wantsTls = (exchange: HttpExchange) =>
  exchange.status === 400 &&
  /sent to HTTPS port|speaking plain HTTP to an SSL-enabled/i.test(exchange.body.toString("utf8", 0, 2048));

/**
 * Probes one host:port, trying the likely scheme first, then the other. Answers the application, or
 * undefined when nothing web-like answered.
 */
export async function probeWebTarget(
  target: Omit<WebTarget, "scheme"> & { scheme?: WebTarget["scheme"] },
  options: {
    signal: AbortSignal;
    mayTouch: (address: string) => boolean;
    cves?: CveLookup;
    limits?: Partial<FetchLimits>;
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
    const preferred = target.scheme ?? (TLS_FIRST.has(target.port) ? "https" : "http");
    const schemes: Array<WebTarget["scheme"]> = target.scheme
      ? [target.scheme]
      : [preferred, preferred === "https" ? "http" : "https"];
    for (const scheme of schemes) {
      if (options.signal.aborted) return undefined;
      const url = `${applicationName({ scheme, host: target.host, port: target.port })}/`;
      let result: Awaited<ReturnType<HttpClient["fetchFollowing"]>>;
      try {
        result = await client.fetchFollowing(url);
      } catch {
        continue;
      }
      if (scheme === "http" && wantsTls(result.final) && schemes.includes("https") && !target.scheme)
        continue;
      return await describe({ ...target, scheme }, result, client, options.cves);
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

async function describe(
  target: WebTarget,
  result: { final: HttpExchange; first: HttpExchange; chain: string[] },
  client: HttpClient,
  cves: CveLookup | undefined,
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
  const detections = fingerprintHttp({
    url: final.url,
    headers: final.headers,
    setCookies,
    body: isHtml ? body : "",
    meta: page.meta,
    scripts: page.scripts,
    faviconHash: favicon,
  });
  const products = await toFingerprints(detections, cves);
  const providers = cloudProviders(final);
  const details: Record<string, unknown> = {
    uri: final.url,
    code: String(final.status),
    title: page.title,
    headers: final.headers.map(([key, value]) => `${key}: ${value}`),
    cookies: setCookies.join("\n"),
    redirect_chain: result.chain,
    scripts: page.scripts,
    forms: page.forms.length > 0,
    request_hosts: [...new Set(page.resources.map((resource) => new URL(resource).hostname))].sort(),
    content: contentChecks(final, page, body),
    cloud_providers: providers,
    cloud_hosted: providers.length > 0,
    api_endpoint: isApiEndpoint(final, body),
    response_data_hash: sha256(final.body),
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

type Throttled = DiscoveryContext & {
  throttle?: { run<T>(host: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> };
};

/** Where to probe for an entity: the address and each name of a web service, or a Uri as given. */
async function targetsOf(
  entity: FoundEntity,
  ctx: DiscoveryContext,
): Promise<Array<Omit<WebTarget, "scheme"> & { scheme?: WebTarget["scheme"] }>> {
  const details = entity.details ?? {};
  if (entity.kind === "NetworkService") {
    if (!isWebService(details)) return [];
    const match = /^\[?([^\]]+)\]?:(\d+)\/tcp$/.exec(entity.name);
    const address = String(details.ip_address ?? match?.[1] ?? "");
    const port = Number(details.port ?? match?.[2]);
    if (!isIP(address) || !Number.isInteger(port)) return [];
    const names = Array.isArray(details.hostnames) ? details.hostnames.map(String) : [];
    return [address, ...names].map((host) => ({ host, address, port }));
  }
  let url: URL;
  try {
    url = new URL(entity.name);
  } catch {
    return [];
  }
  if (!/^https?:$/.test(url.protocol)) return [];
  const scheme = url.protocol === "https:" ? "https" : "http";
  const port = url.port ? Number(url.port) : scheme === "https" ? 443 : 80;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const address = isIP(host)
    ? host
    : typeof details.ip_address === "string"
      ? details.ip_address
      : await resolve(host, ctx);
  return address ? [{ host, address, port, scheme }] : [];
}

async function resolve(host: string, ctx: DiscoveryContext): Promise<string | undefined> {
  const resolver = new Resolver({ timeout: ctx.settings.timeoutMs, tries: 2 });
  if (ctx.settings.dnsServers.length > 0) resolver.setServers(ctx.settings.dnsServers);
  const abort = () => resolver.cancel();
  ctx.signal.addEventListener("abort", abort, { once: true });
  try {
    return (await resolver.resolve4(host))[0];
  } catch {
    ctx.note(`${host} did not resolve; its web application was not probed.`);
    return undefined;
  } finally {
    ctx.signal.removeEventListener("abort", abort);
  }
}

export function createHttpModule(
  options: { cves?: CveLookup; limits?: Partial<FetchLimits> } = {},
): DiscoveryModule {
  return {
    name: "http",
    consumes: ["NetworkService", "Uri"],
    produces: ["Uri"],
    async run(entity, ctx) {
      // An application this module emitted comes back as a Uri to explore: it was probed already.
      if (entity.kind === "Uri" && entity.details?.response_data_hash !== undefined) return;
      const throttle = (ctx as Throttled).throttle;
      const limits = { ...fetchLimits(ctx.settings), ...options.limits };
      for (const target of await targetsOf(entity, ctx)) {
        if (!ctx.mayTouch(target.address) || (!isIP(target.host) && !ctx.mayTouch(target.host))) {
          ctx.note(`${target.host}:${target.port} was not probed over HTTP: the deny list covers it.`);
          continue;
        }
        const probe = () =>
          probeWebTarget(target, { signal: ctx.signal, mayTouch: ctx.mayTouch, cves: options.cves, limits });
        let outcome: ProbeOutcome | undefined;
        try {
          outcome = throttle ? await throttle.run(target.address, probe, ctx.signal) : await probe();
        } catch {
          continue; // aborted while waiting for a slot
        }
        if (!outcome) continue;
        ctx.emit(outcome.entity);
        for (const issue of outcome.issues) ctx.raise(issue);
      }
    },
  };
}
