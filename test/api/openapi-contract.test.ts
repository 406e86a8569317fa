/**
 * The OpenAPI document says what the server does (issue 19, item 10): /healthz is public
 * (`security: []`); every id, run_id and offset declares its maximum; the 403 of POST
 * /api/collections/{name} is documented; a seed's type is an enum and its name has a minimum length; a
 * webhook url has a format; and a method a path does not answer is a 405 with an Allow header (an
 * unknown path stays a 404, and without keys an /api path stays a 401).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../helpers/server.ts";

describe("the OpenAPI document matches the server", () => {
  let t: TestServer;
  // biome-ignore lint/suspicious/noExplicitAny: the document as JSON
  let document: any;
  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
    assert.equal((await t.request("POST", "/api/collections", { body: { name: "c" } })).status, 200);
    document = (await t.request("GET", "/api/openapi.json")).body;
  });
  after(async () => {
    await t?.close();
  });

  test("/healthz is public in the document, as it is on the server", async () => {
    assert.deepEqual(document.paths["/healthz"].get.security, []);
    assert.equal((await t.request("GET", "/healthz", { keys: null })).status, 200);
  });

  test("POST /api/collections/{name} documents its 403, and answers it for a team not yours", async () => {
    assert.ok(document.paths["/api/collections/{collection_name}"].post.responses["403"]);
    const response = await t.request("POST", "/api/collections/c", { body: { team_id: 999 } });
    assert.equal(response.status, 403, response.text);
  });

  test("seed type is an enum, seed name has a minimum length, webhook url a format", () => {
    const body = (document.paths["/api/collections"] ?? document.paths["/api/collections/"]).post.requestBody
      .content["application/json"].schema;
    const seed = body.properties.seeds.items;
    assert.deepEqual(seed.properties.type.enum, [
      "Domain",
      "DnsRecord",
      "IpAddress",
      "Nameserver",
      "NetBlock",
      "Uri",
    ]);
    assert.equal(seed.properties.name.minLength, 1);
    assert.equal(body.properties.name.minLength, 1);
    const webhook =
      document.paths["/api/collections/{collection_name}/webhooks"].post.requestBody.content[
        "application/json"
      ].schema;
    assert.equal(webhook.properties.url.format, "uri");
  });

  test("a method a path does not answer: 405 with Allow; an unknown path: 404; no keys: 401", async () => {
    for (const [method, path, allow] of [
      ["PUT", "/api/collections/c", "DELETE, GET, HEAD, POST"],
      ["PUT", "/api/collections/", "GET, HEAD, POST"],
      ["POST", "/api/teams/", "GET, HEAD"],
      ["PATCH", "/api/collections/c/runs/1", "GET, HEAD"],
      ["POST", "/healthz", "GET, HEAD"],
    ]) {
      const response = await t.request(method, path);
      assert.equal(response.status, 405, `${method} ${path}: ${response.text}`);
      assert.equal(response.headers.get("allow"), allow, `${method} ${path}`);
      assert.equal(response.body.success, false);
      assert.equal(response.body.error.code, "method_not_allowed");
      assert.match(response.body.message, /does not answer/);
    }
    assert.equal((await t.request("DELETE", "/api/nothing/here")).status, 404);
    assert.equal((await t.request("PUT", "/api/collections/c", { keys: null })).status, 401);
  });
});
