/**
 * A schemathesis-style property test over the server's own OpenAPI document, on both dialects: for every
 * operation, fast-check generates path, query and body inputs from the declared schemas — valid ones and
 * hostile ones (huge and negative numbers, wrong types, control characters, unknown fields) — and checks
 * that the server never answers 5xx, answers only status codes the document declares for the operation,
 * and that every JSON answer matches the schema declared for its status.
 *
 * The number of cases per operation is bounded (SIGHTLINE_PROPERTY_RUNS, default 20) so the suite stays
 * well under a minute; SIGHTLINE_PROPERTY_SEED replays a failure.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import fc from "fast-check";
import { BOOTSTRAP_KEYS, startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

const RUNS = Number(process.env.SIGHTLINE_PROPERTY_RUNS ?? 20);
const SEED = process.env.SIGHTLINE_PROPERTY_SEED ? Number(process.env.SIGHTLINE_PROPERTY_SEED) : undefined;
/** An existing collection, so that generated requests reach past the 404. */
const COLLECTION = "prop";

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema and OpenAPI objects as the document has them
type Json = any;

/** Numbers at the edges: the 32-bit id columns, JavaScript's safe integers, and beyond. */
const EDGE_INTEGERS = [0, -1, 1, 2, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53 - 1, 2 ** 53 + 2, 1e21];
/** Strings a client should never break the server with. */
const HOSTILE_STRINGS = fc.oneof(
  fc.constantFrom("", " ", "\u0000", "a\r\nb", "%00", "../..", "é", "𝕏", "' or 1=1 --", "x".repeat(300)),
  fc.string({ unit: "binary", maxLength: 20 }),
);

/** A value matching the schema, roughly (enough to get past validation often). */
function valid(schema: Json, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return fc.constant(null);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  for (const key of ["anyOf", "oneOf"] as const)
    if (schema[key]) return fc.oneof(...schema[key].map((branch: Json) => valid(branch, depth + 1)));
  switch (schema.type) {
    case "integer": {
      const min = schema.minimum ?? -1000;
      const max = schema.maximum ?? 1_000_000;
      return fc.oneof(fc.integer({ min, max: Math.min(max, min + 1000) }), fc.constantFrom(min, max));
    }
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      const maxLength = Math.min(schema.maxItems ?? 3, 3);
      return fc.array(valid(schema.items, depth + 1), { minLength: schema.minItems ?? 0, maxLength });
    }
    case "object": {
      const properties: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, property] of Object.entries(schema.properties ?? {}))
        properties[name] = valid(property, depth + 1);
      return fc.record(properties, { requiredKeys: schema.required ?? [] });
    }
    default: {
      if (schema.format === "uri") return fc.webUrl();
      const minLength = schema.minLength ?? 0;
      const maxLength = Math.min(schema.maxLength ?? 40, 40);
      if (schema.pattern)
        return fc
          .stringMatching(new RegExp(schema.pattern))
          .filter((text) => text.length >= minLength && text.length <= (schema.maxLength ?? 1000));
      return fc.string({ minLength, maxLength: Math.max(minLength, maxLength) });
    }
  }
}

/** Anything at all, weighted towards what breaks servers. */
const hostile: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...EDGE_INTEGERS),
  HOSTILE_STRINGS,
  fc.constantFrom(null, true, [], {}, { unknown_field: 1 }),
  fc.double(),
);

const either = (schema: Json) =>
  fc.oneof({ weight: 3, arbitrary: valid(schema) }, { weight: 1, arbitrary: hostile });

interface Case {
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
}

function caseFor(operation: Json): fc.Arbitrary<Case> {
  const path: Record<string, fc.Arbitrary<unknown>> = {};
  const query: Record<string, fc.Arbitrary<unknown>> = {};
  for (const parameter of operation.parameters ?? []) {
    if (parameter.in === "path") {
      // An empty segment, "." or ".." is another operation's URL (GET /api/collections/, as every client
      // resolves dot segments), not a value of this one.
      const segment = either(parameter.schema).filter((value) => !["", ".", ".."].includes(text(value)));
      path[parameter.name] =
        parameter.name === "collection_name"
          ? fc.oneof({ weight: 4, arbitrary: fc.constant(COLLECTION) }, { weight: 1, arbitrary: segment })
          : segment;
    } else if (parameter.in === "query") query[parameter.name] = either(parameter.schema);
  }
  const bodySchema = operation.requestBody?.content?.["application/json"]?.schema;
  return fc.record({
    path: fc.record(path),
    query: fc.record(query, { requiredKeys: [] }),
    body: bodySchema
      ? fc.oneof(
          { weight: 3, arbitrary: valid(bodySchema) },
          {
            weight: 1,
            arbitrary: fc
              .tuple(valid(bodySchema), hostile)
              .map(([body, extra]) => ({ ...(body as object), [`x_${typeof extra}`]: extra })),
          },
          { weight: 1, arbitrary: hostile },
        )
      : fc.constant(undefined),
  });
}

const text = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

for (const { dialect, skip } of await dialects()) {
  describe(`the server keeps its OpenAPI document under generated input, on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let document: Json;
    const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
    addFormats.default(ajv);

    before(async () => {
      t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600 });
      const created = await t.request("POST", "/api/collections", {
        body: { name: COLLECTION, seeds: [{ type: "Domain", name: "prop.example" }] },
      });
      assert.equal(created.status, 200, created.text);
      document = (await t.request("GET", "/api/openapi.json")).body;
    });
    after(async () => {
      await t?.close();
    });

    const validators = new Map<string, ReturnType<typeof ajv.compile>>();
    const validator = (key: string, schema: Json) => {
      let validate = validators.get(key);
      if (!validate) {
        validate = ajv.compile({ ...schema, components: document.components });
        validators.set(key, validate);
      }
      return validate;
    };

    test("every operation: no 5xx, documented status codes only, answers match their schemas", async () => {
      const operations = Object.entries(document.paths as Record<string, Record<string, Json>>).flatMap(
        ([path, methods]) =>
          Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
      );
      assert.ok(operations.length >= 20, `the document lists the operations (${operations.length})`);
      for (const { path, method, operation } of operations) {
        await fc.assert(
          fc.asyncProperty(caseFor(operation), async (input) => {
            const url = new URL(
              path.replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(text(input.path[name]))),
              t.url,
            );
            for (const [name, value] of Object.entries(input.query))
              if (value !== undefined) url.searchParams.set(name, text(value));
            const response = await fetch(url, {
              method: method.toUpperCase(),
              headers: {
                SERVICE_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
                SERVICE_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
                ...(input.body !== undefined ? { "content-type": "application/json" } : {}),
              },
              body: input.body !== undefined ? JSON.stringify(input.body) : undefined,
            });
            const body = await response.text();
            const where = `${method.toUpperCase()} ${url.pathname}${url.search} ${input.body === undefined ? "" : JSON.stringify(input.body)} → ${response.status} ${body.slice(0, 300)}`;
            assert.ok(response.status < 500, `no 5xx: ${where}`);
            const declared = operation.responses[String(response.status)];
            assert.ok(declared, `status ${response.status} is documented: ${where}`);
            const schema = declared.content?.["application/json"]?.schema;
            if (schema && /^application\/json/.test(response.headers.get("content-type") ?? "")) {
              const validate = validator(`${method} ${path} ${response.status}`, schema);
              assert.ok(
                validate(JSON.parse(body)),
                `the answer matches its schema (${ajv.errorsText(validate.errors)}): ${where}`,
              );
            }
          }),
          { numRuns: RUNS, seed: SEED, endOnFailure: true },
        );
      }
    });
  });
}
