/**
 * The issues result: each weakness found, in the spec's Issue shape. The issue-specific proof
 * (request, status, uri, insecure_resource_url, affected_software, …) is kept in `details` next to
 * the issue's own identity, severity and text, as the spec's samples show.
 */
import { type Static, Type } from "typebox";
import { entityTypeName, formatDecimalExponent, formatTimestamp } from "../core/formats.ts";
import type { FindingRecord } from "../store/entities.ts";
import {
  type FindingGroup,
  type FindingRow,
  GROUP_ENTITIES,
  inBatches,
  type ResultQueries,
  type ResultRun,
} from "../store/result-queries.ts";
import { DecimalExponent, EntityType, Timestamp } from "./formats.ts";
import { NetworkIndex } from "./network.ts";

/** The proof of a web check: the request that showed it. */
const IssueRequest = Type.Object({
  method: Type.String(),
  url: Type.String(),
  headers: Type.Record(Type.String(), Type.String(), { description: "Request headers sent, by name." }),
  hostname: Type.String(),
});

const IssueDetails = Type.Object(
  {
    name: Type.String(),
    pretty_name: Type.String(),
    severity: DecimalExponent("1 (critical) … 5 (informational)"),
    category: Type.String({
      examples: ["misconfiguration", "information_disclosure", "vulnerability", "email", "tls"],
    }),
    description: Type.String(),
    remediation: Type.String(),
    references: Type.Array(Type.Object({ type: Type.String(), uri: Type.String() }), {
      description: 'Where to read more: type "description" or "remediation".',
    }),
    request: Type.Optional(IssueRequest),
    uri: Type.Optional(Type.String({ description: "The URL that showed the weakness." })),
    status: Type.Optional(Type.String({ description: "HTTP status of that answer, as text." })),
    insecure_resource_url: Type.Optional(
      Type.String({ description: "The plain-HTTP address credentials are sent to." }),
    ),
    endpoint: Type.Optional(
      Type.String({
        description:
          "The network service the issue's entity runs on, \"address:port\" (an application's, or the service itself); absent for names, certificates and addresses. Issues with the same `name` and `endpoint` are one finding seen through several names (one nginx behind many host names).",
      }),
    ),
    entities: Type.Optional(
      Type.Array(Type.Object({ entity_type: EntityType, entity_name: Type.String() }), {
        description: `With group=finding: the entities the finding was seen on, in the list's order (the first ${GROUP_ENTITIES}; \`entity_count\` has them all).`,
      }),
    ),
    entity_count: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: "With group=finding: how many entities the finding was seen on.",
      }),
    ),
    affected_software: Type.Optional(
      Type.Array(
        Type.Object({
          vendor: Type.String(),
          product: Type.String(),
          version: Type.String(),
          cpe: Type.String(),
          matched_criteria: Type.String({ description: "The NVD configuration criterion that matched." }),
        }),
        { description: "For inferred CVEs: the product and version the CVE was inferred from." },
      ),
    ),
  },
  {
    additionalProperties: true,
    description:
      "The issue's identity, text and proof; further proof fields are specific to the kind of issue (cookie and missing flags, headers_disclosed, head of .git/HEAD, cve, cwe and scores, the DNS name and target, the zone, the domain and TXT records, the certificate).",
  },
);

export const IssueItem = Type.Object({
  id: Type.String(),
  name: Type.String({
    description: 'Issue identifier, e.g. "exposed_git_repository", "inferred_cve_2021_41773".',
  }),
  pretty_name: Type.String(),
  entity_type: EntityType,
  entity_name: Type.String(),
  organization: Type.String({ description: "Owner of the network block the entity is on." }),
  first_seen: Timestamp,
  last_seen: Timestamp,
  alias_group_id: DecimalExponent("The alias group of the entity the issue is on"),
  confidence: Type.String({
    enum: ["confirmed", "potential"],
    description: "confirmed: a check proved it; potential: inferred (a CVE from a product version).",
  }),
  severity: DecimalExponent("1 (critical) … 5 (informational)"),
  description: Type.String(),
  scoped: Type.Boolean(),
  details: IssueDetails,
});

/** A stored issue as the view reads it: the finding, and the organisation of the entity it is on. */
export type IssueRecord = FindingRecord & { organization: string };

export function issueItem(issue: IssueRecord, service: string | null = null): Static<typeof IssueItem> {
  const severity = formatDecimalExponent(issue.severity);
  return {
    id: String(issue.id),
    name: issue.name,
    pretty_name: issue.prettyName,
    entity_type: entityTypeName(issue.entityKind),
    entity_name: issue.entityName,
    organization: issue.organization,
    first_seen: formatTimestamp(issue.firstSeen),
    last_seen: formatTimestamp(issue.lastSeen),
    alias_group_id: formatDecimalExponent(issue.aliasGroup),
    confidence: issue.confidence,
    severity,
    description: issue.description,
    scoped: issue.scoped,
    details: {
      ...issue.details,
      name: issue.name,
      pretty_name: issue.prettyName,
      severity,
      category: issue.category,
      description: issue.description,
      remediation: issue.remediation,
      references: issue.references,
      ...(service ? { endpoint: service } : {}),
    },
  };
}

/** An issue as of a run, in the spec's shape; its organisation is the owner of the block its entity is on. */
export function issueOf(row: FindingRow, network: NetworkIndex): Static<typeof IssueItem> {
  const entity = { kind: row.entityKind, name: row.entityName, details: row.entityDetails };
  return issueItem({ ...row, organization: network.of(entity).organization }, row.endpoint);
}

/** Issue items of a stream of findings, a batch at a time with the network facts of the batch. */
export function issueItems(
  queries: ResultQueries,
  run: ResultRun,
  findings: AsyncIterable<FindingRow>,
): AsyncGenerator<Static<typeof IssueItem>> {
  return itemsWithNetwork(queries, run, findings, issueOf);
}

/**
 * Issue items of finding groups (`?group=finding`): the spec's Issue of the group's first finding, with
 * the group's first and last sighting and scope, and in `details` the entities it covers.
 */
export function issueGroupItems(
  queries: ResultQueries,
  run: ResultRun,
  groups: AsyncIterable<FindingGroup>,
): AsyncGenerator<Static<typeof IssueItem>> {
  return itemsWithNetwork(queries, run, groups, (group, network) => {
    const item = issueOf(group, network);
    item.details.entities = group.entities.map((entity) => ({
      entity_type: entityTypeName(entity.kind),
      entity_name: entity.name,
    }));
    item.details.entity_count = group.entityCount;
    return item;
  });
}

async function* itemsWithNetwork<Row extends FindingRow>(
  queries: ResultQueries,
  run: ResultRun,
  rows: AsyncIterable<Row>,
  item: (row: Row, network: NetworkIndex) => Static<typeof IssueItem>,
): AsyncGenerator<Static<typeof IssueItem>> {
  for await (const batch of inBatches(rows)) {
    const network = await NetworkIndex.of(
      queries,
      run,
      batch.map((row) => ({ kind: row.entityKind, name: row.entityName, details: row.entityDetails })),
    );
    for (const row of batch) yield item(row, network);
  }
}
