/**
 * The OpenAPI document as tools read it: Redocly's linter (its recommended rules) finds nothing; every
 * operation has its own operationId, a description, declared tags and a described success answer; the
 * public routes are listed without keys; seed types and run states are enums; a value or null in an
 * answer is a list of types, not an `anyOf` (the serialiser would compile a validator for it on the
 * event loop, src/core/or-null.ts).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { OPERATIONS } from "../../src/api/operations.ts";
import { RUN_STATUSES } from "../../src/core/runs.ts";
import { SEED_TYPES } from "../../src/core/seeds.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const METHODS = ["get", "put", "post", "delete", "patch"];

describe("the OpenAPI document", () => {
  let t: TestServer;
  // biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON
  let doc: any;
  before(async () => {
    t = await startTestServer("sqlite", { host: "127.120.0.8" });
    doc = (await t.request("GET", "/api/openapi.json", { keys: null })).body;
  });
  after(() => t?.close());

  /** Every operation with its method and path. */
  // biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON
  const operations = (): Array<[string, string, any]> =>
    Object.entries(doc.paths).flatMap(([path, item]) =>
      METHODS.filter((method) => (item as Record<string, unknown>)[method]).map(
        (method) =>
          [method.toUpperCase(), path, (item as Record<string, unknown>)[method]] as [
            string,
            string,
            unknown,
          ],
      ),
    );

  test("passes Redocly's recommended rules", async () => {
    // A 4xx answer is not asked of the public operations routes (health, the document, the reference page):
    // they have no client error to describe.
    const config = await createConfig({
      extends: ["recommended"],
      rules: { "operation-4xx-response": "off" },
    });
    const problems = await lintFromString({
      source: JSON.stringify(doc),
      absoluteRef: "/api/openapi.json",
      config,
    });
    assert.deepEqual(
      problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`),
      [],
    );
    // The linter is not lenient: a duplicated operationId is an error.
    const broken = structuredClone(doc);
    broken.paths["/api/collections"].get.operationId = broken.paths["/api/collections"].post.operationId;
    const found = await lintFromString({ source: JSON.stringify(broken), absoluteRef: "/x.json", config });
    assert.ok(found.some((p) => p.ruleId === "operation-operationId-unique" && p.severity === "error"));
  });

  test("every operation has its own id, a description, declared tags and described answers", () => {
    const declared = new Set(doc.tags.map((tag: { name: string }) => tag.name));
    const ids = new Set<string>();
    for (const [method, path, operation] of operations()) {
      const where = `${method} ${path}`;
      assert.ok(OPERATIONS[where], `${where} has its entry in src/api/operations.ts`);
      assert.equal(operation.operationId, OPERATIONS[where].operationId, where);
      assert.ok(!ids.has(operation.operationId), `${where}: ${operation.operationId} is unique`);
      ids.add(operation.operationId);
      assert.ok(operation.summary && operation.description, `${where} has a summary and a description`);
      assert.ok(
        operation.tags?.length > 0 && operation.tags.every((tag: string) => declared.has(tag)),
        where,
      );
      for (const [status, response] of Object.entries<{ description: string }>(operation.responses))
        assert.ok(
          response.description && response.description !== "Default Response",
          `${where} ${status} is described`,
        );
    }
    assert.equal(ids.size, Object.keys(OPERATIONS).length, "no entry of the table is left over");
  });

  test("the public routes are listed and need no keys; the rest need both", () => {
    for (const path of ["/metrics", "/api/openapi.json", "/docs"]) {
      const operation = doc.paths[path]?.get;
      assert.ok(operation, `${path} is listed`);
      assert.ok(
        operation.security.length === 0 ||
          operation.security.some((requirement: object) => Object.keys(requirement).length === 0),
        `${path} may be called without keys`,
      );
    }
    assert.deepEqual(doc.security, [{ accessKey: [], secretKey: [] }]);
    assert.equal(doc.paths["/api/collections/{collection_name}/hosts"].get.security, undefined);
  });

  test("the /docs page's title names Sightline", async () => {
    const page = await t.request("GET", "/docs/", { keys: null });
    assert.equal(page.status, 200);
    assert.match(page.text, /<title>Sightline API<\/title>/);
  });

  test("seed types and run states are enums", () => {
    const body = doc.paths["/api/collections"].post.requestBody.content["application/json"].schema;
    assert.deepEqual(body.properties.seeds.items.properties.type.enum, [...SEED_TYPES]);
    const runs =
      doc.paths["/api/collections/{collection_name}/runs"].get.responses["200"].content["application/json"]
        .schema.properties.result;
    assert.deepEqual(runs.items.properties.status.enum, [...RUN_STATUSES]);
  });

  test("a value or null in an answer is a list of types, never an anyOf of it and null", () => {
    const found: string[] = [];
    // biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON
    const visit = (schema: any, where: string) => {
      if (!schema || typeof schema !== "object") return;
      // A choice between shapes (the export's page key) needs a validator anyway; one shape or null does not.
      const branches = schema.anyOf ?? schema.oneOf;
      if (
        Array.isArray(branches) &&
        branches.length === 2 &&
        branches.some((branch) => branch.type === "null")
      )
        found.push(where);
      for (const [key, value] of Object.entries(schema)) visit(value, `${where}/${key}`);
    };
    for (const [method, path, operation] of operations())
      for (const [status, response] of Object.entries(operation.responses ?? {}))
        visit(response, `${method} ${path} ${status}`);
    assert.deepEqual(found, []);
  });
});
