/**
 * One bound for ids: every id and run_id parameter (and offset) declares 1..2^31−1 (the id columns'
 * range) in its schema, so a larger number answers 400 naming the parameter on both dialects — never a
 * 500 from PostgreSQL's integer columns, never a 404 on one dialect and something else on the other.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

const HUGE = "2147483648";
const LISTS = [
  "hosts",
  "domains",
  "netblocks",
  "recent",
  "applications",
  "issues",
  "products",
  "vulnerabilities",
  "connections",
];

/** Each request with a number beyond the bound, and the parameter the answer must name. */
const CASES: Array<{ method: string; path: string; parameter: string }> = [
  ...LISTS.map((list) => ({
    method: "GET",
    path: `/api/collections/c/${list}?run_id=${HUGE}`,
    parameter: "run_id",
  })),
  ...LISTS.slice(0, 2).map((list) => ({
    method: "GET",
    path: `/api/collections/c/${list}?offset=${HUGE}`,
    parameter: "offset",
  })),
  { method: "GET", path: `/api/collections/c/overview?run_id=${HUGE}`, parameter: "run_id" },
  { method: "GET", path: `/api/collections/c/runs/${HUGE}/diff`, parameter: "id" },
  { method: "GET", path: `/api/collections/c/runs/${HUGE}`, parameter: "id" },
  { method: "POST", path: `/api/collections/c/runs/${HUGE}/cancel`, parameter: "id" },
  { method: "DELETE", path: `/api/collections/c/webhooks/${HUGE}`, parameter: "id" },
  { method: "GET", path: `/api/collections/c/webhooks/${HUGE}/deliveries`, parameter: "id" },
  { method: "GET", path: `/api/collections/c/webhooks/1/deliveries?offset=${HUGE}`, parameter: "offset" },
];

for (const { dialect, skip } of await dialects()) {
  describe(`ids beyond 2^31 − 1 on ${dialect}`, { skip }, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600 });
      assert.equal((await t.request("POST", "/api/collections", { body: { name: "c" } })).status, 200);
    });
    after(async () => {
      await t?.close();
    });

    test("answer 400 naming the parameter on every route", async () => {
      for (const { method, path, parameter } of CASES) {
        const response = await t.request(method, path);
        assert.equal(response.status, 400, `${method} ${path}: ${response.text}`);
        const fields = (response.body.error.details ?? []).map((detail: { field: string }) => detail.field);
        assert.ok(fields.includes(parameter), `${method} ${path} names ${parameter}: ${response.text}`);
        assert.match(response.body.message, new RegExp(parameter));
      }
    });

    test("the largest id is a plain 404", async () => {
      const response = await t.request("GET", "/api/collections/c/runs/2147483647");
      assert.equal(response.status, 404, response.text);
    });

    test("the OpenAPI document declares the bound on every id, run_id and offset", async () => {
      const document = (await t.request("GET", "/api/openapi.json")).body;
      let seen = 0;
      for (const [path, methods] of Object.entries(
        document.paths as Record<
          string,
          Record<string, { parameters?: Array<{ name: string; schema: { maximum?: number } }> }>
        >,
      ))
        for (const [method, operation] of Object.entries(methods))
          for (const parameter of operation.parameters ?? [])
            if (["id", "run_id", "offset"].includes(parameter.name)) {
              seen++;
              assert.equal(parameter.schema.maximum, 2 ** 31 - 1, `${method} ${path} ${parameter.name}`);
            }
      assert.ok(seen >= 20, `ids found: ${seen}`);
    });
  });
}
