/** Shared by the result tests: spec-table shape checks, a CSV reader, fixture collections on a test server. */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { parseDecimalExponent, parseTimestamp } from "../../src/core/formats.ts";
import { buildRun, type FixtureCollection, type FixtureOptions } from "../helpers/result-fixtures.ts";
import type { TestServer } from "../helpers/server.ts";

/**
 * A field's type as the spec's tables write it: `timestamp` (YYYY-MM-DD HH:MM:SS UTC), `decimal`
 * (a decimal-exponent number as a string), `integer-string` (an integer written as a string), the JSON
 * types, `T[]` arrays, `T|null`, or a nested table.
 */
export type FieldType = string | { [field: string]: FieldType } | [FieldType];

/** Checks every field of `value` against a spec table: the same field names, each of its type. */
export function assertShape(value: unknown, table: { [field: string]: FieldType }, where = "item"): void {
  assert.ok(value && typeof value === "object" && !Array.isArray(value), `${where} is an object`);
  assert.deepEqual(Object.keys(value).sort(), Object.keys(table).sort(), `${where}: the spec's fields`);
  for (const [field, type] of Object.entries(table))
    assertType((value as Record<string, unknown>)[field], type, `${where}.${field}`);
}

function assertType(value: unknown, type: FieldType, where: string): void {
  if (Array.isArray(type)) {
    assert.ok(Array.isArray(value), `${where} is an array`);
    for (const [i, item] of value.entries()) assertType(item, type[0], `${where}[${i}]`);
    return;
  }
  if (typeof type === "object") {
    assertShape(value, type, where);
    return;
  }
  if (type.endsWith("|null") && value === null) return;
  const base = type.replace(/\|null$/, "");
  if (base.endsWith("[]")) {
    assertType(value, [base.slice(0, -2)], where);
    return;
  }
  switch (base) {
    case "timestamp":
      assert.equal(typeof value, "string", where);
      parseTimestamp(value as string);
      return;
    case "decimal":
      assert.equal(typeof value, "string", where);
      parseDecimalExponent(value as string);
      return;
    case "integer-string":
      assert.match(value as string, /^\d+$/, where);
      return;
    case "integer":
      assert.ok(Number.isInteger(value), `${where} is an integer`);
      return;
    case "any":
      return;
    case "array":
      assert.ok(Array.isArray(value), `${where} is an array`);
      return;
    case "object":
      assert.ok(value && typeof value === "object" && !Array.isArray(value), `${where} is an object`);
      return;
    default:
      assert.equal(typeof value, base, `${where} is a ${base}`);
  }
}

/** The spec's Entity table. */
export const ENTITY: { [field: string]: FieldType } = {
  name: "string",
  type: "string",
  first_seen: "timestamp",
  last_seen: "timestamp",
  hidden: "boolean",
  scoped: "boolean",
  alias_group: "decimal",
};

const GEOLOCATION = {
  continent: "string",
  country: "string",
  country_code: "string",
  continent_code: "string",
};

/** The spec's Host table. */
export const HOST: { [field: string]: FieldType } = {
  resolutions: "string[]",
  first_seen: "timestamp",
  last_seen: "timestamp",
  net_name: "string",
  geolocation: GEOLOCATION,
  ports: [{ number: "decimal", protocol: "string" }],
  os: "string",
  scoped: "boolean",
  hidden: "boolean",
};

/** The spec's Issue table. */
export const ISSUE: { [field: string]: FieldType } = {
  id: "string",
  name: "string",
  pretty_name: "string",
  entity_type: "string",
  entity_name: "string",
  organization: "string",
  first_seen: "timestamp",
  last_seen: "timestamp",
  alias_group_id: "decimal",
  confidence: "string",
  severity: "decimal",
  description: "string",
  scoped: "boolean",
  details: "object",
};

/** The spec's Product table. */
export const PRODUCT: { [field: string]: FieldType } = { product: "string", count: "integer-string" };

/** The spec's Vulnerability table (`exploits` elements are not shown by the spec). */
export const VULNERABILITY: { [field: string]: FieldType } = {
  name: "string",
  cve: "string",
  shortname: "string",
  description: "string",
  exploits: "array",
  cwe: "string",
  score: "number",
  cvss_v2_score: "number",
  cvss_v3_score: "number|null",
  count: "integer",
  affected: "string[]",
};

/** The spec's Application table, with its details, ContentCheck, Fingerprint and TaskResult tables. */
export const APPLICATION: { [field: string]: FieldType } = {
  first_seen: "timestamp",
  last_seen: "timestamp",
  alias_group: "decimal",
  name: "string",
  organization: "string",
  ancestors: [{ name: "string", type: "string" }],
  task_results: [
    { name: "string", task: "string", entity_type: "string", entity_name: "string", depth: "decimal" },
  ],
  details: {
    code: "string",
    cloud_providers: "array",
    title: "string",
    content: [{ name: "string", type: "string", result: "boolean" }],
    cookies: "string",
    products: "array",
    protocol: "string",
    response_data_hash: "string",
    fingerprint: [
      {
        product: "string",
        issue: "boolean",
        inference: "boolean",
        vendor: "string",
        vulns: "array",
        cpe: "string",
        match_type: "string",
        type: "string",
        match_details: "string",
        tags: "string[]",
      },
    ],
    net_name: "string",
    scripts: "string[]",
    redirect_chain: "string[]",
    headers: "string[]",
    ip_address: "string",
    uri: "string",
    cloud_hosted: "boolean",
    request_hosts: "string[]",
    host_id: "decimal",
    api_endpoint: "boolean",
    scoped: "boolean",
    port: "decimal",
    service: "string",
    net_country_code: "string",
    asn: "string",
    forms: "boolean",
  },
};

/** Sightline's own shapes for what the spec leaves open (domains, netblocks), as documented. */
export const DOMAIN: { [field: string]: FieldType } = {
  ...ENTITY,
  name_server: "boolean",
  resolves: "boolean",
  addresses: "string[]",
  records: Object.fromEntries(
    ["a", "aaaa", "cname", "mx", "ns", "txt", "soa", "caa", "srv"].map((r) => [r, "string[]"]),
  ),
  spf: "string",
  dmarc: "string",
  wildcard: "boolean",
  wildcard_addresses: "string[]",
  zone_transfer: "boolean",
  certificates: "string[]",
};
export const CONNECTION: { [field: string]: FieldType } = {
  name: "string",
  kinds: "string[]",
  hosts: "string[]",
  count: "integer",
  used_by: "string[]",
};
export const NETBLOCK: { [field: string]: FieldType } = {
  ...ENTITY,
  asn: "string",
  organization: "string",
  net_name: "string",
  geolocation: GEOLOCATION,
  hosts: "string[]",
};

/** RFC 4180 CSV into rows of fields (quoted fields may hold commas, quotes and line breaks). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      i++;
    } else field += c;
  }
  if (field !== "" || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/** A collection made through the API, for runs built in the server's store. */
export async function apiCollection(t: TestServer, name: string): Promise<FixtureCollection> {
  const created = await t.request("POST", "/api/collections", {
    body: { name, seeds: [{ type: "Domain", name: "corp.example" }] },
  });
  assert.equal(created.status, 200, created.text);
  const { accounts, collections } = t.server.services;
  const account = (await accounts.findAccount("default"))!;
  const row = (await collections.findInAccount(account.id, name))!;
  return { collectionId: row.id, name };
}

export const runIn = (t: TestServer, collection: FixtureCollection, options: FixtureOptions) =>
  buildRun(t.server.services.store.db, collection, options);

/** Reads every page of a list through its Link headers. */
export async function allPages(t: TestServer, path: string) {
  const pages: unknown[] = [];
  let next: string | undefined = path;
  let total: string | null = null;
  while (next) {
    const response = await t.request("GET", next);
    assert.equal(response.status, 200, response.text);
    total = response.headers.get("x-total-count");
    pages.push(response.body.result);
    next = /<([^>]+)>; rel="next"/.exec(response.headers.get("link") ?? "")?.[1];
  }
  return { pages, total: Number(total) };
}

/** A raw GET (no automatic decompression): the bytes as sent, with the admin's keys and `headers`. */
export function rawGet(t: TestServer, path: string, headers: Record<string, string>) {
  return new Promise<{
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: Buffer;
  }>((resolve, reject) => {
    const url = new URL(path, t.url);
    const request = httpRequest(
      url,
      {
        headers: {
          SERVICE_ACCESS_KEY: t.admin.accessKey,
          SERVICE_SECRET_KEY: t.admin.secretKey,
          ...headers,
        },
      },
      (response) => {
        const parts: Buffer[] = [];
        response.on("data", (part) => parts.push(part));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(parts),
          }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end();
  });
}
