/**
 * The export: a collection's entities, issues, applications or hosts last seen on or after a date, one
 * page at a time, continued by an opaque key (`last_evaluated_key`) that the client sends back as base64
 * of its JSON. This is the hosted service's export contract, which integrations (its Splunk app among
 * them) call.
 *
 * The key is a keyset position (the last item's place in the list's order) and the run the first page
 * read: every page reads as of that run, so a run finishing half-way through an export neither repeats
 * nor skips an item (see query.ts on reading "as of run N").
 */
import { createHash } from "node:crypto";
import { type Static, type TObject, Type } from "typebox";
import { badRequest } from "../core/errors.ts";
import {
  entityTypeName,
  formatDecimalExponent,
  formatTimestamp,
  parseDecimalExponent,
} from "../core/formats.ts";
import {
  type EntityFilters,
  type EntityRow,
  inBatches,
  type ResultQueries,
  type ResultRun,
} from "../store/result-queries.ts";
import { ApplicationItem, applicationItems } from "./applications.ts";
import { DecimalExponent, EntityType, Timestamp } from "./formats.ts";
import { Host as HostItem, hostEntries } from "./hosts.ts";
import { IssueItem, issueItems } from "./issues.ts";
import { ENVELOPE_START, serializerOf } from "./stream.ts";

export const EXPORT_TYPES = ["entities", "issues", "applications", "hosts"] as const;
export type ExportType = (typeof EXPORT_TYPES)[number];

/** Items per page unless the request asks for another size. */
export const EXPORT_PAGE_SIZE = 1000;

const ID_DESCRIPTION =
  "Unique within the collection and stable across runs: the entity type name, `#`, and the entity's name.";

export const ExportEntity = Type.Object({
  id: Type.String({ description: ID_DESCRIPTION, examples: ["Service::Entity::Domain#www.example.com"] }),
  uid: Type.String({
    description: "SHA-256 (hex) of the collection's name and the id: unique across collections, stable.",
  }),
  type: EntityType,
  name: Type.String(),
  collection: Type.String({ description: "The collection's name." }),
  hidden: Type.Boolean(),
  scoped: Type.Boolean(),
  scoped_reason: Type.String({ description: "Why the entity is in or out of the collection's scope." }),
  first_seen: Timestamp,
  last_seen: Timestamp,
  issue_count: DecimalExponent("Issues found on the entity"),
  vuln_count: DecimalExponent("CVEs of the products the entity runs"),
});

export const ExportApplication = Type.Object({
  id: Type.String({
    description: ID_DESCRIPTION,
    examples: ["Service::Entity::Uri#https://example.com:443"],
  }),
  ...ApplicationItem.properties,
});

export const ExportHost = Type.Object({
  id: Type.String({ description: ID_DESCRIPTION, examples: ["Service::Entity::IpAddress#192.0.2.10"] }),
  ip: Type.String({ description: "The host's IP address: the key of the hosts result." }),
  ...HostItem.properties,
});

export const EXPORT_ITEMS: Record<ExportType, TObject> = {
  entities: ExportEntity,
  issues: IssueItem,
  applications: ExportApplication,
  hosts: ExportHost,
};

/** Where a page ended: the run every page reads, and the last item's place in the export's order. */
export type ExportKey =
  | { item_type: "entities" | "applications" | "hosts"; run_id: number; kind: string; name: string }
  | {
      item_type: "issues";
      run_id: number;
      severity: number;
      name: string;
      entity_kind: string;
      entity_name: string;
    };

export const ExportKeySchema = Type.Union(
  [
    Type.Object({
      item_type: Type.String({ enum: ["entities", "applications", "hosts"] }),
      run_id: Type.Integer(),
      kind: Type.String(),
      name: Type.String(),
    }),
    Type.Object({
      item_type: Type.Literal("issues"),
      run_id: Type.Integer(),
      severity: Type.Integer(),
      name: Type.String(),
      entity_kind: Type.String(),
      entity_name: Type.String(),
    }),
    Type.Null(),
  ],
  {
    description:
      "Opaque: where this page ended. null on the last page. Ask for the next page by appending base64 of its JSON text to the same URL.",
  },
);

/** The page token of a key: standard base64 of its JSON text, as the hosted service's clients make it. */
export const pageToken = (key: ExportKey) => Buffer.from(JSON.stringify(key)).toString("base64");

const START_AGAIN = "start again from the first page (the URL without a token)";

/** The key a page token stands for, checked against the export it is used with; 400 when it is not one. */
export function parseToken(token: string, itemType: ExportType): ExportKey {
  const bad = (why: string) =>
    badRequest(`The page token ${why}; ${START_AGAIN}.`, [{ field: "page_token", message: why }]);
  // Standard base64 (what the contract asks for); base64url and missing padding are forgiven.
  const text = token.replaceAll("-", "+").replaceAll("_", "/");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length > 4096)
    throw bad("is not base64 of a last_evaluated_key");
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(text, "base64").toString("utf8"));
  } catch {
    throw bad("is not base64 of a last_evaluated_key's JSON");
  }
  const record = (typeof key === "object" && key !== null ? key : {}) as Record<string, unknown>;
  const isText = (value: unknown) => typeof value === "string" && value.length <= 2048;
  if (record.item_type !== itemType)
    throw bad(
      typeof record.item_type === "string"
        ? `was given by the ${record.item_type} export, not the ${itemType} export`
        : "is not a last_evaluated_key of this export",
    );
  if (!Number.isSafeInteger(record.run_id) || (record.run_id as number) < 1 || !isText(record.name))
    throw bad("is not a last_evaluated_key of this export");
  if (itemType === "issues") {
    if (!Number.isSafeInteger(record.severity) || !isText(record.entity_kind) || !isText(record.entity_name))
      throw bad("is not a last_evaluated_key of this export");
    return {
      item_type: "issues",
      run_id: record.run_id as number,
      severity: record.severity as number,
      name: record.name as string,
      entity_kind: record.entity_kind as string,
      entity_name: record.entity_name as string,
    };
  }
  if (!isText(record.kind)) throw bad("is not a last_evaluated_key of this export");
  return {
    item_type: itemType,
    run_id: record.run_id as number,
    kind: record.kind as string,
    name: record.name as string,
  };
}

/**
 * `YYYY-MM-DD` as the ISO time of that day's start (UTC), the form the store keeps times in; 400 for
 * anything else, a day that does not exist included.
 */
export function parseFromDate(text: string): string {
  const parts = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  const date = parts && new Date(Date.UTC(+parts[1], +parts[2] - 1, +parts[3]));
  if (!parts || !date || date.getUTCMonth() !== +parts[2] - 1 || date.getUTCDate() !== +parts[3])
    throw badRequest(
      `from_date "${text.slice(0, 40)}" is not a date; write it as YYYY-MM-DD, e.g. 2026-01-31.`,
      [{ field: "from_date", message: "must be a date written YYYY-MM-DD" }],
    );
  return date.toISOString();
}

const KIND_PREFIX = entityTypeName("");

/** Why an entity is in or out of scope, in words. */
const scopedReason = (scoped: boolean) =>
  scoped
    ? "In scope: a seed of the collection or found under one (a name below a seed domain, an address in a seed netblock, a service or page of those)."
    : "Out of scope: found outside the collection's seeds; kept and reported, not explored further.";

export interface ExportRequest {
  itemType: ExportType;
  collectionName: string;
  run: ResultRun | undefined;
  /** ISO time: only items last seen at or after it. */
  lastSeenFrom: string;
  /** Where the previous page ended, if this is not the first. */
  after: ExportKey | undefined;
  size: number;
}

interface Entry {
  item: unknown;
  key: ExportKey;
}

async function* entityEntries(queries: ResultQueries, request: ExportRequest, filters: EntityFilters) {
  const run = request.run!;
  const rows = queries.entities(run, filters, { page: { limit: request.size + 1 } });
  for await (const batch of inBatches<EntityRow>(rows)) {
    const issues = await queries.issueCounts(run, batch);
    const vulns = await queries.vulnCounts(batch.map((row) => row.rowId));
    for (const row of batch) {
      const type = entityTypeName(row.kind);
      const id = `${type}#${row.name}`;
      const item: Static<typeof ExportEntity> = {
        id,
        uid: createHash("sha256").update(`${request.collectionName}\u0000${id}`).digest("hex"),
        type,
        name: row.name,
        collection: request.collectionName,
        hidden: row.hidden,
        scoped: row.scoped,
        scoped_reason: scopedReason(row.scoped),
        first_seen: formatTimestamp(row.firstSeen),
        last_seen: formatTimestamp(row.lastSeen),
        issue_count: formatDecimalExponent(issues.get(`${row.kind}\u0000${row.name}`) ?? 0),
        vuln_count: formatDecimalExponent(vulns.get(row.rowId) ?? 0),
      };
      yield {
        item,
        key: { item_type: "entities", run_id: run.runId, kind: row.kind, name: row.name },
      } as Entry;
    }
  }
}

/** The items of a page and one more (which tells whether there is a next page), each with its key. */
function entries(queries: ResultQueries, request: ExportRequest): AsyncIterable<Entry> {
  const run = request.run!;
  const page = { limit: request.size + 1 };
  const { after, lastSeenFrom } = request;
  const entityAfter = after && "kind" in after ? { kind: after.kind, name: after.name } : undefined;
  switch (request.itemType) {
    case "entities":
      return entityEntries(queries, request, { after: entityAfter, lastSeenFrom });
    case "applications":
      return (async function* () {
        for await (const item of applicationItems(queries, run, { after: entityAfter, lastSeenFrom }, page)) {
          const key: ExportKey = {
            item_type: "applications",
            run_id: run.runId,
            kind: "Uri",
            name: item.name,
          };
          yield { item: { id: `${entityTypeName("Uri")}#${item.name}`, ...item }, key };
        }
      })();
    case "hosts":
      return (async function* () {
        for await (const [ip, host] of hostEntries(
          queries,
          run,
          { after: entityAfter, lastSeenFrom },
          page,
        )) {
          const key: ExportKey = { item_type: "hosts", run_id: run.runId, kind: "IpAddress", name: ip };
          yield { item: { id: `${entityTypeName("IpAddress")}#${ip}`, ip, ...host }, key };
        }
      })();
    case "issues": {
      const findingAfter =
        after && "entity_kind" in after
          ? {
              severity: after.severity,
              name: after.name,
              entityKind: after.entity_kind,
              entityName: after.entity_name,
            }
          : undefined;
      const findings = queries.findings(run, { after: findingAfter, lastSeenFrom }, page);
      return (async function* () {
        for await (const item of issueItems(queries, run, findings)) {
          const key: ExportKey = {
            item_type: "issues",
            run_id: run.runId,
            severity: parseDecimalExponent(item.severity),
            name: item.name,
            entity_kind: item.entity_type.slice(KIND_PREFIX.length),
            entity_name: item.entity_name,
          };
          yield { item, key };
        }
      })();
    }
  }
}

/**
 * The page as the envelope's text, piece by piece: `result` is `{items, more_results,
 * last_evaluated_key}`. Items are written as they are read; one more than the page is read to tell
 * whether another page follows.
 */
export async function* exportPage(queries: ResultQueries, request: ExportRequest): AsyncGenerator<string> {
  yield `${ENVELOPE_START}{"items":[`;
  let count = 0;
  let last: ExportKey | undefined;
  let more = false;
  if (request.run) {
    const serialize = serializerOf(EXPORT_ITEMS[request.itemType]);
    for await (const entry of entries(queries, request)) {
      if (count === request.size) {
        more = true;
        break;
      }
      yield count === 0 ? serialize(entry.item) : `,${serialize(entry.item)}`;
      last = entry.key;
      count++;
    }
  }
  yield `],"more_results":${more},"last_evaluated_key":${more ? JSON.stringify(last) : "null"}}}`;
}
