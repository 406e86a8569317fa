/**
 * Collection results, streamed from the store (src/results/query.ts, src/results/stream.ts): read as of
 * the latest finished run, or any finished run with `run_id`. Before any run has finished they are empty
 * (`{}` for hosts, `[]` otherwise). Lists answer everything by default; `limit`/`offset` page them, with
 * X-Total-Count and a Link header to the next page, so the body keeps the spec's shape. `scoped`,
 * `hidden`, `q` and per-list filters narrow them; `format=csv|ndjson` exports the same rows. Unknown or
 * malformed query parameters are a 400 naming each.
 */

import type { OutgoingHttpHeaders } from "node:http";
import { join } from "node:path";
import { pipeline, type Transform } from "node:stream";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { type TObject, type TProperties, Type } from "typebox";
import type { RunSettings } from "../core/run-settings.ts";
import { SEVERITIES } from "../core/severities.ts";
import { APPLICATIONS, ApplicationItem, applicationItems } from "../results/applications.ts";
import { type CachedHeaders, type CacheHit, etagOf, ResultCache } from "../results/cache.ts";
import { entityFields, Geolocation } from "../results/common.ts";
import { ConnectionItem, connectionsOf } from "../results/connections.ts";
import { diffBody, diffSchema } from "../results/diff.ts";
import { domainItems } from "../results/domains.ts";
import { DecimalExponent, EntityType, Timestamp } from "../results/formats.ts";
import { Host, hostEntries } from "../results/hosts.ts";
import { IssueItem, issueGroupItems, issueItems } from "../results/issues.ts";
import { NETBLOCK_KINDS, netblockItem } from "../results/netblocks.ts";
import { Overview, OverviewHistory, overview, overviewHistory } from "../results/overview.ts";
import { ProductItem } from "../results/products.ts";
import { describeRunSources, sourcesHeadline } from "../results/runs.ts";
import { SERVICE_KINDS, ServiceFields, serviceItem } from "../results/services.ts";
import {
  bodyStream,
  CONTENT_TYPES,
  type Encoding,
  encodeResult,
  FORMATS,
  type Format,
  negotiateEncoding,
  type ResultBody,
  wholeBody,
} from "../results/stream.ts";
import { VulnerabilityItem, vulnerabilityItem } from "../results/vulnerabilities.ts";
import type { CollectionRow } from "../store/collections.ts";
import { RunConnectionsRepository } from "../store/connections.ts";
import {
  type EntityFilters,
  type FindingFilters,
  GROUP_ENTITIES,
  type Page,
  ResultQueries,
  type ResultRun,
} from "../store/result-queries.ts";
import { VulnerabilityRepository } from "../store/vulns.ts";
import { visibleCollection } from "./collections.ts";
import { patternMeaning } from "./errors.ts";
import {
  cachedAnswerHeaders,
  matchesEtag,
  nextPageLink,
  representationHeaders,
  resultCacheKey,
  writeCachedAnswer,
} from "./list-answers.ts";
import { REQUEST_ID_HEADER } from "./logging.ts";
import {
  COMMON_ERRORS,
  CollectionParams,
  Envelope,
  NOT_FOUND_ERROR,
  PageOffset,
  RecordId,
} from "./schemas.ts";

/** The spec's Entity fields, shared by every entity-shaped result item. */
const entityFieldSchemas = {
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

export const Entity = Type.Object(entityFieldSchemas);

export const ServiceItem = Type.Object({ ...entityFieldSchemas, ...ServiceFields });

const recordList = (description: string) => Type.Array(Type.String(), { description });

export const DomainItem = Type.Object({
  ...entityFieldSchemas,
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
    { description: "The name's own records, as seen by the run." },
  ),
  spf: Type.String({ description: "The SPF policy (v=spf1 …) of a domain; empty when none." }),
  dmarc: Type.String({ description: "The DMARC policy (v=DMARC1 …) of a domain; empty when none." }),
  wildcard: Type.Boolean({ description: "The zone answers every name (*.<domain>)." }),
  wildcard_addresses: Type.Array(Type.String()),
  zone_transfer: Type.Boolean({ description: "A name server of the zone allowed an anonymous AXFR." }),
  certificates: Type.Array(Type.String(), { description: "SslCertificate entities naming it." }),
});

export const NetBlockItem = Type.Object({
  ...entityFieldSchemas,
  asn: Type.String({ description: '"AS<number>" announcing the block; empty for special ranges.' }),
  organization: Type.String(),
  net_name: Type.String(),
  geolocation: Geolocation,
  hosts: Type.Array(Type.String(), { description: "Addresses of the collection in the block." }),
});

/** The network data's licence (CC BY 4.0) asks for this attribution wherever its results are shown. */
const NETWORK_DATA =
  " Network owner, ASN and country come from the offline ip-location-db data: RouteViews (routeviews.org), the five RIRs via the NRO (nro.net) and IP to ASN Lite by DB-IP (https://db-ip.com), CC BY 4.0.";

// --- query parameters ---------------------------------------------------------------------------------

/** Parameters of every result list. */
const LIST_PARAMETERS = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 10000, description: "Page size; default: everything." }),
  ),
  offset: Type.Optional(PageOffset()),
  run_id: Type.Optional(
    RecordId(
      "Read the results as of this finished run of the collection (default: the latest finished run).",
    ),
  ),
  format: Type.Optional(
    Type.String({
      enum: [...FORMATS],
      description:
        "json (default, the envelope); csv (a header row, then one row per item, nested values as JSON text); ndjson (one JSON object per line). csv and ndjson are downloads (Content-Disposition).",
    }),
  ),
  scoped: Type.Optional(Type.Boolean({ description: "Only items in scope (true) or out of scope (false)." })),
  hidden: Type.Optional(Type.Boolean({ description: "Only hidden (true) or visible (false) items." })),
  q: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: "Case-insensitive substring of the name." }),
  ),
};

/** Filters some lists have. */
const FILTER_PARAMETERS = {
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: "Only those on this port." })),
  product: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'Only those running this product, by name ("nginx") or with its version ("nginx 1.25.3").',
    }),
  ),
  severity: Type.Optional(
    Type.String({
      pattern: patternMeaning(
        "^([1-5]|critical|high|medium|low|informational)(,([1-5]|critical|high|medium|low|informational))*$",
        "must be severities 1–5 or their words (critical, high, medium, low, informational), comma-separated, e.g. critical,high",
      ),
      description:
        "Only these severities, comma-separated, as numbers or words: 1 critical, 2 high, 3 medium, 4 low, 5 informational; e.g. critical,high or 1,2.",
    }),
  ),
  group: Type.Optional(
    Type.String({
      enum: ["finding"],
      description: `finding: one item per issue name and service instead of one per entity — the same finding seen through several names of one service (one nginx behind a dozen host names) is one item, in the Issue shape of its first entity in the list's order, with the most severe severity, the earliest first_seen, the latest last_seen, scoped when any of them is, and \`details.entities\` (the first ${GROUP_ENTITIES} entities, \`{entity_type, entity_name}\`) and \`details.entity_count\` (all of them). Issues on no service (names, certificates, addresses) stay one item each, with their one entity listed. Paging, \`X-Total-Count\` and the filters count and narrow the groups' findings.`,
    }),
  ),
};
type FilterName = keyof typeof FILTER_PARAMETERS;

/** A severity as the query names it, "1" or "critical", as its number. */
const severityNumber = (text: string) =>
  /^\d$/.test(text) ? Number(text) : SEVERITIES.indexOf(text as (typeof SEVERITIES)[number]) + 1;

interface ResultQuery extends Page {
  run_id?: number;
  format?: Format;
  scoped?: boolean;
  hidden?: boolean;
  q?: string;
  port?: number;
  product?: string;
  severity?: string;
  group?: "finding";
}

const querySchema = (filters: FilterName[], descriptions: Partial<Record<string, string>> = {}) => {
  const properties: TProperties = { ...LIST_PARAMETERS };
  for (const name of filters) properties[name] = FILTER_PARAMETERS[name];
  for (const [name, description] of Object.entries(descriptions))
    properties[name] = Type.Optional({ ...properties[name], description });
  return Type.Object(properties, { additionalProperties: false });
};

/** Sets X-Total-Count and, when there is more, a Link to the next page. */
function pageHeaders(request: FastifyRequest, reply: FastifyReply, page: Page, total: number) {
  reply.header("X-Total-Count", String(total));
  const link = nextPageLink(request.url, page, total);
  if (link) reply.header("Link", link);
}

/**
 * Characters of a body gathered before anything is sent: an answer this small (a page, an empty list)
 * goes out as one buffer, a larger one as a stream.
 */
const WHOLE_BODY_CHARS = 64 * 1024;

/** Writes a result body, compressed when the client accepts it; `keep` sees the bytes sent. */
export async function sendBody(
  request: FastifyRequest,
  reply: FastifyReply,
  chunks: AsyncIterable<string>,
  format: Format,
  options: { filename?: string; encoding?: Encoding; keep?: (headers: CachedHeaders) => Transform } = {},
) {
  // The first chunks are read before anything is sent: a failing query still answers the error envelope.
  const iterator = chunks[Symbol.asyncIterator]();
  const head: string[] = [];
  let headChars = 0;
  let whole = false;
  while (headChars <= WHOLE_BODY_CHARS) {
    const next = await iterator.next();
    if (next.done) {
      whole = true;
      break;
    }
    head.push(next.value);
    headChars += next.value.length;
  }
  const encoding = options.encoding ?? negotiateEncoding(request.headers["accept-encoding"]);
  const headers: CachedHeaders = {
    contentType: CONTENT_TYPES[format],
    contentDisposition: options.filename && `attachment; filename="${options.filename}"`,
    contentEncoding: encoding === "identity" ? undefined : encoding,
    total: Number(reply.getHeader("X-Total-Count") ?? 0),
  };
  reply.headers(representationHeaders(headers));
  if (whole) {
    const bytes = wholeBody(head.join(""), encoding);
    if (!options.keep) return reply.send(bytes);
    // Through the keeper, as a stream goes: the response ends once the cache holds the answer (a file of
    // its folder written and closed, not still being written while the server closes).
    const keeper = options.keep(headers);
    keeper.end(bytes);
    return reply.header("Content-Length", bytes.length).send(keeper);
  }
  const rest = async function* () {
    yield* head;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  };
  const body = bodyStream(rest(), encoding);
  if (!options.keep) return reply.send(body);
  // pipeline: an aborted response destroys the body stream, and a failing body the keeper (nothing kept).
  return reply.send(pipeline(body, options.keep(headers), () => {}));
}

/** A cached answer: 304 when the client has it, else its bytes, with the headers it was first sent with. */
function sendCached(request: FastifyRequest, reply: FastifyReply, page: Page, hit: CacheHit) {
  const { entry } = hit;
  const notModified = matchesEtag(request.headers["if-none-match"], entry.etag);
  // Written to the raw response (a file in reused read buffers: a stream of fresh ones left the size of
  // the body in garbage, and the peak RSS grew with the collection). A hijacked reply still runs onResponse (metrics, the completion log) but not onSend,
  // which sets the request id.
  reply.hijack();
  writeCachedAnswer(reply.raw, hit, notModified, {
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    ...cachedAnswerHeaders(entry, nextPageLink(request.url, page, entry.headers.total), notModified),
    [REQUEST_ID_HEADER]: request.id,
  });
}

/** The 200 response of a list: the envelope, or the same rows as CSV or NDJSON. */
const listResponse = (result: TObject | ReturnType<typeof Type.Array> | ReturnType<typeof Type.Record>) => ({
  description: "The envelope around the result; with format=csv or ndjson, the rows as a download.",
  content: {
    "application/json": { schema: Envelope(result) },
    "text/csv": { schema: Type.String({ description: "A header row, then one row per item." }) },
    "application/x-ndjson": { schema: Type.String({ description: "One JSON object per line." }) },
  },
});

interface ListContext {
  collection: CollectionRow;
  run: ResultRun | undefined;
  query: ResultQuery;
  page: Page;
  entityFilters: EntityFilters;
  findingFilters: FindingFilters;
}

interface ListRoute {
  path: string;
  summary: string;
  description: string;
  item: TObject;
  /** A keyed result (hosts): the object's key, and its column name in exports. */
  key?: string;
  filters?: FilterName[];
  /** Per-route wording of a shared parameter (e.g. what `q` searches). */
  parameters?: Partial<Record<string, string>>;
  count(context: ListContext): Promise<number>;
  items(context: ListContext): AsyncIterable<unknown>;
  /** false: never cached, because the answer reads something a run does not fix (see resultCacheKey). */
  cache?: false;
  /** What else the answer reads at request time, as text for its cache key. */
  readsBesidesRun?(collection: CollectionRow, run: ResultRun): Promise<string>;
}

export const resultRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { collections } = app.services;
  const queries = new ResultQueries(app.services.store.db);
  const cves = new VulnerabilityRepository(app.services.store.db);
  const runConnections = new RunConnectionsRepository(app.services.store.db);
  const tags = ["Results"];
  const { config } = app.services;
  const cache = new ResultCache({
    directory: join(config.dataDir, "result-cache"),
    diskBytes: config.resultCacheBytes,
    memoryBytes: config.resultCacheBytes === 0 ? 0 : config.resultCacheMemoryBytes,
  });
  app.addHook("onClose", async () => cache.close());
  const cacheAnswers = app.metrics.counter(
    "sightline_result_cache_answers_total",
    "Result list answers by how the cache took part: hit, not_modified (304), miss (read from the database and kept).",
    ["outcome"],
  );
  app.metrics.gauge(
    "sightline_result_cache_bytes",
    "Bytes of result bodies the cache holds, by tier.",
    () => {
      const usage = cache.usage;
      return [
        { labels: { tier: "memory" }, value: usage.memoryBytes },
        { labels: { tier: "disk" }, value: usage.diskBytes },
      ];
    },
    ["tier"],
  );

  const list = (route: ListRoute) =>
    app.get(
      `/:collection_name/${route.path}`,
      {
        schema: {
          tags,
          summary: route.summary,
          description: route.description,
          params: CollectionParams,
          querystring: querySchema(route.filters ?? [], route.parameters),
          response: {
            200: listResponse(route.key ? Type.Record(Type.String(), route.item) : Type.Array(route.item)),
            ...COMMON_ERRORS,
            ...NOT_FOUND_ERROR,
          },
        },
      },
      async (request, reply) => {
        // The collection and its latest finished run in one read: what a cached answer costs besides the key.
        const collection = await visibleCollection(
          collections,
          request.principal,
          request.params.collection_name,
          (accountId, name) => queries.collectionWithLatestRun(accountId, name),
        );
        const query = request.query as ResultQuery;
        const run =
          query.run_id === undefined ? collection.latestRun : await queries.run(collection, query.run_id);
        const page = { limit: query.limit, offset: query.offset };
        const format = query.format ?? "json";
        const encoding = negotiateEncoding(request.headers["accept-encoding"]);
        // What the answer is a function of, and so its ETag: known before any row is read.
        const answerKey =
          run && route.cache !== false
            ? resultCacheKey(route.path, collection, run, { ...query, format }, encoding, [
                await route.readsBesidesRun?.(collection, run),
              ])
            : undefined;
        const etag = answerKey === undefined ? undefined : etagOf(answerKey);
        const key = cache.enabled ? answerKey : undefined;
        const hit = key === undefined ? undefined : cache.lookup(key);
        if (hit) {
          sendCached(request, reply, page, hit);
          cacheAnswers.inc({ outcome: reply.statusCode === 304 ? "not_modified" : "hit" });
          return reply;
        }
        if (etag !== undefined && matchesEtag(request.headers["if-none-match"], etag)) {
          // The client holds this very answer (the cache may have let it go, or be off): no row is read.
          cacheAnswers.inc({ outcome: "not_modified" });
          return reply.code(304).headers({ etag, vary: "Accept-Encoding" }).send();
        }
        if (etag !== undefined) reply.header("ETag", etag);
        if (key !== undefined) cacheAnswers.inc({ outcome: "miss" });
        const context: ListContext = {
          collection,
          run,
          query,
          page,
          entityFilters: {
            scoped: query.scoped,
            hidden: query.hidden,
            q: query.q,
            port: query.port,
            product: query.product,
          },
          findingFilters: {
            scoped: query.scoped,
            hidden: query.hidden,
            q: query.q,
            severities: query.severity?.split(",").map(severityNumber),
          },
        };
        pageHeaders(request, reply, page, await route.count(context));
        const body: ResultBody = route.key
          ? {
              shape: "object",
              item: route.item,
              key: route.key,
              items: route.items(context) as AsyncIterable<[string, unknown]>,
            }
          : { shape: "array", item: route.item, items: route.items(context) };
        const filename =
          format === "json"
            ? undefined
            : `${collection.name}-${route.path}${query.run_id ? `-run-${query.run_id}` : ""}.${format}`;
        if (key !== undefined) reply.header("X-Cache", "MISS");
        return sendBody(request, reply, encodeResult(body, format), format, {
          filename,
          encoding,
          keep: key === undefined ? undefined : (headers) => cache.filling(key, headers),
        });
      },
    );

  const entityList = (
    route: Omit<ListRoute, "count" | "items"> & {
      kinds?: string[];
      recent?: boolean;
      toItem: (entity: Parameters<typeof entityFields>[0]) => unknown;
    },
  ) =>
    list({
      ...route,
      count: ({ run, entityFilters }) =>
        queries.countEntities(run, { ...entityFilters, kinds: route.kinds, firstSeenInRun: route.recent }),
      items: async function* ({ run, entityFilters, page }) {
        for await (const entity of queries.entities(
          run,
          { ...entityFilters, kinds: route.kinds, firstSeenInRun: route.recent },
          { page },
        ))
          yield route.toItem(entity);
      },
    });

  list({
    path: "hosts",
    summary: "Hosts: every IP address with its names, open ports, network and location",
    description: `An object keyed by IP address, in address text order. \`{}\` before any run has finished. Paging counts addresses; exports have the address in column \`ip\`.${NETWORK_DATA}`,
    item: Host,
    key: "ip",
    filters: ["port"],
    parameters: {
      q: "Case-insensitive substring of the address.",
      port: "Only hosts with this port open.",
    },
    count: ({ run, entityFilters }) =>
      queries.countEntities(run, {
        ...entityFilters,
        port: undefined,
        openPort: entityFilters.port,
        kinds: ["IpAddress"],
      }),
    items: ({ run, entityFilters, page }) =>
      hostEntries(
        queries,
        run,
        { ...entityFilters, port: undefined, openPort: entityFilters.port },
        page,
      ) as AsyncIterable<[string, Host]>,
  });
  list({
    path: "domains",
    summary: "Domains: every DNS name with its records, mail policy, wildcard and zone-transfer state",
    description:
      "One item per name (a name that is also a name server is one item), in name order. Paging counts names. `[]` before any run has finished.",
    item: DomainItem,
    count: ({ run, entityFilters }) =>
      queries.countEntities(
        run,
        { ...entityFilters, kinds: ["Domain", "Nameserver", "DnsRecord"] },
        {
          distinctNames: true,
        },
      ),
    items: ({ run, entityFilters, page }) => domainItems(queries, run, entityFilters, page),
  });
  entityList({
    path: "netblocks",
    summary: "Netblocks: the network blocks holding the collection's addresses, with owner and location",
    description: `Blocks come from the offline IP database (announced prefix or registered range); special ranges (loopback, private, …) are their RFC 6890 block. \`[]\` before any run has finished.${NETWORK_DATA}`,
    item: NetBlockItem,
    kinds: NETBLOCK_KINDS,
    toItem: (entity) => netblockItem(entity as never),
  });
  entityList({
    path: "services",
    summary: "Services: every open port with the protocol, product and version it answered with",
    description:
      'One item per NetworkService (address, port and transport), in name order: what service identification named by the service\'s answers (protocol, product, version, CPE) whatever its port number, and its TLS facts. Paging counts services; `q` searches the name ("10.0.0.5:6379/tcp"). `[]` before any run has finished.',
    item: ServiceItem,
    kinds: SERVICE_KINDS,
    filters: ["port", "product"],
    toItem: (entity) => serviceItem(entity as never),
  });
  entityList({
    path: "recent",
    summary: "Recent entities: what the run saw for the first time",
    description:
      "Every kind of entity first seen by the latest finished run (or by `run_id`), in kind then name order. `[]` before any run has finished.",
    item: Entity,
    recent: true,
    toItem: entityFields,
  });
  list({
    path: "applications",
    summary: "Applications: every web application, by scheme, host and port, with what its front page shows",
    description: `One item per application, in name order: each web port of each address and of each name resolving to it (name-based virtual hosts answer differently). \`details\` holds what the probe saw (status, title, headers, cookies, redirects, scripts, forms, content checks, fingerprints with CPEs and CVEs) and where the application sits on the network. \`[]\` before any run has finished.${NETWORK_DATA}`,
    item: ApplicationItem,
    filters: ["port", "product"],
    parameters: {
      q: "Case-insensitive substring of the application's address.",
      port: "Only applications on this port.",
    },
    count: ({ run, entityFilters }) => queries.countEntities(run, { ...entityFilters, ...APPLICATIONS }),
    items: ({ run, entityFilters, page }) => applicationItems(queries, run, entityFilters, page),
  });
  list({
    path: "issues",
    summary: "Issues: every weakness found, with its proof",
    description:
      "Most severe first, then by issue name and entity. `hidden` filters on the entity the issue is on. With `group=finding`, one item per issue name and service (`details.endpoint`): the same finding seen through several names of one service is one item listing them in `details.entities`. `[]` before any run has finished.",
    item: IssueItem,
    filters: ["severity", "group"],
    parameters: { q: "Case-insensitive substring of the issue's name, pretty name or entity name." },
    count: ({ run, findingFilters, query }) =>
      query.group === "finding"
        ? queries.countFindingGroups(run, findingFilters)
        : queries.countFindings(run, findingFilters),
    items: ({ run, findingFilters, page, query }) =>
      !run
        ? empty()
        : query.group === "finding"
          ? issueGroupItems(queries, run, queries.findingGroups(run, findingFilters, page))
          : issueItems(queries, run, queries.findings(run, findingFilters, page)),
  });
  list({
    path: "products",
    summary:
      "Products: every product seen on the collection's applications and services, with how many run it",
    description:
      "One item per product and version (a product seen without a version is its own item); `count` is an integer written as a string. Most common first. `scoped`/`hidden` count only such applications and services. `[]` before any run has finished.",
    item: ProductItem,
    parameters: { q: "Case-insensitive substring of the product (with its version)." },
    count: ({ run, entityFilters }) => queries.countProducts(run, entityFilters),
    items: async function* ({ run, entityFilters, page }) {
      for await (const { product, count } of queries.products(run, entityFilters, page))
        yield { product, count: String(count) };
    },
  });
  list({
    path: "vulnerabilities",
    summary:
      "Vulnerabilities: the CVEs of the product versions found, with the applications and services they affect",
    description:
      "From the local vulnerability database (`sightline vulndb import` loads NVD and CISA KEV; a small seed ships). `exploits` lists the CISA KEV entry of a CVE known to be exploited. Highest score first. `[]` before any run has finished.",
    item: VulnerabilityItem,
    filters: ["product"],
    cache: false,
    parameters: {
      q: "Case-insensitive substring of the CVE id or of a product carrying it.",
      product: "Only CVEs carried by this product (by name, as fingerprinted).",
    },
    count: ({ run, entityFilters }) => queries.countVulnerabilities(run, entityFilters),
    items: async function* ({ run, entityFilters, page }) {
      for await (const found of queries.vulnerabilities(
        run,
        { ...entityFilters, product: entityFilters.product },
        page,
      )) {
        const cve = (await cves.cvesById([found.cve])).get(found.cve);
        if (cve) yield vulnerabilityItem(found.cve, cve, found.products, found.affected);
      }
    },
  });

  list({
    path: "connections",
    summary: "Connections: the third parties the collection's surface depends on",
    description:
      "One item per third party (by registrable domain) outside the collection's seeds: hosts its applications load scripts or other resources from, or redirect to, and the mail (MX) and DNS (NS) providers of its names. Most used first. Computed from the scoped names and applications as of the run (held per third party, not per entity). `[]` before any run has finished.",
    item: ConnectionItem,
    parameters: {
      q: "Case-insensitive substring of the third party's name.",
      scoped: "Accepted for symmetry; connections are always computed from the scoped surface.",
      hidden: "Accepted for symmetry; connections are not hidden.",
    },
    // Third parties are what lies outside the seeds, which change without a run.
    // A run's connections are decided at its finish; one finished before they were kept is judged
    // against today's seeds, which its answer then reads.
    readsBesidesRun: async (collection, run) =>
      (await runConnections.of(run.runId))
        ? "decided"
        : JSON.stringify(await collections.seeds(collection.id)),
    count: async (context) => (await connectionsFor(context)).length,
    items: async function* (context) {
      const all = await connectionsFor(context);
      const start = context.page.offset ?? 0;
      yield* all.slice(start, context.page.limit === undefined ? undefined : start + context.page.limit);
    },
  });

  /** The connections of a request, computed once for its count and its items. */
  const connections = new WeakMap<ListContext, Promise<unknown[]>>();
  const connectionsFor = (context: ListContext) => {
    let found = connections.get(context);
    if (!found) {
      found = connectionsOf(queries, runConnections, context.run, () =>
        collections.seeds(context.collection.id),
      ).then((all) =>
        context.query.q ? all.filter((item) => item.name.includes(context.query.q!.toLowerCase())) : all,
      );
      connections.set(context, found);
    }
    return found;
  };

  app.get(
    "/:collection_name/overview",
    {
      schema: {
        tags,
        summary:
          "Overview: seeds, last run, how much of each result, issues by severity, top products, what is new",
        description:
          "Figures of the latest finished run (or `run_id`); counts are 0 and the lists empty before any run has finished.",
        params: CollectionParams,
        querystring: Type.Object({ run_id: LIST_PARAMETERS.run_id }, { additionalProperties: false }),
        response: { 200: Envelope(Overview), ...COMMON_ERRORS, ...NOT_FOUND_ERROR },
      },
    },
    async (request) => {
      const collection = await visibleCollection(
        collections,
        request.principal,
        request.params.collection_name,
      );
      const run = await queries.run(collection, (request.query as { run_id?: number }).run_id);
      const runRow = run && (await app.services.runs.get(run.runId));
      const sources = sourcesHeadline(
        run?.runId ?? null,
        describeRunSources(
          runRow?.settings ? (JSON.parse(runRow.settings) as RunSettings) : null,
          run ? await app.services.runSources.forRun(run.runId) : new Map(),
        ),
      );
      return {
        success: true as const,
        message: "success" as const,
        result: await overview(queries, {
          seedCount: (await collections.seeds(collection.id)).length,
          lastRun: await queries.lastRun(collection.id),
          run,
          sources,
        }),
      };
    },
  );

  app.get(
    "/:collection_name/overview/history",
    {
      schema: {
        tags,
        summary: "The headline counts of the newest finished runs, for a trend",
        description:
          "Hosts, services, applications, issues and critical issues of each of the newest `limit` finished runs (default 20, at most 100), oldest first; [] before any run has finished.",
        params: CollectionParams,
        querystring: Type.Object(
          { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })) },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(OverviewHistory), ...COMMON_ERRORS, ...NOT_FOUND_ERROR },
      },
    },
    async (request) => {
      const collection = await visibleCollection(
        collections,
        request.principal,
        request.params.collection_name,
      );
      const limit = (request.query as { limit?: number }).limit ?? 20;
      const finished = await app.services.runs.newestFinished(collection.id, limit);
      return {
        success: true as const,
        message: "success" as const,
        result: await overviewHistory(
          queries,
          finished.map((row) => ({
            id: row.id,
            collectionId: collection.id,
            finishedAt: row.finished_at ?? "",
          })),
        ),
      };
    },
  );

  const DiffParams = Type.Object({
    collection_name: Type.String(),
    id: RecordId("A finished run of the collection."),
  });
  app.get(
    "/:collection_name/runs/:id/diff",
    {
      schema: {
        tags,
        summary:
          "What a run changed: the entities and issues that appeared and disappeared since the finished run before it",
        description:
          "`appeared`: seen by this run and not by the previous finished run; `disappeared`: seen by the previous one and not by this one. Entities in the spec's Entity shape, issues in its Issue shape. The run must be finished (400 otherwise; 404 when it is not a run of the collection).",
        params: DiffParams,
        querystring: Type.Object({}, { additionalProperties: false }),
        response: {
          200: Envelope(diffSchema(Entity, IssueItem)),
          ...COMMON_ERRORS,
          ...NOT_FOUND_ERROR,
        },
      },
    },
    async (request, reply) => {
      const params = request.params as { collection_name: string; id: number };
      const collection = await visibleCollection(collections, request.principal, params.collection_name);
      const run = (await queries.run(collection, params.id))!;
      const previous = await queries.previousRun(collection.id, run.runId);
      return sendBody(
        request,
        reply,
        diffBody(queries, run, previous, { entity: Entity, issue: IssueItem }),
        "json",
      );
    },
  );
};

async function* empty(): AsyncGenerator<never> {}
