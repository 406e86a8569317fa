/**
 * Result views a new user found wanting, in Chromium: the applications' "In scope" column, the KEV flag
 * of vulnerabilities and their Name column showing each CVE's title, runs-page texts that match the
 * collection's scan rate, and a host with no open port saying which ports its run tried.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { buildRun } from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { force, waitForRun } from "../runs/helpers.ts";
import { chromiumSkipReason, openBrowser, signIn } from "./browser.ts";

describe("result views", { skip: chromiumSkipReason() }, () => {
  let t: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600, scanAllow: ["127.77.0.0/16"] });
    for (const [name, scanRate] of [
      ["fx", "on_demand"],
      ["auto", "auto"],
    ])
      await t.request("POST", "/api/collections", {
        body: { name, scan_rate: scanRate, seeds: [{ type: "Domain", name: "corp.example" }] },
      });
    const account = (await t.server.services.accounts.findAccount("default"))!;
    const row = (await t.server.services.collections.findInAccount(account.id, "fx"))!;
    await buildRun(t.server.services.store.db, { collectionId: row.id, name: "fx" }, { hosts: 8 });
    ({ browser, page } = await openBrowser());
    await signIn(page, `${t.url}/collections/fx/applications`, t.admin);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test("applications say whether they are in scope", async () => {
    const header = page.locator(".section-body thead th");
    await header.first().waitFor();
    const headers = await header.allInnerTexts();
    const column = headers.findIndex((text) => /In scope/.test(text));
    assert.ok(column >= 0, headers.join(" | "));
    const cells = await page.locator(`.section-body tbody tr td:nth-child(${column + 1})`).allInnerTexts();
    assert.ok(cells.length > 0 && cells.every((cell) => cell === "yes" || cell === "no"), cells.join(","));
  });

  test("vulnerabilities listed by CISA KEV are flagged", async () => {
    const vulnerabilities = (await t.request("GET", "/api/collections/fx/vulnerabilities")).body.result;
    const kev = vulnerabilities.filter((v: { exploits: unknown[] }) => v.exploits.length > 0);
    assert.ok(kev.length > 0 && kev.length < vulnerabilities.length, "some are in KEV, some are not");
    await page.goto(`${t.url}/collections/fx/vulnerabilities`);
    await page.locator(".section-body tbody tr").first().waitFor();
    assert.ok(await page.getByRole("columnheader", { name: /Known exploited/ }).count());
    assert.equal(await page.locator(".section-body tbody tr", { hasText: "KEV" }).count(), kev.length);
  });

  test("the vulnerabilities' Name column shows each CVE's title, not its identifier", async () => {
    const vulnerabilities = (await t.request("GET", "/api/collections/fx/vulnerabilities")).body.result;
    await page.goto(`${t.url}/collections/fx/vulnerabilities`);
    await page.locator(".section-body tbody tr").first().waitFor();
    const headers = await page.locator(".section-body thead th").allInnerTexts();
    const column = headers.findIndex((text) => /^Name/.test(text.trim()));
    assert.ok(column >= 0, headers.join(" | "));
    const cells = await page.locator(`.section-body tbody tr td:nth-child(${column + 1})`).allInnerTexts();
    const titles = vulnerabilities.map((v: { name: string }) => v.name);
    assert.deepEqual(cells.map((cell) => cell.trim()).sort(), [...titles].sort());
    assert.ok(
      cells.every((cell) => !/^cve_\d/.test(cell)),
      cells.join(","),
    );
  });

  test("the runs page speaks of the schedule only for collections that have one", async () => {
    await page.goto(`${t.url}/collections/auto/runs`);
    await page
      .getByText("No runs yet. The first automatic run starts within a minute, or start one now.")
      .waitFor();
    await page.goto(`${t.url}/collections/fx/runs`);
    await page.locator("tbody tr").first().waitFor();
    await t.request("POST", "/api/collections", { body: { name: "quiet", scan_rate: "on_demand" } });
    await page.goto(`${t.url}/collections/quiet/runs`);
    await page.getByText("No runs yet. This collection runs only when asked: start one now.").waitFor();
  });

  test("a host with no open port says which ports the run tried", async () => {
    // A real run of the collection's own profile: two ports where nothing listens on a loopback address.
    const created = await t.request("POST", "/api/collections", {
      body: {
        name: "lone-host",
        scan_rate: "on_demand",
        seeds: [{ type: "IpAddress", name: "127.77.0.9" }],
        scan_profile: { preset: "quick", ports: "1,9" },
      },
    });
    assert.equal(created.status, 200, created.text);
    const id = await force(t, "lone-host");
    const run = await waitForRun(t, "lone-host", id, "finished", "failed");
    assert.equal(run.status, "finished", run.error);
    await page.goto(`${t.url}/collections/lone-host/hosts`);
    const row = page.locator("tbody tr", { hasText: "127.77.0.9" });
    await row.getByText("none open among 1,9").waitFor();
  });

  test("the hosts filter searches the open ports, a select keeps hosts with open ports, and both live in the address", async () => {
    const hosts = (await t.request("GET", "/api/collections/fx/hosts")).body.result as Record<
      string,
      { ports: Array<{ number: string; protocol: string }> }
    >;
    const withSsh = Object.values(hosts).filter((host) =>
      host.ports.some((port) => port.number === "0.22e2"),
    ).length;
    assert.ok(withSsh > 0 && withSsh < Object.keys(hosts).length);
    await page.goto(`${t.url}/collections/fx/hosts`);
    await page.getByLabel("Filter hosts").fill("22/tcp");
    await page.getByText(`Showing 1–${withSsh} of ${withSsh} hosts`).waitFor();
    await page.waitForURL(/[?&]q=22%2Ftcp/);
    await page.reload();
    assert.equal(
      await page.getByLabel("Filter hosts").inputValue(),
      "22/tcp",
      "the filter came back from the address",
    );
    await page.getByText(`Showing 1–${withSsh} of ${withSsh} hosts`).waitFor();

    await page.getByLabel("Filter hosts").fill("");
    await page.getByLabel("Open ports").selectOption("with open ports");
    const all = Object.keys(hosts).length;
    await page.getByText(`Showing 1–${Math.min(all, 25)} of ${all} hosts`).waitFor();
    await page.waitForURL(/[?&]f\.ports=with\+open\+ports/);

    await page.goto(`${t.url}/collections/lone-host/hosts?f.ports=no+open+port`);
    assert.equal(await page.getByLabel("Open ports").inputValue(), "no open port");
    await page.locator("tbody tr", { hasText: "127.77.0.9" }).waitFor();
  });

  test("the issues' severity choices read as words", async () => {
    await page.goto(`${t.url}/collections/fx/issues`);
    // The choices come with the first page of issues: wait for them before reading.
    await page.getByLabel("Severity").locator("option").nth(1).waitFor({ state: "attached" });
    const options = await page.getByLabel("Severity").locator("option").allInnerTexts();
    assert.ok(options.length > 1, options.join(", "));
    for (const option of options.slice(1)) assert.match(option, /^(critical|high|medium|low|informational)$/);
  });
});
