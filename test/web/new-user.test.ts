/**
 * The dashboard in Chromium, for what a new user missed: deleting one seed, and deleting a collection
 * behind a dialog that asks for its name.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { chromiumSkipReason, openBrowser, screenshot, signIn } from "./browser.ts";

const skip = chromiumSkipReason();

describe("deleting from the dashboard", { skip }, () => {
  let t: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
    const created = await t.request("POST", "/api/collections", {
      body: {
        name: "doomed",
        scan_rate: "on_demand",
        seeds: [
          { type: "Domain", name: "keep.example" },
          { type: "Uri", name: "https://drop.example/login" },
        ],
      },
    });
    assert.equal(created.status, 200, created.text);
    ({ browser, page } = await openBrowser());
    await signIn(page, `${t.url}/collections/doomed/seeds`, t.admin);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const seedNames = async () =>
    (await t.request("GET", "/api/collections/doomed")).body.result.seeds.map(
      (s: { name: string }) => s.name,
    );

  test("one seed is deleted from its row", async () => {
    await page.getByRole("button", { name: "Delete seed https://drop.example/login" }).click();
    await page.getByText("Deleted Uri https://drop.example/login; the collection now has 1 seed.").waitFor();
    assert.deepEqual(await seedNames(), ["keep.example"]);
  });

  test("a collection is deleted only once its name is typed in the dialog", async () => {
    await page.getByRole("button", { name: "Delete collection…" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete collection doomed" });
    await dialog.waitFor();
    const confirm = dialog.getByRole("button", { name: "Delete doomed" });
    assert.equal(await confirm.isDisabled(), true, "nothing typed: the button does nothing");
    await dialog.getByLabel("Type the collection's name to confirm").fill("doome");
    assert.equal(await confirm.isDisabled(), true, "a wrong name: still nothing");
    await dialog.getByRole("button", { name: "Keep it" }).click();
    await dialog.waitFor({ state: "hidden" });
    assert.equal((await t.request("GET", "/api/collections/doomed")).status, 200, "kept");

    await page.getByRole("button", { name: "Delete collection…" }).click();
    await dialog.getByLabel("Type the collection's name to confirm").fill("doomed");
    await screenshot(page, "80-delete-collection-dialog");
    await confirm.click();
    await page.getByText("Collection doomed was deleted with its seeds, 0 runs and results.").waitFor();
    assert.equal(new URL(page.url()).pathname, "/");
    assert.equal((await t.request("GET", "/api/collections/doomed")).status, 404);
    await page.getByText(/You have no collections yet/).waitFor();
  });
});
