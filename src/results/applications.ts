/**
 * The applications result: every web application probed (a Uri entity named `<scheme>://<host>:<port>`),
 * in the spec's Application shape. What the probe saw is in the entity's details; where it sits on the
 * network (address, host id, ASN, network, country, block owner) comes from the run's IpAddress and
 * NetBlock entities. A Uri seed that never answered is not an application.
 */

import { type Static, Type } from "typebox";
import { strings, text } from "../core/details.ts";
import { Fingerprint, fingerprintsOf } from "../core/facts.ts";
import { formatDecimalExponent } from "../core/formats.ts";
import {
  type EntityFilters,
  type EntityRowWithProvenance,
  inBatches,
  type Page,
  type ResultQueries,
  type ResultRun,
} from "../store/result-queries.ts";
import { entityFields } from "./common.ts";
import { DecimalExponent, Timestamp } from "./formats.ts";
import { NetworkIndex } from "./network.ts";

export const ContentCheck = Type.Object(
  {
    name: Type.String({ examples: ["Directory Listing", "Authentication - Login Form"] }),
    type: Type.Literal("content"),
    result: Type.Boolean({ description: "Whether the page shows it." }),
    hide: Type.Optional(Type.Boolean()),
    issue: Type.Optional(Type.Boolean()),
  },
  { description: "A content check run on the page." },
);

export const ApplicationDetails = Type.Object({
  code: Type.String({ description: 'HTTP status of the landing page, as text ("200").' }),
  cloud_providers: Type.Array(Type.String(), { description: "Cloud and CDN providers the headers name." }),
  title: Type.String(),
  content: Type.Array(ContentCheck),
  cookies: Type.String({
    description:
      'Set-Cookie lines, one a line: names and attributes, each value shown as "…" (session ids change on every visit).',
  }),
  products: Type.Array(Type.Array(Type.String()), {
    description: '[product, version] pairs; version empty when unknown, e.g. [["Nginx", "1.18.0"]].',
  }),
  protocol: Type.String({ examples: ["HTTP/1.1"] }),
  response_data_hash: Type.String({
    description:
      "SHA-256 (hex) of the landing page's body; per-response tokens (nonces, hidden form fields, CSRF tokens) blanked, so an unchanged page keeps its hash.",
  }),
  fingerprint: Type.Array(Fingerprint),
  net_name: Type.String({ description: "Network name of ip_address." }),
  scripts: Type.Array(Type.String(), { description: "Absolute URLs of the page's scripts." }),
  redirect_chain: Type.Array(Type.String(), {
    description: "URLs redirected from, in order; a redirect to another host ends it with that URL.",
  }),
  headers: Type.Array(Type.String(), {
    description:
      '"<header-name>: <value>", names in lower case; a value that changes on every response (Date, request ids, cache state, a clock-made Expires, cookie values, CSP nonces) is shown as "…".',
  }),
  ip_address: Type.String({ description: "The address the application was reached at." }),
  uri: Type.String({ description: "The landing page's URL (after redirects within the host)." }),
  cloud_hosted: Type.Boolean(),
  request_hosts: Type.Array(Type.String(), { description: "Hosts the page loads resources from." }),
  host_id: DecimalExponent("Id of the host (IpAddress) the application runs on; 0 when unknown"),
  api_endpoint: Type.Boolean({
    description: "The answer is an API (JSON, GraphQL, OpenAPI) rather than a page.",
  }),
  scoped: Type.Boolean(),
  port: DecimalExponent("TCP port"),
  service: Type.String({ description: '"http" or "https".' }),
  net_country_code: Type.String({ description: "ISO country of ip_address; empty for special ranges." }),
  asn: Type.String({ description: '"AS<number>" of ip_address; empty for special ranges.' }),
  forms: Type.Boolean({ description: "The page has at least one form." }),
});

const TaskResultItem = Type.Object({
  name: Type.String({ description: "The task: <module>:<what it worked on>." }),
  task: Type.String({ description: "The discovery module." }),
  entity_type: Type.String({ description: "Service::Entity::<Kind> of the entity the task worked on." }),
  entity_name: Type.String(),
  depth: DecimalExponent("Steps from the seeds"),
});

export const ApplicationItem = Type.Object({
  first_seen: Timestamp,
  last_seen: Timestamp,
  alias_group: DecimalExponent("The application's alias group"),
  name: Type.String({ description: 'The application address, "<scheme>://<host>:<port>".' }),
  organization: Type.String({ description: "Owner of the network block the application is on." }),
  ancestors: Type.Array(Type.Object({ name: Type.String(), type: Type.String() }), {
    description: "Entities from which the application was reached, from a seed down.",
  }),
  task_results: Type.Array(TaskResultItem),
  details: ApplicationDetails,
});

type ApplicationItem = Static<typeof ApplicationItem>;

/** A Uri entity the web probe described (a seed URL that never answered has no status). */
export const isApplication = (entity: { kind: string; details: Record<string, unknown> }) =>
  entity.kind === "Uri" && typeof entity.details.code === "string";

const list = <T>(value: unknown): T[] => (Array.isArray(value) ? (value as T[]) : []);

export function applicationItem(entity: EntityRowWithProvenance, network: NetworkIndex): ApplicationItem {
  const { details } = entity;
  const where = network.of(entity);
  const { first_seen, last_seen, alias_group } = entityFields(entity);
  return {
    first_seen,
    last_seen,
    alias_group,
    name: entity.name,
    organization: where.organization,
    ancestors: entity.ancestors,
    task_results: entity.taskResults.map((result) => ({
      ...result,
      depth: formatDecimalExponent(result.depth),
    })),
    details: {
      code: text(details.code),
      cloud_providers: strings(details.cloud_providers),
      title: text(details.title),
      content: list(details.content),
      cookies: text(details.cookies),
      products: list<unknown[]>(details.products).map((pair) => strings(pair)),
      protocol: text(details.protocol),
      response_data_hash: text(details.response_data_hash),
      fingerprint: fingerprintsOf(entity),
      net_name: where.net_name,
      scripts: strings(details.scripts),
      redirect_chain: strings(details.redirect_chain),
      headers: strings(details.headers),
      ip_address: where.ip_address,
      uri: text(details.uri),
      cloud_hosted: details.cloud_hosted === true,
      request_hosts: strings(details.request_hosts),
      host_id: formatDecimalExponent(where.host_id),
      api_endpoint: details.api_endpoint === true,
      scoped: entity.scoped,
      port: formatDecimalExponent(Number(details.port) || 0),
      service: text(details.service),
      net_country_code: where.net_country_code,
      asn: where.asn,
      forms: details.forms === true,
    },
  };
}

/** Application items as of the run, in name order, a batch at a time with the batch's network facts. */
export async function* applicationItems(
  queries: ResultQueries,
  run: ResultRun | undefined,
  filters: EntityFilters,
  page: Page,
): AsyncGenerator<ApplicationItem> {
  if (!run) return;
  const entities = queries.entities(run, { ...filters, ...APPLICATIONS }, { page, provenance: true });
  for await (const batch of inBatches(entities)) {
    const network = await NetworkIndex.of(queries, run, batch);
    for (const entity of batch) yield applicationItem(entity, network);
  }
}

/** What the applications result reads: Uri entities the web probe described (they have an address). */
export const APPLICATIONS: EntityFilters = { kinds: ["Uri"], applicationsOnly: true };
