/**
 * Ground truth of the lab's web applications — one per web service and per host it answers for (its
 * address, and every name that resolves to the address), with the products, issues and third parties a
 * scanner must find there — and of the products other services' greetings name. Derived from what is
 * served, like the rest of the truth.
 */
import type { RunningHost } from "./hosts.ts";
import { siteFor } from "./services.ts";
import type {
  ApplicationTruth,
  ConnectionTruth,
  NameTruth,
  ProductTruth,
  ServiceSpec,
  WebExpectations,
} from "./types.ts";
import { isAtOrBelow, type ZoneSet } from "./zones.ts";

/** A product as a fingerprint names it; `version` as people write it (`8.5p1` → CPE version 8.5, update p1). */
export function product(
  name: string,
  cpe: { part?: "a" | "o"; vendor: string; product: string } | null,
  version = "",
  cves: string[] = [],
): ProductTruth {
  const [, base = "", update = ""] = /^([\d.]+)(p\d+|[a-z])?$/.exec(version) ?? [];
  const cpeName = cpe
    ? `cpe:2.3:${cpe.part ?? "a"}:${cpe.vendor}:${cpe.product}:${base || "*"}:${update || "*"}:*:*:*:*:*:*`
    : "";
  return { name, version, cpe: cpeName, cves };
}

const APACHE = { vendor: "apache", product: "http_server" };
const NGINX = { vendor: "f5", product: "nginx" };
const UBUNTU = { part: "o" as const, vendor: "canonical", product: "ubuntu_linux" };
/** In the shipped database: nginx 0.6.18 – 1.20.0 (the resolver off-by-one). */
const NGINX_RESOLVER = ["CVE-2021-23017"];

/**
 * The default page of services.ts (a title, the `Server:` header, nothing else): its products by Server
 * header, and whether that header discloses a version. Products a rule only implies (IIS → Windows
 * Server) are not listed: they are inferences, not something the page shows.
 */
export const DEFAULT_PAGE_PRODUCTS: Record<string, { products: ProductTruth[]; disclosesVersion: boolean }> =
  {
    nginx: { products: [product("Nginx", NGINX)], disclosesVersion: false },
    "nginx/1.18.0": { products: [product("Nginx", NGINX, "1.18.0", NGINX_RESOLVER)], disclosesVersion: true },
    "nginx/1.14.0 (Ubuntu)": {
      products: [product("Nginx", NGINX, "1.14.0", NGINX_RESOLVER), product("Ubuntu", UBUNTU)],
      disclosesVersion: true,
    },
    Apache: { products: [product("Apache HTTP Server", APACHE)], disclosesVersion: false },
    "Apache/2.4.49 (Unix)": {
      products: [
        product("Apache HTTP Server", APACHE, "2.4.49", ["CVE-2021-41773", "CVE-2021-42013"]),
        product("UNIX", { part: "o", vendor: "unix", product: "unix" }),
      ],
      disclosesVersion: true,
    },
    "Apache/2.4.41 (Ubuntu)": {
      products: [product("Apache HTTP Server", APACHE, "2.4.41"), product("Ubuntu", UBUNTU)],
      disclosesVersion: true,
    },
    "Microsoft-IIS/10.0": {
      products: [product("IIS", { vendor: "microsoft", product: "internet_information_services" }, "10.0")],
      disclosesVersion: true,
    },
    Kestrel: { products: [product("Kestrel", null)], disclosesVersion: false },
  };

const OPENSSH = { vendor: "openbsd", product: "openssh" };

/**
 * Products of the greetings the lab's services send (services.ts defaults and the world's banners);
 * a service whose spec lists `products` says so itself.
 */
const BANNER_PRODUCTS: Array<[RegExp, ProductTruth[]]> = [
  [/^SSH-2\.0-OpenSSH_8\.2p1 /, [product("OpenSSH", OPENSSH, "8.2p1")]],
  [/^SSH-2\.0-OpenSSH_7\.4$/, [product("OpenSSH", OPENSSH, "7.4", ["CVE-2018-15473"])]],
  [/^220 \(vsFTPd 3\.0\.3\)$/, [product("vsftpd", { vendor: "vsftpd_project", product: "vsftpd" }, "3.0.3")]],
  [
    /^220 ProFTPD 1\.3\.5e /,
    [product("ProFTPD", { vendor: "proftpd", product: "proftpd" }, "1.3.5e", ["CVE-2015-3306"])],
  ],
  [/^220 \S+ ESMTP Postfix /, [product("Postfix", { vendor: "postfix", product: "postfix" })]],
  [
    /^220 \S+ ESMTP Sendmail 8\.15\.2\//,
    [product("Sendmail", { vendor: "sendmail", product: "sendmail" }, "8.15.2")],
  ],
];

/** What a non-web service's greeting must be fingerprinted as; undefined when the lab does not say. */
function serviceProductsOf(spec: ServiceSpec, banner: string | undefined): ProductTruth[] | undefined {
  if ((spec.kind === "ssh" || spec.kind === "ftp") && spec.products) return spec.products;
  if (spec.kind === "mysql") {
    const version = /^\d+\.\d+\.\d+/.exec(spec.version)?.[0] ?? "";
    return [product("MySQL", { vendor: "oracle", product: "mysql" }, version)];
  }
  // Identification asks a Redis `INFO server`, which the lab's Redis answers with its version.
  if (spec.kind === "redis") return [product("Redis", { vendor: "redis", product: "redis" }, spec.version)];
  return BANNER_PRODUCTS.find(([pattern]) => banner !== undefined && pattern.test(banner))?.[1];
}

/**
 * What the shipped template library raises on a page served without any security header (the lab's
 * default pages and most of its web applications): Content-Security-Policy, X-Frame-Options and
 * X-Content-Type-Options missing.
 */
export const MISSING_SECURITY_HEADERS = [
  "template:missing-csp",
  "template:missing-x-content-type-options",
  "template:missing-x-frame-options",
];

/** The inferred-CVE issue name Sightline gives a CVE: `inferred_cve_2021_41773`. */
export const inferredCveIssue = (cve: string) =>
  `inferred_cve_${cve.slice(4).replace("-", "_").toLowerCase()}`;

type WebSpec = Extract<ServiceSpec, { kind: "http" | "https" }>;

/** What the default site of a web service (not a virtual host) must show, when that is known. */
function defaultSite(spec: WebSpec): (WebExpectations & { title: string }) | undefined {
  if (spec.expect) return { ...spec.expect, title: spec.title };
  const page = spec.handler ? undefined : DEFAULT_PAGE_PRODUCTS[spec.server];
  if (!page) return undefined;
  const issues = [
    ...(page.disclosesVersion ? ["server_version_disclosure"] : []),
    ...(spec.kind === "https" ? ["missing_hsts_header"] : []),
    ...MISSING_SECURITY_HEADERS,
  ];
  return { products: page.products, issues, title: spec.title };
}

export interface WebTruthInput {
  hosts: RunningHost[];
  zones: ZoneSet;
  names: NameTruth[];
}

export function webTruth(input: WebTruthInput): {
  applications: ApplicationTruth[];
  serviceProducts: Array<{ service: string; products: ProductTruth[] }>;
  connections: ConnectionTruth[];
} {
  // Every forward name and the addresses it resolves to (CNAME chains followed, as a resolver would).
  const namesOf = new Map<string, string[]>();
  for (const { name } of input.names) {
    for (const answer of input.zones.lookup(name, "A").answers) {
      if (answer.type !== "A") continue;
      namesOf.set(answer.data, [...(namesOf.get(answer.data) ?? []), name]);
    }
  }
  const zoneOf = (name: string) =>
    input.zones.zones
      .filter((zone) => !zone.reverse && isAtOrBelow(name, zone.name))
      .sort((a, b) => b.name.length - a.name.length)[0]?.name ?? null;

  const applications: ApplicationTruth[] = [];
  const serviceProducts: Array<{ service: string; products: ProductTruth[] }> = [];
  for (const { spec: host, services } of input.hosts) {
    for (const { spec, banner } of services) {
      if (spec.kind !== "http" && spec.kind !== "https") {
        const products = serviceProductsOf(spec, banner);
        if (products) serviceProducts.push({ service: `${host.ip}:${spec.port}/tcp`, products });
        continue;
      }
      const scheme = spec.kind;
      for (const name of [host.ip, ...new Set(namesOf.get(host.ip) ?? [])].sort()) {
        const vhost = siteFor(spec, name);
        const site = vhost ? { ...vhost.expect, title: vhost.title } : defaultSite(spec);
        if (!site) continue;
        const issues = [...site.issues, ...site.products.flatMap((p) => p.cves.map(inferredCveIssue))];
        applications.push({
          name: `${scheme}://${name}:${spec.port}`,
          scheme,
          host: name,
          ip: host.ip,
          port: spec.port,
          zone: name === host.ip ? null : zoneOf(name),
          title: site.title,
          products: site.products,
          issues: [...new Set(issues)].sort(),
          thirdParties: site.thirdParties ?? [],
        });
      }
    }
  }
  return { applications, serviceProducts, connections: connectionsOf(applications) };
}

/** Third parties by registrable domain (the lab's zones have one label under `.test`). */
function connectionsOf(applications: ApplicationTruth[]): ConnectionTruth[] {
  const byDomain = new Map<string, ConnectionTruth>();
  for (const application of applications) {
    for (const { host, kind } of application.thirdParties) {
      const name = host.split(".").slice(-2).join(".");
      const entry = byDomain.get(name) ?? { name, kinds: [], hosts: [], usedBy: [] };
      if (!entry.kinds.includes(kind)) entry.kinds.push(kind);
      if (!entry.hosts.includes(host)) entry.hosts.push(host);
      if (!entry.usedBy.includes(application.name)) entry.usedBy.push(application.name);
      byDomain.set(name, entry);
    }
  }
  return [...byDomain.values()]
    .map((entry) => ({
      ...entry,
      kinds: entry.kinds.sort(),
      hosts: entry.hosts.sort(),
      usedBy: entry.usedBy.sort(),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}
