/**
 * URLs are stored as parsed: webhook URLs and Uri seeds are normalised with the WHATWG URL parser;
 * control characters and credentials are refused with a 400 naming the field; zone ids are refused for
 * address seeds. On both dialects (a NUL byte once answered 500 on PostgreSQL and was stored on SQLite).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

for (const { dialect, skip } of await dialects()) {
  describe(`URLs stored as parsed, on ${dialect}`, { skip }, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600, webhookAllow: ["127.0.0.1"] });
      assert.equal((await t.request("POST", "/api/collections", { body: { name: "u" } })).status, 200);
    });
    after(async () => {
      await t?.close();
    });

    test("webhook URLs with control characters or credentials: 400 naming url", async () => {
      for (const url of [
        "http://127.0.0.1/\u0000",
        "http://127.0.0.1/a\r\nX-Injected: 1",
        "http://127.0.0.1/\tx",
        "http://user:pass@127.0.0.1/",
        "http://user@127.0.0.1/",
      ]) {
        const response = await t.request("POST", "/api/collections/u/webhooks", { body: { url } });
        assert.equal(response.status, 400, `${JSON.stringify(url)}: ${response.text}`);
        assert.equal(response.body.error.details[0].field, "url", response.text);
      }
      const listed = await t.request("GET", "/api/collections/u/webhooks");
      assert.deepEqual(listed.body.result, [], "nothing was stored");
    });

    test("a webhook URL is stored and answered as parsed", async () => {
      const response = await t.request("POST", "/api/collections/u/webhooks", {
        body: { url: "HTTP://127.0.0.1:80/a/../b?x=1#fragment" },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.result.url, "http://127.0.0.1/b?x=1");
      const listed = await t.request("GET", "/api/collections/u/webhooks");
      assert.equal(listed.body.result[0].url, "http://127.0.0.1/b?x=1");
    });

    test("Uri seeds: credentials and control characters refused, the rest normalised", async () => {
      for (const [name, says] of [
        ["https://user:pass@example.com/", /user name or password/],
        ["https://admin@example.com/", /user name or password/],
        ["https://example.com/\u0000", /control character/],
        ["https://exa\tmple.com/", /control character/],
      ] as const) {
        const response = await t.request("POST", "/api/collections/u", {
          body: { seeds: [{ type: "Uri", name }] },
        });
        assert.equal(response.status, 400, `${JSON.stringify(name)}: ${response.text}`);
        assert.match(response.body.message, says);
      }
      const added = await t.request("POST", "/api/collections/u", {
        body: { seeds: [{ type: "Uri", name: "HTTPS://WWW.Example.COM:443/a/./b#top" }] },
      });
      assert.equal(added.status, 200, added.text);
      const collection = await t.request("GET", "/api/collections/u");
      const uris = collection.body.result.seeds.filter((seed: { type: string }) => seed.type === "Uri");
      assert.deepEqual(
        uris.map((seed: { name: string }) => seed.name),
        ["https://www.example.com/a/b"],
      );
    });

    test("zone ids are refused for IpAddress and NetBlock seeds", async () => {
      for (const seed of [
        { type: "IpAddress", name: "fe80::1%eth0" },
        { type: "IpAddress", name: "fe80::1%25eth0" },
        { type: "NetBlock", name: "fe80::%eth0/64" },
      ]) {
        const response = await t.request("POST", "/api/collections/u", { body: { seeds: [seed] } });
        assert.equal(response.status, 400, `${JSON.stringify(seed)}: ${response.text}`);
        assert.match(response.body.message, /zone id/);
      }
    });
  });
}
