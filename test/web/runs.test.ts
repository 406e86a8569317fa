/**
 * The runs page in Chromium against a real server whose runs do test work (one task per seed, three
 * more from each, held until the test lets them go): run now, live progress to finished, cancel.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { TestWork } from "../runs/fixtures/test-work.ts";
import { chromiumSkipReason, openBrowser, screenshot, signIn } from "./browser.ts";

const skip = chromiumSkipReason();

describe("runs page in Chromium", { skip }, () => {
  let t: TestServer;
  let work: TestWork;
  let browser: Browser;
  let page: Page;

  before(async () => {
    t = await startTestServer(
      "sqlite",
      {},
      {
        runWork: (services) => {
          work = new TestWork(services, { fanout: 3 });
          return work;
        },
      },
    );
    const created = await t.request("POST", "/api/collections", {
      body: {
        name: "acme",
        seeds: [
          { type: "Domain", name: "acme.example" },
          { type: "IpAddress", name: "192.0.2.10" },
        ],
      },
    });
    assert.equal(created.status, 200, created.text);
    ({ browser, page } = await openBrowser());
    await signIn(page, `${t.url}/collections/acme/runs`, t.admin);
  });
  after(async () => {
    work?.release();
    await browser?.close();
    await t?.close();
  });

  const row = (id: number) =>
    page.locator("tbody tr", { has: page.getByRole("button", { name: `Run ${id}`, exact: true }) });

  test("before any run the page says so", async () => {
    await page.getByText("No runs yet.").waitFor();
  });

  test("run now shows the run, its progress while it works, and finished when done", async () => {
    work.hold();
    const started = work.nextStart();
    await page.getByRole("button", { name: "Run now" }).click();
    await page.getByText("Run 1 has been scheduled.").waitFor();
    await started;
    await row(1).getByText("started", { exact: true }).waitFor();
    await row(1).getByText("0 of 2 tasks").waitFor();
    assert.equal(await row(1).locator("progress").getAttribute("max"), "2");
    await page.getByText(/Updating every 2 seconds/).waitFor();
    await screenshot(page, "10-run-in-progress");

    work.release();
    await row(1).getByText("finished", { exact: true }).waitFor();
    await row(1).getByText("8 of 8 tasks").waitFor();
    await page.getByText("Run 1 finished. Its results are in the overview and the sections above.").waitFor();
    assert.match(await row(1).innerText(), /forced/);
    assert.equal(
      await row(1)
        .getByRole("button", { name: /Cancel/ })
        .count(),
      0,
      "a finished run cannot be cancelled",
    );
    await screenshot(page, "11-run-finished");
  });

  test("a second run now while one works answers that run; cancel stops it with its reason", async () => {
    work.hold();
    const started = work.nextStart();
    await page.getByRole("button", { name: "Run now" }).click();
    await page.getByText("Run 2 has been scheduled.").waitFor();
    await started;
    await row(2).getByText("started", { exact: true }).waitFor();
    await page.getByRole("button", { name: "Run now" }).click();
    await page.getByText("Run 2 is already under way; it is shown below.").waitFor();

    await row(2).getByRole("button", { name: "Cancel run 2" }).click();
    await page.getByText("Run 2 has been cancelled.").waitFor();
    await row(2).getByText("cancelled", { exact: true }).waitFor();
    await row(2).getByText("Cancelled by admin.").waitFor();
    work.release();
    const runs = await t.request("GET", "/api/collections/acme/runs");
    assert.deepEqual(
      runs.body.result.map((run: { id: number; status: string }) => `${run.id} ${run.status}`),
      ["2 cancelled", "1 finished"],
    );
    await screenshot(page, "12-run-cancelled");
  });

  test("a run's row opens its details", async () => {
    await page.getByRole("button", { name: "Run 2", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "Run 2" });
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /Cancelled by admin\./);
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    assert.equal(await page.locator(":focus").innerText(), "Run 2", "focus returns to the row");
  });

  test("the collection list shows the latest run", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Collections" }).click();
    const listed = page.locator("tbody tr", { hasText: "acme" });
    await listed.getByText("cancelled", { exact: true }).waitFor();
  });
});
