/**
 * The export endpoint, called the way the hosted service's integrations call it: a client written to
 * the contract (any status but 200 is an error; it reads `result.items`; it appends base64 of
 * `JSON.stringify(last_evaluated_key)` to the URL) pages through a collection of over 10,000 entities on
 * SQLite and PostgreSQL without a duplicate or a gap, also while another run finishes half-way.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseDecimalExponent } from "../../src/core/formats.ts";
import {
  applicationName,
  type FixtureCollection,
  fixtureCounts,
  ip,
  issueOf,
} from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { APPLICATION, apiCollection, assertShape, HOST, ISSUE, runIn } from "./helpers.ts";

/** 1,700 hosts: 10,200 entities of five kinds and 7 netblocks (see result-fixtures.ts). */
const HOSTS = 1700;
const truth = fixtureCounts(HOSTS);
const ENTITIES = truth.IpAddress + truth.DnsRecord + truth.NetworkService + truth.Uri + truth.NetBlock;

/** The contract's client, as an integration writes it: nothing but the URL, the keys and `result.items`. */
async function exportAll(
  t: TestServer,
  collection: string,
  itemType: string,
  fromDate: string,
  options: { onPage?: (page: number) => Promise<void>; tokens?: string[] } = {},
) {
  const base = `${t.url}/api/collections/${collection}/export/${itemType}/from_date/${fromDate}/`;
  const items: Array<Record<string, unknown>> = [];
  let token = "";
  for (let page = 0; page < 1000; page++) {
    const response = await fetch(base + token, {
      headers: { SERVICE_ACCESS_KEY: t.admin.accessKey, SERVICE_SECRET_KEY: t.admin.secretKey },
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`export answered ${response.status}: ${text}`);
    const { result } = JSON.parse(text);
    items.push(...result.items);
    if (!result.more_results) return items;
    token = Buffer.from(JSON.stringify(result.last_evaluated_key)).toString("base64");
    options.tokens?.push(token);
    await options.onPage?.(page);
  }
  throw new Error("the export did not end within 1000 pages");
}

const ids = (items: Array<Record<string, unknown>>) => items.map((item) => item.id as string);

function assertNoDuplicate(values: string[]) {
  const seen = new Set<string>();
  for (const value of values) {
    assert.ok(!seen.has(value), `${value} is exported twice`);
    seen.add(value);
  }
}

/** The ids the recent list names (the first run saw everything for the first time). */
async function recentIds(t: TestServer, collection: string) {
  const response = await t.request("GET", `/api/collections/${collection}/recent`);
  assert.equal(response.status, 200, response.text);
  return (response.body.result as Array<{ type: string; name: string }>).map((e) => `${e.type}#${e.name}`);
}

for (const { dialect, skip } of await dialects()) {
  describe(`export on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let big: FixtureCollection;
    let small: FixtureCollection;
    let smallRun: number;
    const today = new Date().toISOString().slice(0, 10);

    before(async () => {
      t = await startTestServer(dialect, { host: "127.120.0.1" });
      big = await apiCollection(t, "big");
      small = await apiCollection(t, "small");
      await runIn(t, big, { hosts: HOSTS });
      smallRun = await runIn(t, small, { hosts: 40 });
    });
    after(() => t?.close());

    test("a contract client pages through 10,000 entities without a duplicate or a gap", async () => {
      const tokens: string[] = [];
      const items = await exportAll(t, "big", "entities", "2000-01-01", { tokens });
      assert.ok(ENTITIES >= 10000, `the fixture has ${ENTITIES} entities`);
      assert.equal(items.length, ENTITIES);
      assertNoDuplicate(ids(items));
      assert.deepEqual(ids(items).sort(), (await recentIds(t, "big")).sort());
      assert.equal(tokens.length, Math.ceil(ENTITIES / 1000) - 1, "pages of 1000");
      for (const item of items.slice(0, 50))
        assertShape(item, {
          id: "string",
          uid: "string",
          type: "string",
          name: "string",
          collection: "string",
          hidden: "boolean",
          scoped: "boolean",
          scoped_reason: "string",
          first_seen: "timestamp",
          last_seen: "timestamp",
          issue_count: "decimal",
          vuln_count: "decimal",
        });
      assertNoDuplicate(items.map((item) => item.uid as string));
    });

    test("entities carry their issue and CVE counts", async () => {
      const items = await exportAll(t, "small", "entities", today);
      const byId = new Map(items.map((item) => [item.id, item]));
      let withIssue = 0;
      let withCves = 0;
      for (let host = 0; host < 40; host++)
        for (const port of [80, 443]) {
          const item = byId.get(`Service::Entity::Uri#${applicationName(host, port)}`);
          assert.ok(item, applicationName(host, port));
          assert.equal(item.collection, "small");
          const issues = parseDecimalExponent(item.issue_count as string);
          assert.equal(issues, issueOf(host, port) ? 1 : 0, `${item.id} issue_count`);
          withIssue += issues;
          withCves += parseDecimalExponent(item.vuln_count as string) > 0 ? 1 : 0;
        }
      assert.ok(withIssue > 0 && withCves > 0, `${withIssue} with an issue, ${withCves} with CVEs`);
      const address = byId.get(`Service::Entity::IpAddress#${ip(3)}`)!;
      assert.equal(address.issue_count, "0.0");
    });

    test("issues, applications and hosts in their result shapes, each with a stable id", async () => {
      const shapes = {
        issues: ISSUE,
        applications: { ...APPLICATION, id: "string" },
        hosts: { ...HOST, id: "string", ip: "string" },
      };
      for (const [type, shape] of Object.entries(shapes)) {
        const items = await exportAll(t, "big", `${type}`, "2000-01-01");
        const list = await t.request("GET", `/api/collections/big/${type}`);
        const expected = type === "hosts" ? Object.keys(list.body.result) : list.body.result;
        assert.equal(items.length, expected.length, type);
        assertNoDuplicate(ids(items));
        for (const item of items.slice(0, 20)) assertShape(item, shape, type);
        if (type === "hosts") assert.deepEqual(items.map((item) => item.ip).sort(), [...expected].sort());
      }
      // Small pages of issues (their keyset is four columns) still neither repeat nor skip.
      const paged = await exportAll(t, "big", "issues", "2000-01-01", {}).then(ids);
      const small = [] as string[];
      const base = `/api/collections/big/export/issues/from_date/2000-01-01/`;
      let token = "";
      for (let page = 0; page < 200; page++) {
        const response = await t.request("GET", `${base}${token}?limit=7`);
        assert.equal(response.status, 200, response.text);
        small.push(...ids(response.body.result.items));
        if (!response.body.result.more_results) break;
        token = Buffer.from(JSON.stringify(response.body.result.last_evaluated_key)).toString("base64");
      }
      assert.deepEqual(small, paged);
    });

    test("pages read the run the first page read while another run finishes", async () => {
      const before = ids(await exportAll(t, "small", "entities", "2000-01-01"));
      let during: string[] = [];
      let secondRun = 0;
      const tokens: string[] = [];
      // Pages of 100: the second run finishes after the first page.
      const base = `/api/collections/small/export/entities/from_date/2000-01-01/`;
      let token = "";
      for (let page = 0; page < 100; page++) {
        const response = await t.request("GET", `${base}${token}?limit=25`);
        assert.equal(response.status, 200, response.text);
        during.push(...ids(response.body.result.items));
        if (!response.body.result.more_results) break;
        token = Buffer.from(JSON.stringify(response.body.result.last_evaluated_key)).toString("base64");
        tokens.push(token);
        if (page === 0) secondRun = await runIn(t, small, { hosts: 40, present: (host) => host % 3 !== 0 });
      }
      assert.ok(secondRun > smallRun);
      assert.deepEqual(during, before, "the export kept reading the first run");
      during = ids(await exportAll(t, "small", "entities", "2000-01-01"));
      assert.ok(during.length < before.length, "a new export reads the new run");
      assert.ok(!during.includes(`Service::Entity::IpAddress#${ip(3)}`));
    });

    test("from_date keeps what was last seen on or after that day", async () => {
      const everything = await exportAll(t, "big", "hosts", "2000-01-01");
      const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
      assert.equal((await exportAll(t, "big", "hosts", today)).length, everything.length);
      assert.equal((await exportAll(t, "big", "hosts", tomorrow)).length, 0);
      // Ten addresses last seen long ago (as if a run in 2020 had been their last sighting).
      const old = Array.from({ length: 10 }, (_, i) => ip(i));
      await t.server.services.store.db
        .updateTable("entities")
        .set({ last_seen: "2020-06-01T12:00:00.000Z" })
        .where("collection_id", "=", big.collectionId)
        .where("kind", "=", "IpAddress")
        .where("name", "in", old)
        .execute();
      const since2021 = await exportAll(t, "big", "hosts", "2021-01-01");
      assert.equal(since2021.length, everything.length - old.length);
      assert.ok(!since2021.some((item) => old.includes(item.ip as string)));
      const since2020 = await exportAll(t, "big", "hosts", "2020-06-01");
      assert.equal(since2020.length, everything.length);
      const entities = await exportAll(t, "big", "entities", "2020-06-02");
      assert.equal(entities.length, ENTITIES - old.length);
    });

    test("a token may hold / + and =: the route takes the rest of the path", async () => {
      const first = await t.request(
        "GET",
        "/api/collections/small/export/entities/from_date/2000-01-01?limit=1",
      );
      const key = first.body.result.last_evaluated_key;
      // A name chosen so that the token has every character standard base64 adds to the URL-safe set.
      let name = "";
      let token = "";
      for (let n = 0; n < 500 && !/\/.*\+|\+.*\//.test(token); n++) {
        name = `~~?>${"?".repeat(n % 7)}${n}`;
        token = Buffer.from(JSON.stringify({ ...key, kind: "DnsRecord", name })).toString("base64");
      }
      assert.match(token, /\//);
      assert.match(token, /\+/);
      const answer = await t.request(
        "GET",
        `/api/collections/small/export/entities/from_date/2000-01-01/${token}`,
      );
      assert.equal(answer.status, 200, answer.text);
      // Everything after DnsRecord "~~?>…" in (kind, name) order: the IpAddress, NetBlock, … kinds.
      assert.ok(answer.body.result.items.length > 0);
      assert.ok(
        answer.body.result.items.every((item: { type: string }) => item.type > "Service::Entity::DnsRecord"),
      );
    });

    test("bad dates, types and tokens answer 400 with a sentence", async () => {
      const cases: Array<[string, RegExp]> = [
        ["entities/from_date/2026-02-30", /from_date "2026-02-30" is not a date; write it as YYYY-MM-DD/],
        ["entities/from_date/2026-1-5", /from_date.*YYYY-MM-DD/],
        ["entities/from_date/yesterday", /from_date.*YYYY-MM-DD/],
        ["widgets/from_date/2026-01-01", /item_type must be one of entities, issues, applications, hosts/],
        ["entities/from_date/2026-01-01/!!!notbase64", /page token is not base64/],
        [`entities/from_date/2026-01-01/${Buffer.from("not json").toString("base64")}`, /page token/],
        [
          `issues/from_date/2026-01-01/${Buffer.from(JSON.stringify({ item_type: "entities", run_id: 1, kind: "Uri", name: "x" })).toString("base64")}`,
          /page token was given by the entities export, not the issues export/,
        ],
        [
          `entities/from_date/2026-01-01/${Buffer.from(JSON.stringify({ item_type: "entities", run_id: 99999, kind: "Uri", name: "x" })).toString("base64")}`,
          /reads run 99999, which is not a finished run of collection "small"; start again/,
        ],
        ["entities/from_date/2026-01-01?limit=0", /limit/],
        ["entities/from_date/2026-01-01?other=1", /other/],
      ];
      for (const [path, message] of cases) {
        const response = await t.request("GET", `/api/collections/small/export/${path}`);
        assert.equal(response.status, 400, `${path}: ${response.text}`);
        assert.equal(response.body.success, false);
        assert.equal(response.body.result, null);
        assert.match(response.body.message, message, path);
      }
      const unknown = await t.request("GET", "/api/collections/nope/export/entities/from_date/2026-01-01");
      assert.equal(unknown.status, 404);
      const noKeys = await t.request("GET", "/api/collections/small/export/entities/from_date/2026-01-01", {
        keys: null,
      });
      assert.equal(noKeys.status, 401);
    });

    test("a collection without a finished run exports nothing", async () => {
      await apiCollection(t, "empty");
      const response = await t.request("GET", "/api/collections/empty/export/hosts/from_date/2000-01-01");
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, {
        success: true,
        message: "success",
        result: { items: [], more_results: false, last_evaluated_key: null },
      });
    });

    test("the OpenAPI document describes the export with its page token", async () => {
      const doc = (await t.request("GET", "/api/openapi.json", { keys: null })).body;
      const first = doc.paths["/api/collections/{collection_name}/export/{item_type}/from_date/{from_date}"];
      const next =
        doc.paths["/api/collections/{collection_name}/export/{item_type}/from_date/{from_date}/{page_token}"];
      assert.ok(first?.get, "the first page");
      assert.ok(next?.get, "the next pages");
      const names = next.get.parameters.map((p: { name: string }) => p.name);
      assert.ok(names.includes("page_token"), names.join());
      const result = first.get.responses["200"].content["application/json"].schema.properties.result;
      assert.deepEqual(Object.keys(result.properties).sort(), [
        "items",
        "last_evaluated_key",
        "more_results",
      ]);
    });
  });
}
