/**
 * The attack surface as a client sees it: every route the OpenAPI document lists (so routes other parts add
 * later are attacked too) plus the few it hides, a raw HTTP client that sends what `fetch` refuses to
 * (odd headers, raw paths, a chosen source address), the error-envelope check, and a snapshot of what the
 * store holds, to prove a refused request wrote nothing.
 */
import assert from "node:assert/strict";
import { request as httpRequest, type OutgoingHttpHeaders } from "node:http";
import type { Kysely } from "kysely";
import type { Services } from "../../src/store/services.ts";
import type { RunWorkFactory, TestServer } from "../helpers/server.ts";

export interface RouteSpec {
  method: string;
  /** OpenAPI form: /api/collections/{collection_name}/seeds */
  template: string;
  pathParams: string[];
  queryParams: string[];
  takesBody: boolean;
  /** Under /api and not the public reference: keys are required. */
  authenticated: boolean;
  /** A valid value of each path parameter the document gives one for (its enum's first, or its example). */
  pathExamples?: Record<string, string>;
}

/** Routes the OpenAPI document leaves out on purpose, attacked all the same. */
const HIDDEN: RouteSpec[] = [
  {
    method: "GET",
    template: "/api/openapi.json",
    pathParams: [],
    queryParams: [],
    takesBody: false,
    authenticated: false,
  },
  {
    method: "GET",
    template: "/metrics",
    pathParams: [],
    queryParams: [],
    takesBody: false,
    authenticated: false,
  },
];

interface OpenApiOperation {
  parameters?: Array<{
    in: string;
    name: string;
    example?: unknown;
    schema?: { enum?: unknown[]; examples?: unknown[] };
  }>;
  requestBody?: unknown;
}

export async function enumerateRoutes(t: TestServer): Promise<RouteSpec[]> {
  const document = await t.request("GET", "/api/openapi.json", { keys: null });
  assert.equal(document.status, 200, "the OpenAPI document is served");
  const routes: RouteSpec[] = [...HIDDEN];
  for (const [template, item] of Object.entries(
    document.body.paths as Record<string, Record<string, unknown>>,
  )) {
    for (const [method, operation] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      const parameters = (operation as OpenApiOperation).parameters ?? [];
      routes.push({
        method: method.toUpperCase(),
        template,
        pathParams: [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]),
        queryParams: parameters.filter((p) => p.in === "query").map((p) => p.name),
        takesBody: (operation as OpenApiOperation).requestBody !== undefined,
        authenticated: template.startsWith("/api/") && template !== "/api/openapi.json",
        pathExamples: Object.fromEntries(
          parameters
            .filter(
              (p) =>
                p.in === "path" &&
                (p.schema?.enum?.[0] ?? p.example ?? p.schema?.examples?.[0]) !== undefined,
            )
            .map((p) => [p.name, String(p.schema?.enum?.[0] ?? p.example ?? p.schema?.examples?.[0])]),
        ),
      });
    }
  }
  return routes;
}

/** Percent-encodes every byte of the UTF-8 form except unreserved characters; lone surrogates become U+FFFD. */
export function encodeSegment(value: string): string {
  let out = "";
  for (const byte of Buffer.from(value, "utf8")) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9_.~-]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The route's path with each parameter replaced by the given (already encoded) text. */
export function fillPath(route: RouteSpec, values: Record<string, string>): string {
  return route.template.replace(
    /\{([^}]+)\}/g,
    (_, name: string) => values[name] ?? route.pathExamples?.[name] ?? "1",
  );
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface RawRequest {
  method: string;
  path: string;
  headers?: OutgoingHttpHeaders;
  body?: string | Buffer;
  /** Source address on loopback (127.0.0.2 …), to be another client. */
  localAddress?: string;
}

/** One request over a fresh connection, with headers and path exactly as given. */
export function rawRequest(baseUrl: string, options: RawRequest): Promise<RawResponse> {
  const url = new URL(baseUrl);
  const headers = { ...options.headers };
  // Without a length, Node sends a GET's body unframed and the server reads it as the next request.
  if (options.body !== undefined && headers["content-length"] === undefined)
    headers["content-length"] = Buffer.byteLength(options.body);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: options.method,
        path: options.path,
        headers,
        localAddress: options.localAddress,
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(options.body);
  });
}

/** The error envelope: success false, a sentence, result null, a machine code; nothing else. */
export function assertErrorEnvelope(response: { status: number; text: string }, context: string): void {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(response.text);
  } catch {
    assert.fail(`${context}: ${response.status} is not JSON: ${response.text.slice(0, 200)}`);
  }
  assert.deepEqual(Object.keys(body).sort(), ["error", "message", "result", "success"], context);
  assert.equal(body.success, false, context);
  assert.equal(body.result, null, context);
  assert.equal(typeof body.message, "string", context);
  const message = body.message as string;
  assert.ok(message.length >= 10 && /[.!?]$/.test(message), `${context}: "${message}" is not a sentence`);
  const error = body.error as { code: unknown; details?: unknown };
  assert.match(String(error.code), /^[a-z_]+$/, context);
  if (error.details !== undefined) assert.ok(Array.isArray(error.details), context);
}

/** Test-server settings under which nothing is scheduled on its own while a suite runs. */
export const QUIET_SCHEDULER = { schedulerIntervalSeconds: 86_400 };

/** Runs that finish at once: these suites attack the API, not discovery, and must not wait on the network. */
export const instantRuns: RunWorkFactory = () => ({
  plan: async () => [],
  execute: async () => [],
  finish: async () => {},
});

/**
 * Everything the service itself writes, as text that compares equal when nothing changed: every table but
 * Kysely's own and the shipped vulnerability database. Taken once no run is queued or started, so work the
 * run machinery does in the background (after a forced run was accepted) is not mistaken for a write of
 * the request being checked. Test servers set a long scheduler interval, so nothing fires on its own.
 */
export function storeSnapshot(services: Pick<Services, "store" | "runs">): () => Promise<string> {
  const { db } = services.store;
  let tables: string[] | undefined;
  return async () => {
    while ((await services.runs.unfinished()).length > 0)
      await new Promise((resolve) => setTimeout(resolve, 5));
    tables ??= (await db.introspection.getTables())
      .map((table) => table.name)
      .filter((name) => !name.startsWith("vuln_"))
      .sort();
    const dump = await Promise.all(
      tables.map(async (name) => {
        // biome-ignore lint/suspicious/noExplicitAny: every table, whatever its shape
        const rows = await (db as Kysely<any>).selectFrom(name).selectAll().execute();
        return [name, rows.map((row) => JSON.stringify(row)).sort()] as const;
      }),
    );
    return JSON.stringify(dump);
  };
}
