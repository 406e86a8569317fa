/**
 * One nginx behind twelve names carries the same CVE once per name. The issues list grouped by finding
 * (`?group=finding`) answers it once, in the spec's Issue shape, listing the names in `details.entities`:
 * over real HTTP on SQLite and PostgreSQL, with paging, filters, CSV, ETags and earlier runs; the
 * default list stays one item per entity. The CLI's issues table and the dashboard's issues view show
 * the grouped list ("10.250.0.1:443 — 12 names").
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser } from "playwright-core";
import { runClientCommand } from "../helpers/processes.ts";
import { SHARED_ADDRESS, SHARED_ISSUE, sharedName } from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { chromiumSkipReason, openBrowser, signIn } from "../web/browser.ts";
import { allPages, apiCollection, assertShape, ISSUE, parseCsv, runIn } from "./helpers.ts";

interface Issue {
  id: string;
  name: string;
  pretty_name: string;
  entity_type: string;
  entity_name: string;
  first_seen: string;
  last_seen: string;
  severity: string;
  details: {
    endpoint?: string;
    entities?: Array<{ entity_type: string; entity_name: string }>;
    entity_count?: number;
  };
}

const ENDPOINT = `${SHARED_ADDRESS}:443`;
const HOSTS = 8;
const names = (count: number) => Array.from({ length: count }, (_, index) => sharedName(index));
const listed = (count: number) =>
  names(count).map((name) => ({ entity_type: "Service::Entity::Uri", entity_name: name }));

/** fx: a first run where the nginx answered for six names, then one where it answers for twelve. */
async function fixture(t: TestServer) {
  const fx = await apiCollection(t, "fx");
  const first = await runIn(t, fx, { hosts: HOSTS, sharedNames: 6 });
  await runIn(t, fx, { hosts: HOSTS, sharedNames: 12 });
  return { fx, first };
}

for (const { dialect, skip } of await dialects()) {
  describe(`issues grouped by finding on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let firstRun: number;
    let all: Issue[];
    let grouped: Issue[];

    before(async () => {
      t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600 });
      firstRun = (await fixture(t)).first;
      await runIn(t, await apiCollection(t, "many"), { hosts: 0, sharedNames: 130 });
      all = (await t.request("GET", "/api/collections/fx/issues")).body.result;
      const response = await t.request("GET", "/api/collections/fx/issues?group=finding");
      assert.equal(response.status, 200, response.text);
      grouped = response.body.result;
    });
    after(async () => {
      await t?.close();
    });

    test("twelve names of one service are one item, in the spec's Issue shape, listing the twelve", () => {
      const shared = all.filter((issue) => issue.name === SHARED_ISSUE.name);
      assert.equal(shared.length, 12);
      const items = grouped.filter((issue) => issue.name === SHARED_ISSUE.name);
      assert.equal(items.length, 1);
      const item = items[0]!;
      assertShape(item, ISSUE);
      assert.equal(item.entity_name, sharedName(0), "the first entity in the list's order");
      assert.equal(item.entity_type, "Service::Entity::Uri");
      assert.equal(item.id, shared[0]!.id);
      assert.equal(item.severity, "0.2e1");
      assert.equal(item.details.endpoint, ENDPOINT);
      assert.equal(item.details.entity_count, 12);
      assert.deepEqual(item.details.entities, listed(12));
      const seen = shared.map((issue) => [issue.first_seen, issue.last_seen]);
      assert.equal(item.first_seen, seen.map(([first]) => first!).sort()[0], "the earliest first_seen");
      assert.equal(
        item.last_seen,
        seen
          .map(([, last]) => last!)
          .sort()
          .at(-1),
        "the latest last_seen",
      );
      // Every other issue of the fixture is on a service of its own: one item each, its entity listed.
      assert.equal(grouped.length, all.length - 11);
      for (const issue of grouped.filter((i) => i.name !== SHARED_ISSUE.name)) {
        assertShape(issue, ISSUE);
        assert.equal(issue.details.entity_count, 1);
        assert.deepEqual(issue.details.entities, [
          { entity_type: issue.entity_type, entity_name: issue.entity_name },
        ]);
      }
      assert.deepEqual(
        grouped.map((issue) => issue.id),
        all
          .filter((issue) => issue.name !== SHARED_ISSUE.name || issue.entity_name === sharedName(0))
          .map((i) => i.id),
        "in the list's order",
      );
    });

    test("without group the list is one item per entity, as before", () => {
      for (const issue of all) {
        assertShape(issue, ISSUE);
        assert.equal(issue.details.entities, undefined);
        assert.equal(issue.details.entity_count, undefined);
      }
      assert.deepEqual(
        all.filter((issue) => issue.name === SHARED_ISSUE.name).map((issue) => issue.entity_name),
        names(12),
      );
      assert.ok(
        all.filter((i) => i.name === SHARED_ISSUE.name).every((i) => i.details.endpoint === ENDPOINT),
      );
    });

    test("a group value other than finding is a 400 with a sentence naming the parameter", async () => {
      for (const value of ["names", "", "Finding"]) {
        const response = await t.request("GET", `/api/collections/fx/issues?group=${value}`);
        assert.equal(response.status, 400, response.text);
        assert.equal(response.body.success, false);
        assert.match(response.body.message, /group must be finding or left out\.$/);
        assert.deepEqual(
          response.body.error.details.map((d: { field: string }) => d.field),
          ["group"],
        );
      }
      const other = await t.request("GET", "/api/collections/fx/hosts?group=finding");
      assert.equal(other.status, 400, "only the issues list groups");
    });

    test("pages, filters and earlier runs apply to the grouped list", async () => {
      const paged = await allPages(t, "/api/collections/fx/issues?group=finding&limit=2");
      assert.equal(paged.total, grouped.length);
      assert.deepEqual(paged.pages.flat(), grouped);
      const second = await t.request("GET", "/api/collections/fx/issues?group=finding&limit=2&offset=1");
      assert.deepEqual(second.body.result, grouped.slice(1, 3));
      assert.equal(second.headers.get("x-total-count"), String(grouped.length));

      const high = await t.request("GET", "/api/collections/fx/issues?group=finding&severity=high");
      assert.deepEqual(
        high.body.result,
        grouped.filter((issue) => issue.severity === "0.2e1"),
      );
      // A filter narrows the findings a group is made of.
      const one = await t.request("GET", "/api/collections/fx/issues?group=finding&q=www005");
      assert.equal(one.body.result.length, 1);
      assert.equal(one.body.result[0].entity_name, sharedName(5));
      assert.deepEqual(one.body.result[0].details.entities, [listed(12)[5]]);
      assert.equal(one.body.result[0].details.entity_count, 1);

      const before = await t.request("GET", `/api/collections/fx/issues?group=finding&run_id=${firstRun}`);
      const earlier = before.body.result.filter((issue: Issue) => issue.name === SHARED_ISSUE.name);
      assert.equal(earlier.length, 1);
      assert.equal(earlier[0].details.entity_count, 6);
      assert.deepEqual(earlier[0].details.entities, listed(6));
    });

    test("CSV and NDJSON export the grouped items, and an ETag answers 304", async () => {
      const csv = await t.request("GET", "/api/collections/fx/issues?group=finding&format=csv");
      assert.equal(csv.status, 200, csv.text);
      const [header, ...rows] = parseCsv(csv.text);
      assert.deepEqual(header, Object.keys(ISSUE));
      assert.equal(rows.length, grouped.length);
      const details = JSON.parse(
        rows.find((row) => row[1] === SHARED_ISSUE.name)![header!.indexOf("details")]!,
      );
      assert.equal(details.entity_count, 12);
      assert.equal(details.entities.length, 12);
      const ndjson = await t.request("GET", "/api/collections/fx/issues?group=finding&format=ndjson");
      assert.deepEqual(
        ndjson.text
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line)),
        grouped,
      );

      const first = await t.request("GET", "/api/collections/fx/issues?group=finding");
      const etag = first.headers.get("etag");
      assert.ok(etag);
      const plain = await t.request("GET", "/api/collections/fx/issues");
      assert.notEqual(plain.headers.get("etag"), etag, "the grouped list is another answer");
      const again = await t.request("GET", "/api/collections/fx/issues?group=finding", {
        headers: { "if-none-match": etag },
      });
      assert.equal(again.status, 304);
    });

    test("a group lists its first 100 entities and counts them all", async () => {
      const response = await t.request("GET", "/api/collections/many/issues?group=finding");
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.result.length, 1);
      const [item] = response.body.result;
      assert.equal(item.details.entity_count, 130);
      assert.deepEqual(item.details.entities, listed(100));
      assert.equal(response.headers.get("x-total-count"), "1");
    });
  });
}

describe("the CLI and the dashboard list a finding seen through twelve names once", () => {
  let t: TestServer;
  let home: string;
  let browser: Browser | undefined;

  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
    home = mkdtempSync(join(tmpdir(), "sightline-groups-"));
    await fixture(t);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test("sightline results <collection> issues: one line for the nginx CVE, on its service with 12 names", async () => {
    const table = await runClientCommand(t, home, ["results", "fx", "issues"]);
    assert.equal(table.code, 0, table.output);
    const lines = table.output.split("\n").filter((line) => line.includes("CVE-2021-23017"));
    assert.equal(lines.length, 1, table.output);
    assert.match(lines[0]!, new RegExp(`${ENDPOINT} — 12 names: www000\\.shared\\.example \\(\\+11\\)`));
    const wide = await runClientCommand(t, home, ["results", "fx", "issues", "--wide"]);
    assert.equal(wide.code, 0, wide.output);
    assert.equal(
      wide.output.split("\n").filter((line) => line.includes("CVE-2021-23017")).length,
      12,
      "--wide keeps one line per entity",
    );
  });

  test("the dashboard's issues view: one row on the service with 12 names, the names in its dialog", {
    skip: chromiumSkipReason(),
  }, async () => {
    const opened = await openBrowser();
    browser = opened.browser;
    const { page } = opened;
    await signIn(page, `${t.url}/collections/fx/issues`, t.admin);
    const rows = page.locator(".section-body tbody tr", { hasText: "CVE-2021-23017" });
    await rows.first().waitFor();
    assert.equal(await rows.count(), 1);
    assert.match(await rows.first().innerText(), new RegExp(`${ENDPOINT} — 12 names`));
    await rows.first().getByRole("button").first().click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText(`Seen through 12 names of ${ENDPOINT}`).waitFor();
    const text = await dialog.innerText();
    for (const name of names(12)) assert.ok(text.includes(name), name);
    // The names a row covers are found by the table's filter.
    await dialog.getByRole("button", { name: /close/i }).first().click();
    await page.getByLabel("Filter issues").fill("www007.shared");
    await page.locator(".section-body tbody tr", { hasText: `${ENDPOINT} — 12 names` }).waitFor();
  });
});
