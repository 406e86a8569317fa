/** The OpenAPI 3.1 document, generated from the route schemas, at /api/openapi.json; a reference page at /docs. */

import { STATUS_CODES } from "node:http";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, FastifySchema } from "fastify";
import fp from "fastify-plugin";
import { buildInfo } from "../core/build-info.ts";
import { SEED_TYPES } from "../core/seeds.ts";
import { fallbackOperationId, OPERATIONS } from "./operations.ts";

type Schema = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON walked by key
type Document = Record<string, any>;

const TAGS = [
  { name: "Collections", description: "Collections and their seeds." },
  { name: "Runs", description: "Runs: force one, follow it, cancel it." },
  {
    name: "Results",
    description:
      "What the latest finished run (or a chosen one) found, as lists in the spec's shapes, and the paged export.",
  },
  { name: "Webhooks", description: "Signed events sent to your URLs when runs end and issues appear." },
  { name: "Teams", description: "The teams you belong to." },
  {
    name: "Sources",
    description:
      "The passive sources runs ask (certificate logs, passive DNS, archives), their keys' presence and last status.",
  },
  { name: "Operations", description: "Health, metrics and this reference: no API keys asked." },
];

/**
 * How a route appears in the document: a route that takes the rest of the path (`/*`: the export's page
 * token, a seed's value; either may hold `/`) with a named parameter, the `x-parameter-name` of its
 * schema (default `page_token`); a plugin's root without its trailing
 * slash (both are served); the seed types the server accepts as an enum (the route checks them itself, to
 * name the bad seed in its answer).
 */
function documentRoute({ schema, url }: { schema: FastifySchema; url: string }) {
  let documented: Schema | undefined = schema as Schema | undefined;
  let path = url.length > 1 && url.endsWith("/") ? url.slice(0, -1) : url;
  const params = documented?.params as { properties?: Schema; required?: string[] } | undefined;
  if (path.endsWith("/*") && params?.properties?.["*"]) {
    const { "*": token, ...properties } = params.properties;
    const { "x-parameter-name": named, ...rest } = token as Schema & { "x-parameter-name"?: string };
    const name = named ?? "page_token";
    path = `${path.slice(0, -1)}:${name}`;
    documented = {
      ...documented,
      params: {
        ...params,
        properties: { ...properties, [name]: rest },
        required: [...(params.required ?? []).filter((item) => item !== "*"), name],
      },
    };
  }
  const body = documented?.body as Document | undefined;
  const seedType = body?.properties?.seeds?.items?.properties?.type;
  if (seedType && !seedType.enum)
    documented = {
      ...documented,
      body: {
        ...body,
        properties: {
          ...body.properties,
          seeds: {
            ...body.properties.seeds,
            items: {
              ...body.properties.seeds.items,
              properties: {
                ...body.properties.seeds.items.properties,
                type: { ...seedType, enum: [...SEED_TYPES] },
              },
            },
          },
        },
      },
    };
  return { schema: documented as FastifySchema, url: path };
}

/** Routes outside the route schemas (plain text, HTML, the document itself), listed as public. */
const PUBLIC_PATHS: Document = {
  "/metrics": {
    get: {
      tags: ["Operations"],
      summary: "Prometheus metrics of this process",
      description:
        "Requests, latency, runs by state, queue depth, discovery tasks, cache and process figures in the Prometheus text format. Open unless SIGHTLINE_METRICS_TOKEN is set; then it asks for `Authorization: Bearer <token>`. Workers serve the same at `sightline worker --metrics-port`.",
      security: [{}, { metricsToken: [] }],
      responses: {
        200: { description: "", content: { "text/plain": { schema: { type: "string" } } } },
        401: { description: "A metrics token is set and the request did not send it." },
      },
    },
  },
  "/api/openapi.json": {
    get: {
      tags: ["Operations"],
      summary: "This OpenAPI document",
      description: "The OpenAPI 3.1 document of the API, generated from the route schemas.",
      security: [],
      responses: {
        200: { description: "", content: { "application/json": { schema: { type: "object" } } } },
      },
    },
  },
  "/docs": {
    get: {
      tags: ["Operations"],
      summary: "The API reference page",
      description: "Swagger UI over this document; its assets are under /docs/static.",
      security: [],
      responses: { 200: { description: "", content: { "text/html": { schema: { type: "string" } } } } },
    },
  },
};

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

/** What the route schemas cannot say: ids, descriptions, the public routes, tags, servers. */
function completeDocument({ openapiObject }: { openapiObject: Document }): Document {
  const doc: Document = { ...openapiObject, servers: [{ url: "/", description: "This server" }], tags: TAGS };
  doc.paths = { ...doc.paths, ...PUBLIC_PATHS };
  doc.components = {
    ...doc.components,
    securitySchemes: {
      ...doc.components?.securitySchemes,
      metricsToken: { type: "http", scheme: "bearer", description: "SIGHTLINE_METRICS_TOKEN, when set." },
    },
  };
  for (const [path, shared] of Object.entries<Document>(doc.paths)) {
    const item = { ...shared };
    doc.paths[path] = item;
    for (const method of METHODS) {
      if (!item[method]) continue;
      // A route of several methods shares one object between them: each gets its own id.
      const operation = { ...item[method] };
      item[method] = operation;
      const text = OPERATIONS[`${method.toUpperCase()} ${path}`];
      operation.operationId ??= text?.operationId ?? fallbackOperationId(method, path);
      if (!operation.description && text?.description) operation.description = text.description;
      for (const [status, response] of Object.entries<Document>(operation.responses ?? {}))
        if (!response.description || response.description === "Default Response")
          response.description = status.startsWith("2")
            ? (text?.success ?? "Success.")
            : (text?.errors?.[status] ?? `${status} ${STATUS_CODES[status] ?? ""}`.trim());
    }
  }
  return doc;
}

/**
 * Constraints a schema declares for the document while a handler checks them itself, so that it can name
 * every bad item of a list at once (seeds: a 400 lists each bad seed, which schema validation stopping at
 * the first bad type would not). The server refuses exactly what the document says it refuses.
 */
export const DOCUMENTED = "x-checked-by-handler";

/** A copy of a route schema with every DOCUMENTED set of constraints merged in. */
function documented(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(documented);
  if (!value || typeof value !== "object") return value;
  const copy: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) if (key !== DOCUMENTED) copy[key] = documented(inner);
  const extra = (value as Record<string, unknown>)[DOCUMENTED];
  return extra && typeof extra === "object" ? { ...copy, ...(extra as object) } : copy;
}

export const openApi = fp(async (app: FastifyInstance) => {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Sightline API",
        version: buildInfo().version,
        license: { name: "MIT", identifier: "MIT" },
        description:
          "Attack-surface management: collections of seeds, runs that discover what is reachable behind them, and their results. Every answer is the envelope {success, message, result}; errors add {error: {code, details}}. Timestamps are `YYYY-MM-DD HH:MM:SS UTC`; numbers marked decimal-exponent are strings like `0.443e3`.",
      },
      components: {
        securitySchemes: {
          accessKey: { type: "apiKey", in: "header", name: "SERVICE_ACCESS_KEY" },
          secretKey: { type: "apiKey", in: "header", name: "SERVICE_SECRET_KEY" },
        },
      },
      security: [{ accessKey: [], secretKey: [] }],
    },
    transform: ({ schema, url }) => documentRoute({ schema: documented(schema) as typeof schema, url }),
    transformObject: completeDocument as never,
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    uiConfig: { docExpansion: "list", deepLinking: true },
    theme: { title: "Sightline API" },
  });
  app.get("/api/openapi.json", { schema: { hide: true } }, async () => app.swagger());
});
