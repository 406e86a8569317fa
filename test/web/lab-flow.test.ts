/**
 * The whole path a person takes, in Chromium, against a real server whose runs do real discovery on the
 * lab (a fake internet on loopback): create a collection, run it, watch the progress reach finished,
 * then read what was found — hosts, domains with their records and certificates, netblocks, recent.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { type Lab, startLab } from "../lab/index.ts";
import { chromiumSkipReason, openBrowser, screenshot, signIn } from "./browser.ts";

const skip = chromiumSkipReason();

describe("a discovery run of the lab, from the dashboard", { skip }, () => {
  let lab: Lab;
  let t: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    lab = await startLab();
    t = await startTestServer("sqlite", {
      dnsServers: [lab.resolver],
      scanAllow: ["127.0.0.0/8"],
      timeoutMs: 1000,
    });
    ({ browser, page } = await openBrowser(15_000));
    await signIn(page, `${t.url}/collections/new`, t.admin);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await lab?.stop();
  });

  const section = () => page.locator(".section-body");

  test("a collection seeded with the lab's domain runs to finished, with its progress shown on the way", async () => {
    await page.getByLabel("Name").fill("lab");
    await page.getByLabel("Seeds, one per line").fill("acme.test\nopen.test");
    await page.getByRole("button", { name: "Create collection" }).click();
    await page.getByText(/The collection was created with 2 seeds/).waitFor();
    await page.getByRole("button", { name: "Run now" }).click();
    await page.getByText("Run 1 has been scheduled.").waitFor();
    assert.equal(new URL(page.url()).search, "", "the note about creating it goes once the run is asked for");
    const run = page.locator("tbody tr").first();
    // Progress is polled: the task count shows while the run works, and the badge ends on finished.
    await run.getByText(/\d+ of \d+ tasks/).waitFor();
    await run.getByText("finished", { exact: true }).waitFor({ timeout: 120_000 });
    const [done, total] = (await run.getByText(/\d+ of \d+ tasks/).innerText())
      .match(/[\d,]+/g)!
      .map((n) => Number(n.replace(/,/g, "")));
    assert.ok(total > 10 && done === total, `a finished run did all its tasks: ${done} of ${total}`);
    await screenshot(page, "20-lab-run-finished");
  });

  test("hosts list every lab address with its open ports; a host opens its details", async () => {
    await page.getByRole("link", { name: "Hosts", exact: true }).click();
    await section().locator("tbody tr").first().waitFor();
    const www = lab.truth.hosts.find((host) => host.names.includes("www.acme.test"))!;
    const row = section().locator("tbody tr", { hasText: www.ip });
    const ports = await row.locator("td").first().innerText();
    for (const port of www.ports)
      assert.match(ports, new RegExp(`\\b${port}/tcp`), `port ${port} of ${www.ip}`);
    await screenshot(page, "21-lab-hosts");
    // Sorting by keyboard: the header is a button; Enter sorts, and the header says which way.
    const byPorts = section().getByRole("button", { name: /^Open ports/ });
    await byPorts.focus();
    await page.keyboard.press("Enter");
    await page.keyboard.press("Enter");
    await section().locator('th[aria-sort="descending"]', { hasText: "Open ports" }).waitFor();
    const most = Math.max(...lab.truth.hosts.map((host) => host.ports.length));
    assert.equal((await section().locator("tbody tr td").first().innerText()).split(", ").length, most);
    await row.getByRole("button", { name: www.ip }).click();
    const dialog = page.getByRole("dialog", { name: `Host ${www.ip}` });
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /www\.acme\.test/);
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
  });

  test("domains show their records and the certificates naming them, filterable by kind", async () => {
    await page.getByRole("link", { name: "Domains", exact: true }).click();
    await section().locator("tbody tr").first().waitFor();
    await page.getByLabel("Filter domains").fill("www.acme.test");
    await section().getByRole("button", { name: "www.acme.test", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "www.acme.test" });
    await dialog.waitFor();
    const text = await dialog.innerText();
    assert.match(text, /DNS records/);
    assert.match(text, /\bA\b\s+127\./, "its address record");
    assert.match(text, /Certificates naming it[\s\S]*www\.acme\.test \(/, "the certificate that names it");
    await screenshot(page, "22-lab-domain-details");
    await page.keyboard.press("Escape");
    await page.getByLabel("Filter domains").fill("");
    await page.getByLabel("Zone transfer").selectOption("yes");
    await section()
      .locator(".table-count")
      .getByText(/filtered out/)
      .waitFor();
    const open = await section().locator("tbody tr").allInnerTexts();
    assert.ok(
      open.length > 0 && open.every((row) => row.includes("open.test")),
      `zone transfer allowed only on open.test: ${open}`,
    );
  });

  test("netblocks and recent entities are listed; the overview charts the open ports", async () => {
    await page.getByRole("link", { name: "Netblocks", exact: true }).click();
    await section().locator("tbody tr").first().waitFor();
    assert.match(await section().innerText(), /127\.\d+\.\d+\.\d+\/\d+/);
    await page.getByRole("link", { name: "Recent", exact: true }).click();
    await section().locator("tbody tr").first().waitFor();
    assert.match(await section().innerText(), /acme\.test/);
    await page.getByRole("link", { name: "Overview", exact: true }).click();
    const ports = page.getByRole("region", { name: "Most common open ports" });
    await ports.locator("svg").waitFor();
    assert.match((await ports.locator("svg").getAttribute("aria-label")) ?? "", /443\/tcp: \d+ hosts/);
    await screenshot(page, "23-lab-overview");
  });
});
