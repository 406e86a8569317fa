/**
 * Whole numbers in paths and query strings, on SQLite and PostgreSQL: every integer parameter the OpenAPI
 * document lists (so parameters added later are covered too) refuses what is not a whole number written in
 * digits — "1e309" once reached PostgreSQL as Infinity and answered 500 — with a 400 sentence naming the
 * parameter, and the largest id the store can hold is an ordinary "no such run".
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MAX_RECORD_ID } from "../../src/api/schemas.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { assertErrorEnvelope, instantRuns, QUIET_SCHEDULER } from "./surface.ts";

const MISSPELLED = [
  "1e309",
  "Infinity",
  "NaN",
  "1e3",
  "1.0",
  "1.5",
  "0x10",
  "+1",
  "-1",
  " 1",
  "1 ",
  "99999999999999999999",
  "9007199254740993",
];

interface IntegerParameter {
  method: string;
  template: string;
  name: string;
  where: "path" | "query";
  minimum?: number;
  /** Valid values of the route's other path parameters (an enum's first value, or the example). */
  examples: Record<string, string>;
}

async function integerParameters(t: TestServer): Promise<IntegerParameter[]> {
  const document = (await t.request("GET", "/api/openapi.json", { keys: null })).body;
  const found: IntegerParameter[] = [];
  for (const [template, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>))
    for (const [method, operation] of Object.entries(item)) {
      const parameters =
        (
          operation as {
            parameters?: Array<{
              in: string;
              name: string;
              schema?: { type?: string; minimum?: number; enum?: unknown[]; examples?: unknown[] };
              example?: unknown;
            }>;
          }
        ).parameters ?? [];
      for (const parameter of parameters)
        if (parameter.schema?.type === "integer" && (parameter.in === "path" || parameter.in === "query"))
          found.push({
            method: method.toUpperCase(),
            template,
            name: parameter.name,
            where: parameter.in,
            minimum: parameter.schema.minimum,
            examples: Object.fromEntries(
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
  return found;
}

/** The route's path with the collection and a run filled in and `value` for `parameter`. */
function requestPath(parameter: IntegerParameter, runId: number, value: string): string {
  const path = parameter.template
    .replace("{collection_name}", "target")
    .replace(/\{([^}]+)\}/g, (_, name: string) =>
      encodeURIComponent(name === parameter.name ? value : (parameter.examples[name] ?? String(runId))),
    );
  return parameter.where === "query" ? `${path}?${parameter.name}=${encodeURIComponent(value)}` : path;
}

for (const { dialect, skip } of await dialects()) {
  describe(`whole numbers in paths and query strings, on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let runId: number;
    let parameters: IntegerParameter[];
    before(async () => {
      t = await startTestServer(dialect, QUIET_SCHEDULER, { runWork: instantRuns });
      await t.request("POST", "/api/collections", {
        body: { name: "target", seeds: [{ type: "Domain", name: "example.com" }] },
      });
      runId = Number((await t.request("POST", "/api/collections/target/schedule")).body.result.id);
      parameters = await integerParameters(t);
    });
    after(async () => t?.close());

    test("the run routes' id and the results' paging are among the integer parameters", () => {
      const names = parameters.map((p) => `${p.method} ${p.template} ${p.name}`);
      assert.ok(names.includes("GET /api/collections/{collection_name}/runs/{id} id"), names.join("\n"));
      assert.ok(names.includes("POST /api/collections/{collection_name}/runs/{id}/cancel id"));
      assert.ok(
        names.some((name) => name.endsWith(" limit")) && names.some((name) => name.endsWith(" offset")),
      );
    });

    test("anything but digits within the safe integers answers 400 naming the parameter", async () => {
      for (const parameter of parameters)
        for (const value of MISSPELLED) {
          const path = requestPath(parameter, runId, value);
          const response = await t.request(parameter.method, path);
          const context = `${parameter.method} ${path}`;
          assert.equal(response.status, 400, `${context}: ${response.text}`);
          assertErrorEnvelope(response, context);
          assert.equal(response.body.error.code, "bad_request", context);
          assert.deepEqual(
            response.body.error.details.map((d: { field: string }) => d.field),
            [parameter.name],
            context,
          );
          assert.match(
            response.body.message,
            new RegExp(`${parameter.name} must be a whole number`),
            context,
          );
        }
    });

    test("ids beyond what the store holds are refused; the largest is looked up like any other", async () => {
      const tooLarge = await t.request("GET", `/api/collections/target/runs/${MAX_RECORD_ID + 1}`);
      assert.equal(tooLarge.status, 400);
      assert.match(tooLarge.body.message, new RegExp(`id must be at most ${MAX_RECORD_ID}`));
      const largest = await t.request("GET", `/api/collections/target/runs/${MAX_RECORD_ID}`);
      assert.equal(largest.status, 404, largest.text);
      assert.equal((await t.request("GET", "/api/collections/target/runs/0")).status, 400);
      const cancelled = await t.request("POST", `/api/collections/target/runs/${MAX_RECORD_ID}/cancel`);
      assert.equal(cancelled.status, 404, cancelled.text);
      const found = await t.request("GET", `/api/collections/target/runs/${runId}`);
      assert.equal(found.status, 200, found.text);
    });
  });
}
