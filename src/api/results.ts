/**
 * Collection results: hosts, domains, netblocks, recent entities, applications, issues, products,
 * vulnerabilities and connections of the latest finished run. Before
 * any run has finished they are empty (`{}` for hosts, `[]` otherwise). Lists answer everything by
 * default; `limit`/`offset` page them, with X-Total-Count and a Link header to the next page, so the
 * body keeps the spec's shape.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { type TSchema, Type } from "typebox";
import { ApplicationItem, applicationsView } from "../results/applications.ts";
import { ConnectionItem, connectionsView } from "../results/connections.ts";
import { domainsView } from "../results/domains.ts";
import { DecimalExponent, EntityType, Timestamp } from "../results/formats.ts";
import { hostsView } from "../results/hosts.ts";
import { IssueItem, issuesView } from "../results/issues.ts";
import { netblocksView } from "../results/netblocks.ts";
import { ProductItem, productsView } from "../results/products.ts";
import { recentView } from "../results/recent.ts";
import { VulnerabilityItem, vulnerabilitiesView } from "../results/vulnerabilities.ts";
import { VulnerabilityRepository } from "../vulns/repository.ts";
import { visibleCollection } from "./collections.ts";
import { COMMON_ERRORS, CollectionParams, Envelope, NOT_FOUND_ERROR } from "./schemas.ts";

const Geolocation = Type.Object(
  {
    continent: Type.String(),
    country: Type.String(),
    country_code: Type.String(),
    continent_code: Type.String(),
  },
  {
    description: "Where the address is registered; all empty for loopback, private and other special ranges.",
  },
);

/** The spec's Entity fields, shared by every entity-shaped result item. */
const entityFields = {
  name: Type.String(),
  type: EntityType,
  first_seen: Timestamp,
  last_seen: Timestamp,
  hidden: Type.Boolean(),
  scoped: Type.Boolean(),
  alias_group: DecimalExponent(
    "Entities that are one asset seen different ways (a name and its addresses) share it",
  ),
};

export const Entity = Type.Object(entityFields);

export const Host = Type.Object({
  resolutions: Type.Array(Type.String(), { description: "Names that resolve to the address." }),
  first_seen: Timestamp,
  last_seen: Timestamp,
  net_name: Type.String({
    description: 'Network owner, or "Loopback", "Private network", … for special ranges.',
  }),
  geolocation: Geolocation,
  ports: Type.Array(
    Type.Object({ number: DecimalExponent("Port number"), protocol: Type.String({ examples: ["tcp"] }) }),
    { description: "Open ports, in port order; may be empty." },
  ),
  os: Type.String({ description: "Operating system a service banner names; empty when unknown." }),
  scoped: Type.Boolean(),
  hidden: Type.Boolean(),
});

const recordList = (description: string) => Type.Array(Type.String(), { description });

export const DomainItem = Type.Object({
  ...entityFields,
  name_server: Type.Boolean({ description: "The name serves as a name server (NS or SOA) of a zone." }),
  resolves: Type.Boolean({ description: "The name exists in DNS." }),
  addresses: Type.Array(Type.String(), { description: "IPv4 and IPv6 addresses the name resolves to." }),
  records: Type.Object(
    {
      a: recordList("IPv4 addresses"),
      aaaa: recordList("IPv6 addresses"),
      cname: recordList("Alias target"),
      mx: recordList('"<preference> <exchange>"'),
      ns: recordList("Name servers"),
      txt: recordList("TXT strings, chunks joined"),
      soa: recordList('"<primary> <hostmaster> <serial>"'),
      caa: recordList('"<flags> <tag> \\"<value>\\""'),
      srv: recordList('"<priority> <weight> <port> <target>"'),
    },
    { description: "The name's own records, as seen by the latest run." },
  ),
  spf: Type.String({ description: "The SPF policy (v=spf1 …) of a domain; empty when none." }),
  dmarc: Type.String({ description: "The DMARC policy (v=DMARC1 …) of a domain; empty when none." }),
  wildcard: Type.Boolean({ description: "The zone answers every name (*.<domain>)." }),
  wildcard_addresses: Type.Array(Type.String()),
  zone_transfer: Type.Boolean({ description: "A name server of the zone allowed an anonymous AXFR." }),
  certificates: Type.Array(Type.String(), { description: "SslCertificate entities naming it." }),
});

export const NetBlockItem = Type.Object({
  ...entityFields,
  asn: Type.String({ description: '"AS<number>" announcing the block; empty for special ranges.' }),
  organization: Type.String(),
  net_name: Type.String(),
  geolocation: Geolocation,
  hosts: Type.Array(Type.String(), { description: "Addresses of the collection in the block." }),
});

/** The network data's licence (CC BY 4.0) asks for this attribution wherever its results are shown. */
const NETWORK_DATA =
  " Network owner, ASN and country come from the offline ip-location-db data: RouteViews (routeviews.org), the five RIRs via the NRO (nro.net) and IP to ASN Lite by DB-IP (https://db-ip.com), CC BY 4.0.";

const Page = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 10000, description: "Page size; default: everything." }),
  ),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
});

type PageQuery = { limit?: number; offset?: number };

/** Sets X-Total-Count and, when there is more, a Link to the next page. */
function pageHeaders(request: FastifyRequest, reply: FastifyReply, page: PageQuery, total: number) {
  reply.header("X-Total-Count", String(total));
  if (page.limit === undefined) return;
  const next = (page.offset ?? 0) + page.limit;
  if (next >= total) return;
  const url = new URL(request.url, "http://placeholder");
  url.searchParams.set("limit", String(page.limit));
  url.searchParams.set("offset", String(next));
  reply.header("Link", `<${url.pathname}${url.search}>; rel="next"`);
}

export const resultRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { collections, entities } = app.services;
  const vulnerabilityDatabase = new VulnerabilityRepository(app.services.store.db);
  const tags = ["Results"];

  /**
   * A result route. With `count`, `read` answers one page; without, `read` answers the whole list
   * (a result computed over many entities, such as products) and the route pages it.
   */
  const route = <T extends TSchema>(
    path: string,
    summary: string,
    description: string,
    result: T,
    count: ((collectionId: number) => Promise<number>) | undefined,
    read: (collectionId: number, page: PageQuery) => Promise<unknown>,
  ) =>
    app.get(
      `/:collection_name/${path}`,
      {
        schema: {
          tags,
          summary,
          description,
          params: CollectionParams,
          querystring: Page,
          response: { 200: Envelope(result), ...COMMON_ERRORS, ...NOT_FOUND_ERROR },
        },
      },
      async (request, reply) => {
        const collection = await visibleCollection(
          collections,
          request.principal,
          request.params.collection_name,
        );
        const page = request.query;
        if (!count) {
          const all = (await read(collection.id, {})) as unknown[];
          pageHeaders(request, reply, page, all.length);
          const offset = page.offset ?? 0;
          const result = all.slice(offset, page.limit === undefined ? undefined : offset + page.limit);
          return { success: true as const, message: "success" as const, result: result as never };
        }
        pageHeaders(request, reply, page, await count(collection.id));
        return {
          success: true as const,
          message: "success" as const,
          result: (await read(collection.id, page)) as never,
        };
      },
    );

  route(
    "hosts",
    "Hosts: every IP address with its names, open ports, network and location",
    `An object keyed by IP address. \`{}\` before any run has finished. Paging counts addresses.${NETWORK_DATA}`,
    Type.Record(Type.String(), Host),
    (id) => entities.countCurrent(id, { kinds: ["IpAddress"] }),
    (id, page) => hostsView(entities, id, page),
  );
  route(
    "domains",
    "Domains: every DNS name with its records, mail policy, wildcard and zone-transfer state",
    "One item per name (a name that is also a name server is one item). `[]` before any run has finished.",
    Type.Array(DomainItem),
    (id) => entities.countCurrent(id, { kinds: ["Domain", "Nameserver", "DnsRecord"], distinctNames: true }),
    (id, page) => domainsView(entities, id, page),
  );
  route(
    "netblocks",
    "Netblocks: the network blocks holding the collection's addresses, with owner and location",
    `Blocks come from the offline IP database (announced prefix or registered range); special ranges (loopback, private, …) are their RFC 6890 block. \`[]\` before any run has finished.${NETWORK_DATA}`,
    Type.Array(NetBlockItem),
    (id) => entities.countCurrent(id, { kinds: ["NetBlock"] }),
    (id, page) => netblocksView(entities, id, page),
  );
  route(
    "recent",
    "Recent entities: what the latest finished run saw for the first time",
    "Every kind of entity first seen by the latest finished run. `[]` before any run has finished.",
    Type.Array(Entity),
    (id) => entities.countCurrent(id, { firstSeenInRun: true }),
    (id, page) => recentView(entities, id, page),
  );
  route(
    "applications",
    "Applications: every web application, by scheme, host and port, with what its front page shows",
    `One item per application: each web port of each address and of each name resolving to it (name-based virtual hosts answer differently). \`details\` holds what the probe saw (status, title, headers, cookies, redirects, scripts, forms, content checks, fingerprints with CPEs and CVEs) and where the application sits on the network. \`[]\` before any run has finished.${NETWORK_DATA}`,
    Type.Array(ApplicationItem),
    undefined,
    (id) => applicationsView(entities, id),
  );
  route(
    "issues",
    "Issues: every weakness found, with its proof",
    "Web checks (directory listing, exposed .git, missing HSTS, insecure cookies, login forms over HTTP, version disclosure), CVEs inferred from product versions (`inferred_cve_YYYY_NNNNN`, confidence `potential`), DNS and mail (dangling CNAME, open zone transfer, missing SPF, DMARC or CAA) and TLS (expired or self-signed certificates, deprecated protocols). Most severe first. `[]` before any run has finished.",
    Type.Array(IssueItem),
    (id) => entities.countCurrentFindings(id),
    (id, page) => issuesView(entities, id, page),
  );
  route(
    "products",
    "Products: every product seen on the collection's applications and services, with how many run it",
    "One item per product and version (a product seen without a version is its own item); `count` is an integer written as a string. Most common first. `[]` before any run has finished.",
    Type.Array(ProductItem),
    undefined,
    (id) => productsView(entities, id),
  );
  route(
    "vulnerabilities",
    "Vulnerabilities: the CVEs of the product versions found, with the applications and services they affect",
    "From the local vulnerability database (`sightline vulndb import` loads NVD and CISA KEV; a small seed ships). `exploits` lists the CISA KEV entry of a CVE known to be exploited. Highest score first. `[]` before any run has finished.",
    Type.Array(VulnerabilityItem),
    undefined,
    (id) => vulnerabilitiesView(entities, id, vulnerabilityDatabase),
  );
  route(
    "connections",
    "Connections: the third parties the collection's surface depends on",
    "One item per third party (by registrable domain) outside the collection's seeds: hosts its applications load scripts or other resources from, or redirect to, and the mail (MX) and DNS (NS) providers of its names. Most used first. `[]` before any run has finished.",
    Type.Array(ConnectionItem),
    undefined,
    (id) => connectionsView(entities, collections, id),
  );
};
