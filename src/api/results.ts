/**
 * Collection results: hosts, domains, netblocks and recent entities of the latest finished run. Before
 * any run has finished they are empty (`{}` for hosts, `[]` otherwise). Lists answer everything by
 * default; `limit`/`offset` page them, with X-Total-Count and a Link header to the next page, so the
 * body keeps the spec's shape.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { type TSchema, Type } from "typebox";
import { domainsView } from "../results/domains.ts";
import { hostsView } from "../results/hosts.ts";
import { netblocksView } from "../results/netblocks.ts";
import { recentView } from "../results/recent.ts";
import { visibleCollection } from "./collections.ts";
import { COMMON_ERRORS, CollectionParams, Envelope, NOT_FOUND_ERROR } from "./schemas.ts";

const Timestamp = Type.String({ description: "YYYY-MM-DD HH:MM:SS UTC" });
const DecimalExponent = (description: string) =>
  Type.String({ description: `${description}, as a decimal-exponent number (e.g. "0.443e3")` });
const EntityType = Type.String({ description: "Service::Entity::<Kind>" });

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
  const tags = ["Results"];

  const route = <T extends TSchema>(
    path: string,
    summary: string,
    description: string,
    result: T,
    count: (collectionId: number) => Promise<number>,
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
};
