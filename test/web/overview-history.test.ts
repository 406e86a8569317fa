/**
 * The overview a person opens first: tiles for hosts, services, applications, issues, criticals and the
 * last run; a trend over runs from GET …/overview/history; and no whole result list downloaded for it.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { buildRun, fixtureCounts } from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { chromiumSkipReason, openBrowser, signIn } from "./browser.ts";

describe("the overview and its history", () => {
  let t: TestServer;
  let browser: Browser | undefined;
  let runs: number[];

  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
    await t.request("POST", "/api/collections", {
      body: { name: "trend", scan_rate: "on_demand", seeds: [{ type: "Domain", name: "corp.example" }] },
    });
    const account = (await t.server.services.accounts.findAccount("default"))!;
    const row = (await t.server.services.collections.findInAccount(account.id, "trend"))!;
    runs = [];
    for (const hosts of [4, 8, 12])
      runs.push(
        await buildRun(t.server.services.store.db, { collectionId: row.id, name: "trend" }, { hosts }),
      );
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test("GET …/overview/history: the headline counts of each finished run, oldest first", async () => {
    const response = await t.request("GET", "/api/collections/trend/overview/history");
    assert.equal(response.status, 200, response.text);
    const points = response.body.result;
    assert.deepEqual(
      points.map((point: { run_id: number }) => point.run_id),
      runs,
    );
    assert.deepEqual(
      points.map((point: { hosts: number }) => point.hosts),
      [4, 8, 12].map((hosts) => fixtureCounts(hosts).IpAddress),
    );
    assert.ok(points.every((point: { critical: number; issues: number }) => point.critical <= point.issues));
    assert.match(points[0].finished_at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    const two = await t.request("GET", "/api/collections/trend/overview/history?limit=2");
    assert.deepEqual(
      two.body.result.map((point: { run_id: number }) => point.run_id),
      runs.slice(1),
    );
    assert.equal((await t.request("GET", "/api/collections/trend/overview/history?limit=0")).status, 400);
    const overview = (await t.request("GET", "/api/collections/trend/overview")).body.result;
    assert.equal(overview.top_ports[0].protocol, "tcp");
    assert.match(overview.top_ports[0].port, /^0\.\d+e\d$/);
  });

  test("the dashboard shows tiles and the trend without downloading result lists", {
    skip: chromiumSkipReason(),
  }, async () => {
    const opened = await openBrowser();
    browser = opened.browser;
    const page: Page = opened.page;
    const requested: string[] = [];
    page.on("request", (request) => requested.push(new URL(request.url()).pathname));
    await signIn(page, `${t.url}/collections/trend`, t.admin);
    const tiles = page.locator(".tiles");
    await tiles.waitFor();
    const text = await tiles.innerText();
    for (const label of ["Hosts", "Services", "Applications", "Issues", "Critical issues"])
      assert.match(text, new RegExp(`\\b${label}\\b`));
    assert.match(text, new RegExp(`finished\\s+Last run \\(${runs.at(-1)}\\)`));
    assert.doesNotMatch(text, /Seed count|Results run/);
    const trend = page.getByRole("region", { name: "Change over runs" });
    await trend.locator("svg").waitFor();
    await page.getByRole("region", { name: "Most common open ports" }).locator("svg").waitFor();
    const lists = requested.filter((path) => /\/(issues|hosts|products|applications)$/.test(path));
    assert.deepEqual(lists, [], "no whole result list for the overview");
  });
});
