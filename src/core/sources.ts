/**
 * The passive sources Sightline can ask for names: outside services (certificate transparency logs,
 * passive DNS, web archives, internet-scan indexes), not targets. One catalogue entry per source, from
 * which the settings (`SIGHTLINE_SOURCE_<ID>_URL`, `SIGHTLINE_SOURCE_<ID>_KEY`), docs/sources.md and
 * `sightline sources` are made; each source's requests and parsing live in src/discovery/sources/<id>.ts.
 */

export const SOURCE_IDS = [
  "crtsh",
  "certspotter",
  "hackertarget",
  "anubis",
  "wayback",
  "commoncrawl",
  "urlscan",
  "rapiddns",
  "threatminer",
  "thc",
  "subdomaincenter",
  "shodanidb",
  "securitytrails",
  "virustotal",
  "censys",
  "shodan",
  "chaos",
  "github",
  "otx",
  "binaryedge",
  "fullhunt",
  "netlas",
  "leakix",
] as const;

export type SourceId = (typeof SOURCE_IDS)[number];

/** The sources that answer only with a key (each has a SIGHTLINE_SOURCE_<ID>_KEY setting). */
export const KEYED_SOURCE_IDS = [
  "securitytrails",
  "virustotal",
  "censys",
  "shodan",
  "chaos",
  "github",
  "otx",
  "binaryedge",
  "fullhunt",
  "netlas",
  "leakix",
] as const satisfies readonly SourceId[];

export type KeyedSourceId = (typeof KEYED_SOURCE_IDS)[number];

export interface SourceInfo {
  id: SourceId;
  title: string;
  /** A key must be configured before it runs. */
  keyed: boolean;
  /** The base URL its requests go to (SIGHTLINE_SOURCE_<ID>_URL overrides it: a mirror, a proxy, a test). */
  url: string;
  /** Its published limit, the default pace of its requests. */
  requestsPerMinute: number;
  /** The published limit in words, for docs/sources.md. */
  rateLimit: string;
  returns: string;
  documentation: string;
}

const entries: SourceInfo[] = [
  {
    id: "crtsh",
    title: "crt.sh",
    keyed: false,
    url: "https://crt.sh",
    requestsPerMinute: 5,
    rateLimit: "none published; asked to be gentle (5/min here)",
    returns: "names of certificates in the CT logs (common name and SANs)",
    documentation: "https://github.com/crtsh/certwatch_db",
  },
  {
    id: "certspotter",
    title: "Cert Spotter",
    keyed: false,
    url: "https://api.certspotter.com",
    requestsPerMinute: 10,
    rateLimit: "10 requests/minute and 100 issuances queries/hour without a key",
    returns: "DNS names of issuances found in CT logs",
    documentation: "https://sslmate.com/help/reference/ct_search_api_v1",
  },
  {
    id: "hackertarget",
    title: "HackerTarget host search",
    keyed: false,
    url: "https://api.hackertarget.com",
    requestsPerMinute: 2,
    rateLimit: "50 requests/day without a key, 2/second",
    returns: "host names and their addresses (CSV)",
    documentation: "https://hackertarget.com/find-dns-host-records/",
  },
  {
    id: "anubis",
    title: "Anubis (jldc.me)",
    keyed: false,
    url: "https://jldc.me",
    requestsPerMinute: 30,
    rateLimit: "none published (30/min here)",
    returns: "subdomain names",
    documentation: "https://github.com/jonluca/Anubis-DB",
  },
  {
    id: "wayback",
    title: "Wayback Machine CDX",
    keyed: false,
    url: "https://web.archive.org",
    requestsPerMinute: 15,
    rateLimit: "about 15 CDX requests/minute before 429s",
    returns: "archived URLs, whose host names are kept",
    documentation: "https://github.com/internetarchive/wayback/tree/master/wayback-cdx-server",
  },
  {
    id: "commoncrawl",
    title: "Common Crawl index",
    keyed: false,
    url: "https://index.commoncrawl.org",
    requestsPerMinute: 30,
    rateLimit: "none published; one request at a time asked (30/min here)",
    returns: "crawled URLs of the latest crawl, whose host names are kept",
    documentation: "https://index.commoncrawl.org/",
  },
  {
    id: "urlscan",
    title: "urlscan.io search",
    keyed: false,
    url: "https://urlscan.io",
    requestsPerMinute: 60,
    rateLimit: "search: 60/minute, 1,000/hour without a key",
    returns: "domains of scanned pages",
    documentation: "https://urlscan.io/docs/api/",
  },
  {
    id: "rapiddns",
    title: "RapidDNS",
    keyed: false,
    url: "https://rapiddns.io",
    requestsPerMinute: 10,
    rateLimit: "none published (10/min here)",
    returns: "subdomain names (an HTML table)",
    documentation: "https://rapiddns.io/subdomain",
  },
  {
    id: "threatminer",
    title: "ThreatMiner",
    keyed: false,
    url: "https://api.threatminer.org",
    requestsPerMinute: 10,
    rateLimit: "10 queries/minute",
    returns: "subdomain names",
    documentation: "https://www.threatminer.org/api.php",
  },
  {
    id: "thc",
    title: "THC subdomain API (ip.thc.org)",
    keyed: false,
    url: "https://ip.thc.org",
    requestsPerMinute: 30,
    rateLimit: "none published (30/min here)",
    returns: "subdomain names, paged",
    documentation: "https://ip.thc.org/docs/",
  },
  {
    id: "subdomaincenter",
    title: "subdomain.center",
    keyed: false,
    url: "https://api.subdomain.center",
    requestsPerMinute: 3,
    rateLimit: "3 requests/minute",
    returns: "subdomain names",
    documentation: "https://www.subdomain.center/",
  },
  {
    id: "shodanidb",
    title: "Shodan InternetDB",
    keyed: false,
    url: "https://internetdb.shodan.io",
    requestsPerMinute: 60,
    rateLimit: "none published for non-commercial use (60/min here)",
    returns: "per address: open ports, host names, CPEs, tags",
    documentation: "https://internetdb.shodan.io/docs",
  },
  {
    id: "securitytrails",
    title: "SecurityTrails",
    keyed: true,
    url: "https://api.securitytrails.com",
    requestsPerMinute: 60,
    rateLimit: "per plan (free: 50 queries/month)",
    returns: "subdomain labels of a domain",
    documentation: "https://docs.securitytrails.com/reference/domain-subdomains",
  },
  {
    id: "virustotal",
    title: "VirusTotal",
    keyed: true,
    url: "https://www.virustotal.com",
    requestsPerMinute: 4,
    rateLimit: "public API: 4 requests/minute, 500/day",
    returns: "subdomains of a domain, paged by cursor",
    documentation: "https://docs.virustotal.com/reference/domains-relationships",
  },
  {
    id: "censys",
    title: "Censys certificates",
    keyed: true,
    url: "https://search.censys.io",
    requestsPerMinute: 24,
    rateLimit: "0.4 actions/second (free)",
    returns: "names of certificates matching the domain, paged by cursor",
    documentation: "https://search.censys.io/api",
  },
  {
    id: "shodan",
    title: "Shodan DNS",
    keyed: true,
    url: "https://api.shodan.io",
    requestsPerMinute: 60,
    rateLimit: "1 request/second",
    returns: "subdomain labels of a domain, paged",
    documentation: "https://developer.shodan.io/api",
  },
  {
    id: "chaos",
    title: "ProjectDiscovery Chaos",
    keyed: true,
    url: "https://dns.projectdiscovery.io",
    requestsPerMinute: 60,
    rateLimit: "none published (60/min here)",
    returns: "subdomain labels of a domain",
    documentation: "https://chaos.projectdiscovery.io/",
  },
  {
    id: "github",
    title: "GitHub code search",
    keyed: true,
    url: "https://api.github.com",
    requestsPerMinute: 10,
    rateLimit: "code search: 10 requests/minute",
    returns: "names found in matching code fragments",
    documentation: "https://docs.github.com/en/rest/search/search#search-code",
  },
  {
    id: "otx",
    title: "AlienVault OTX passive DNS",
    keyed: true,
    url: "https://otx.alienvault.com",
    requestsPerMinute: 60,
    rateLimit: "10,000 requests/hour",
    returns: "passive DNS host names of a domain",
    documentation: "https://otx.alienvault.com/assets/static/external_api.html",
  },
  {
    id: "binaryedge",
    title: "BinaryEdge",
    keyed: true,
    url: "https://api.binaryedge.io",
    requestsPerMinute: 60,
    rateLimit: "per plan (free: 250 queries/month)",
    returns: "subdomain names, paged",
    documentation: "https://docs.binaryedge.io/api-v2/",
  },
  {
    id: "fullhunt",
    title: "FullHunt",
    keyed: true,
    url: "https://fullhunt.io",
    requestsPerMinute: 60,
    rateLimit: "per plan (free: 100 credits/month)",
    returns: "host names of a domain",
    documentation: "https://api-docs.fullhunt.io/",
  },
  {
    id: "netlas",
    title: "Netlas",
    keyed: true,
    url: "https://app.netlas.io",
    requestsPerMinute: 60,
    rateLimit: "1 request/second (free: 50/day)",
    returns: "domain names, paged by offset",
    documentation: "https://docs.netlas.io/",
  },
  {
    id: "leakix",
    title: "LeakIX",
    keyed: true,
    url: "https://leakix.net",
    requestsPerMinute: 60,
    rateLimit: "per plan",
    returns: "subdomain names with when they were last seen",
    documentation: "https://docs.leakix.net/docs/api/",
  },
];

export const SOURCES: ReadonlyMap<SourceId, SourceInfo> = new Map(entries.map((entry) => [entry.id, entry]));

export const sourceInfo = (id: SourceId): SourceInfo => SOURCES.get(id)!;

/** `crtsh` → `Crtsh`: the part of a setting's file key a source is named by. */
export type SourceKeyPart<Id extends string> = Capitalize<Id>;
export const sourceKeyPart = (id: string) => `${id[0]!.toUpperCase()}${id.slice(1)}`;

/** The settings' file keys of a source. */
export const sourceUrlKey = <Id extends SourceId>(id: Id) =>
  `source${sourceKeyPart(id)}Url` as `source${SourceKeyPart<Id>}Url`;
export const sourceKeyKey = <Id extends KeyedSourceId>(id: Id) =>
  `source${sourceKeyPart(id)}Key` as `source${SourceKeyPart<Id>}Key`;

/**
 * How one source fared in one run (for one seed or address it was asked about, or summed over them).
 * `queried: false` comes with `reason` (switched off, no key, nothing to ask); `failure` names why an
 * asked source gave nothing: `http <status>`, `time-out`, `too large`, `parse error: …`, `network: …`.
 */
export interface SourceStatus {
  source: string;
  queried: boolean;
  reason?: string;
  /** Requests answered with a usable body. */
  answered: number;
  /** Requests made, retries included. */
  requests: number;
  /** Names it returned, after normalisation (duplicates dropped). */
  names: number;
  /** Of those, in the collection's scope. */
  inScope: number;
  /** In-scope names that resolved and the run had not seen from another module or source before. */
  new: number;
  /** In-scope names that no longer resolve (kept as historical names). */
  historical: number;
  /** Names refused: too long, undecodable punycode, not a host name. */
  refused: number;
  /** 429 answers it gave (each waited out, up to the retry bound). */
  rateLimited: number;
  failure?: string;
}

export const emptyStatus = (source: string): SourceStatus => ({
  source,
  queried: true,
  answered: 0,
  requests: 0,
  names: 0,
  inScope: 0,
  new: 0,
  historical: 0,
  refused: 0,
  rateLimited: 0,
});

/** Whether an asked source gave nothing usable: every request failed. */
export const sourceFailed = (status: SourceStatus) =>
  status.queried && status.failure !== undefined && status.answered === 0;

/**
 * Which sources a run asks: those SIGHTLINE_SOURCES names (`none`: none), by default every keyless one
 * and every keyed one whose key is set; with why each other source is not asked.
 */
export function chooseSources(
  selection: readonly string[],
  keySet: (id: KeyedSourceId) => boolean,
): { chosen: SourceId[]; skipped: Record<string, string> } {
  const chosen: SourceId[] = [];
  const skipped: Record<string, string> = {};
  const named = new Set(selection);
  const explicit = selection.length > 0;
  for (const id of SOURCE_IDS) {
    const keyed = (KEYED_SOURCE_IDS as readonly string[]).includes(id);
    const hasKey = keyed && keySet(id as KeyedSourceId);
    if (explicit && !named.has(id)) skipped[id] = "not chosen (SIGHTLINE_SOURCES)";
    else if (keyed && !hasKey) skipped[id] = `no key set (SIGHTLINE_SOURCE_${id.toUpperCase()}_KEY)`;
    else chosen.push(id);
  }
  return { chosen, skipped };
}

/** A source's statuses over the entities it was asked about, as one; failures are counted and the first kept. */
export function sumStatuses(
  source: string,
  statuses: readonly SourceStatus[],
): SourceStatus & { targets: number; failed: number } {
  const sum = { ...emptyStatus(source), targets: statuses.length, failed: 0 };
  for (const status of statuses) {
    sum.answered += status.answered;
    sum.requests += status.requests;
    sum.names += status.names;
    sum.inScope += status.inScope;
    sum.new += status.new;
    sum.historical += status.historical;
    sum.refused += status.refused;
    sum.rateLimited += status.rateLimited;
    if (status.failure !== undefined) {
      sum.failed++;
      sum.failure ??= status.failure;
    }
  }
  if (statuses.length > 0 && statuses.every((status) => !status.queried)) {
    sum.queried = false;
    sum.reason = statuses[0]!.reason;
  }
  return sum;
}

/** One line about a source's status, for a run's notes and the CLI. */
export function describeSourceStatus(status: SourceStatus): string {
  if (!status.queried) return `${status.source}: not asked (${status.reason ?? "no reason recorded"})`;
  const limited = status.rateLimited > 0 ? `, rate-limited ${status.rateLimited}×` : "";
  if (sourceFailed(status)) return `${status.source}: FAILED (${status.failure})${limited}`;
  const partly = status.failure ? `, partly failed (${status.failure})` : "";
  return `${status.source}: answered ${status.answered} of ${status.requests} requests, ${status.names} names, ${status.inScope} in scope, ${status.new} new, ${status.historical} no longer resolve${limited}${partly}`;
}
