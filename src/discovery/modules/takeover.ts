/**
 * Subdomain takeovers: a name whose CNAME chain (or A record) leads into a shared service
 * (probes/takeover-services.json) is asked for its page, and an answer that is the service's own "nobody
 * holds this name" page — or, for services whose names vanish when released, an NXDOMAIN at the end of
 * the chain — raises `subdomain_takeover`: anyone can claim the name at the service and serve content
 * under it. The plain dangling CNAME (dns.ts) stays what it is; this says which ones are takeovers.
 *
 * One page per name, fetched in scope, through the throttle, bounded in bytes and time.
 */
import { readFileSync } from "node:fs";
import type { EntityRef, FoundIssue } from "../../core/entities.ts";
import type { DiscoveryContext, DiscoveryModule } from "../module.ts";
import { canonicalName, DnsClient } from "../net/dns-client.ts";
import { type FetchLimits, fetchLimits, HttpClient, type HttpExchange } from "../net/http-fetch.ts";

export interface TakeoverService {
  name: string;
  cname: string[];
  cname_patterns?: string[];
  addresses?: string[];
  unclaimed: { status?: number; body?: string[]; nxdomain?: boolean };
}

interface CompiledService extends TakeoverService {
  patterns: RegExp[];
}

export const TAKEOVER_SERVICES_FILE = new URL("../probes/takeover-services.json", import.meta.url);

/** Checks and compiles a services file; throws with a sentence naming the first bad entry. */
export function compileServices(data: unknown): CompiledService[] {
  const services = (data as { services?: unknown })?.services;
  if (!Array.isArray(services)) throw new Error('A takeover services file needs a "services" list.');
  return services.map((service: TakeoverService, index) => {
    const where = `takeover service ${index + 1} (${JSON.stringify(service?.name)})`;
    if (typeof service?.name !== "string" || !Array.isArray(service.cname))
      throw new Error(`${where} needs a name and a cname list.`);
    const { unclaimed } = service;
    if (!unclaimed || (!unclaimed.nxdomain && !(unclaimed.body?.length || unclaimed.status)))
      throw new Error(`${where} says nothing about how an unclaimed name answers.`);
    return {
      ...service,
      cname: service.cname.map(canonicalName),
      patterns: (service.cname_patterns ?? []).map((source) => new RegExp(source, "i")),
    };
  });
}

let shipped: CompiledService[] | undefined;
export const takeoverServices = () =>
  (shipped ??= compileServices(JSON.parse(readFileSync(TAKEOVER_SERVICES_FILE, "utf8"))));

/** The service a host name belongs to (equal to or below one of its suffixes, or matching a pattern). */
export function serviceOfName(name: string, services = takeoverServices()): CompiledService | undefined {
  const host = canonicalName(name);
  return services.find(
    (service) =>
      service.cname.some((suffix) => host === suffix || host.endsWith(`.${suffix}`)) ||
      service.patterns.some((pattern) => pattern.test(host)),
  );
}

/** Does an answer show the service's page for an unclaimed name? */
export function isUnclaimedAnswer(service: TakeoverService, status: number, body: string): boolean {
  const { unclaimed } = service;
  if (!unclaimed.body?.length && unclaimed.status === undefined) return false;
  if (unclaimed.status !== undefined && unclaimed.status !== status) return false;
  if (!unclaimed.body?.length) return true;
  const text = body.toLowerCase();
  return unclaimed.body.some((words) => text.includes(words.toLowerCase()));
}

/** CNAME hops followed at most, as resolvers do. */
const MAX_CHAIN = 8;
/** Bytes of a page compared: error pages are small, and the words come early. */
const PAGE_BYTES = 64 * 1024;
/** Characters of the answer kept as proof. */
const PROOF_CHARS = 500;

const TAKEOVER: Omit<FoundIssue, "entity" | "details"> = {
  name: "subdomain_takeover",
  prettyName: "Subdomain takeover",
  severity: 2,
  confidence: "confirmed",
  category: "misconfiguration",
  description:
    "The name points at a shared service (its CNAME chain or address), and the service answers for it as for a name nobody holds. Anyone who claims the name at the service can serve pages, scripts and cookies under this name.",
  remediation:
    "Remove the DNS record pointing at the service, or claim the name at the service again (re-create the bucket, site or app it named).",
  references: [
    { type: "description", uri: "https://developer.mozilla.org/en-US/docs/Web/Security/Subdomain_takeovers" },
    { type: "description", uri: "https://github.com/EdOverflow/can-i-take-over-xyz" },
  ],
};

async function cnameChain(dns: DnsClient, name: string): Promise<string[]> {
  const chain: string[] = [];
  let current = name;
  for (let hop = 0; hop < MAX_CHAIN; hop++) {
    const answer = await dns.cname(current);
    if (!answer.ok || answer.value.length === 0) break;
    current = canonicalName(answer.value[0]);
    if (chain.includes(current) || current === name) break;
    chain.push(current);
  }
  return chain;
}

const requestProof = (exchange: HttpExchange) => ({
  method: exchange.method,
  url: exchange.url,
  headers: exchange.requestHeaders,
});

async function fetchPage(
  name: string,
  address: string,
  ctx: DiscoveryContext,
  limits: FetchLimits,
): Promise<HttpExchange | undefined> {
  const client = new HttpClient({
    pins: { [name]: address },
    limits: { ...limits, maxBodyBytes: Math.min(limits.maxBodyBytes, PAGE_BYTES) },
    signal: ctx.signal,
    mayTouch: ctx.mayTouch,
  });
  try {
    for (const scheme of ["http", "https"]) {
      try {
        return await client.fetch(`${scheme}://${name}/`, "GET", {}, { maxBodyBytes: PAGE_BYTES });
      } catch {
        // refused or timed out: try the other scheme
      }
    }
    return undefined;
  } finally {
    await client.close();
  }
}

export function createTakeoverModule(options: { services?: TakeoverService[] } = {}): DiscoveryModule {
  const services = options.services ? compileServices({ services: options.services }) : undefined;
  return {
    name: "takeover",
    consumes: ["Domain", "DnsRecord"],
    produces: [],
    async run(entity, ctx) {
      const known = services ?? takeoverServices();
      const dns = new DnsClient(ctx);
      const name = canonicalName(entity.name);
      const self: EntityRef = { kind: entity.kind, name: entity.name };
      // The chain first: most names have none, and one CNAME query says so; their IPv4 addresses are
      // asked only for the services known by address.
      const chain = await cnameChain(dns, name);
      let service = chain.map((target) => serviceOfName(target, known)).find(Boolean);
      if (!service && chain.length === 0) {
        const v4 = await dns.a(name);
        const addresses = v4.ok ? v4.value : [];
        service = known.find((candidate) => candidate.addresses?.some((a) => addresses.includes(a)));
      }
      if (!service || ctx.signal.aborted) return;
      const proof = { name, cname_chain: chain, service: service.name };

      if (service.unclaimed.nxdomain) {
        const last = chain.at(-1);
        if (last && (await dns.addresses(last)).failure === "nxdomain")
          ctx.raise({
            ...TAKEOVER,
            entity: self,
            details: { ...proof, answer: `${last}: NXDOMAIN (the service no longer holds the name)` },
          });
        return;
      }
      const [address] = (await dns.addresses(name)).addresses;
      if (!address) return; // nothing answers for the name: the dangling CNAME check says so
      if (!ctx.mayTouch(address) || !ctx.mayTouch(name)) {
        ctx.note(`${name} points at ${service.name}, but its page was not fetched: the deny list covers it.`);
        return;
      }
      let exchange: HttpExchange | undefined;
      try {
        exchange = await ctx.throttle.run(
          address,
          () => fetchPage(name, address, ctx, fetchLimits(ctx.settings)),
          ctx.signal,
        );
      } catch {
        return; // aborted while waiting for a slot
      }
      if (!exchange) return;
      const body = exchange.body.toString("utf8");
      if (!isUnclaimedAnswer(service, exchange.status, body)) return;
      ctx.raise({
        ...TAKEOVER,
        entity: self,
        details: {
          ...proof,
          request: requestProof(exchange),
          status: exchange.status,
          answer: body.slice(0, PROOF_CHARS),
          matched: service.unclaimed,
        },
      });
    },
  };
}
