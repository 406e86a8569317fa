/**
 * The whole path a person takes, in Chromium, against a real server whose runs do real discovery on the
 * lab (a fake internet on loopback): create a collection, run it, watch the progress reach finished,
 * then read what was found — hosts, domains with their records and certificates, netblocks, web
 * applications with their headers, fingerprints and redirects, issues with their proof, recent.
 */
import assert from "node:assert/strict";
import type { IncomingMessage, ServerResponse } from "node:http";
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
    // The default world has no redirecting site: one more host in globex.test, reached only as a seed,
    // whose front page redirects twice before it answers.
    const hops: Record<string, string> = { "/": "/start", "/start": "/start/" };
    await lab.addHost({
      ip: lab.ip("4.90"),
      names: ["go.globex.test"],
      services: [
        {
          kind: "http",
          port: 80,
          server: "nginx/1.24.0",
          title: "Go",
          handler: (request: IncomingMessage, response: ServerResponse) => {
            const next = hops[request.url ?? "/"];
            if (next) response.writeHead(302, { location: next, server: "nginx/1.24.0" }).end();
            else
              response
                .writeHead(200, { "content-type": "text/html", server: "nginx/1.24.0" })
                .end("<html><head><title>Go</title></head><body>Links</body></html>");
          },
        },
      ],
    });
    t = await startTestServer("sqlite", {
      dnsServers: [lab.resolver],
      scanAllow: ["127.0.0.0/8"],
      // Only the lab's own ports: a server on this machine's wildcard address answers on every lab host.
      ports: lab.ports,
      timeoutMs: 1000,
    });
    ({ browser, page } = await openBrowser());
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
    await page
      .getByLabel("Seeds, one per line")
      .fill("acme.test\nopen.test\nglobex.test\nDnsRecord go.globex.test");
    await page.getByRole("button", { name: "Create collection" }).click();
    await page.getByText(/The collection was created with 4 seeds/).waitFor();
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
    // Each open port with the service and product it answered with (the services result).
    await dialog.getByText(/^80\/tcp http · nginx 1\.18\.0$/).waitFor();
    await dialog.getByText(/^443\/tcp https · nginx 1\.18\.0$/).waitFor();
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
    // The filters are behind the modal dialog until it has closed, and the closed dialog hands focus back
    // to its row when it leaves the page (after it is hidden): typing before then could go to the row.
    await page.keyboard.press("Escape");
    await page.locator("dialog.details").waitFor({ state: "detached" });
    // fill("") selects the text, then presses Delete in a second step: should focus move between the two,
    // the key goes elsewhere and the text stays. Clear until the field is empty and the table shows all rows.
    const filter = page.getByLabel("Filter domains");
    const count = section().locator(".table-count");
    for (let attempt = 1; attempt <= 5 && (await filter.inputValue()) !== ""; attempt++)
      await filter.fill("");
    await count.filter({ hasNotText: /filtered out|match the filter/ }).waitFor();
    await page.getByLabel("Zone transfer").selectOption("yes");
    await count
      .filter({ hasText: /filtered out/ })
      .waitFor()
      .catch(async (error) => {
        const state = `count "${await count.innerText()}", text filter "${await filter.inputValue()}", zone transfer "${await page.getByLabel("Zone transfer").inputValue()}"`;
        throw new Error(`the zone-transfer filter did not narrow the domains (${state})`, { cause: error });
      });
    const open = await section().locator("tbody tr").allInnerTexts();
    assert.ok(
      open.length > 0 && open.every((row) => row.includes("open.test")),
      `zone transfer allowed only on open.test: ${open}`,
    );
  });

  test("an application opens its status, response headers, fingerprints and redirect chain", async () => {
    await page.getByRole("link", { name: "Applications", exact: true }).click();
    await section().locator("tbody tr").first().waitFor();
    const legacy = lab.truth.applications.find((app) => app.name === "http://legacy.globex.test:80")!;
    await page.getByLabel("Filter applications").fill("legacy.globex.test");
    await section().getByRole("button", { name: legacy.name, exact: true }).click();
    const dialog = page.getByRole("dialog", { name: legacy.name });
    await dialog.waitFor();
    const headers = dialog.getByRole("region", { name: "Response headers" });
    assert.match(await headers.innerText(), /server\s+Apache\/2\.4\.49 \(Unix\)/, "the Server header, split");
    const fingerprints = await dialog.getByRole("region", { name: "Fingerprints" }).innerText();
    for (const product of legacy.products) {
      assert.match(fingerprints, new RegExp(product.name), `${product.name} is fingerprinted`);
      if (product.cpe) assert.ok(fingerprints.includes(product.cpe), `with its CPE ${product.cpe}`);
    }
    assert.match(await dialog.innerText(), /Title\s+Index of \//);
    assert.match(await dialog.innerText(), /Redirect chain\s+No redirects\./);
    await screenshot(page, "24-lab-application-details");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });

    await page.getByLabel("Filter applications").fill("go.globex.test");
    await section().getByRole("button", { name: "http://go.globex.test:80", exact: true }).click();
    const redirected = page.getByRole("dialog", { name: "http://go.globex.test:80" });
    await redirected.waitFor();
    const chain = await redirected
      .locator(".details-section", { has: page.getByRole("heading", { name: "Redirect chain" }) })
      .locator("li")
      .allInnerTexts();
    // The two addresses that redirected, then the page that answered.
    assert.deepEqual(chain, [
      "http://go.globex.test/",
      "http://go.globex.test/start",
      "http://go.globex.test/start/ (answered)",
    ]);
    assert.match(await redirected.innerText(), /Title\s+Go\b/, "the page the chain ends on");
    await screenshot(page, "25-lab-application-redirects");
    await page.keyboard.press("Escape");
    await redirected.waitFor({ state: "hidden" });
  });

  test("issues filter by severity, and an issue shows its proof, remediation and references", async () => {
    await page.getByRole("link", { name: "Issues", exact: true }).click();
    await section().locator("tbody tr").first().waitFor();
    const count = section().locator(".table-count");
    const all = Number((await count.innerText()).match(/of ([\d,]+) issues/)![1].replace(/,/g, ""));
    await page.getByLabel("Severity").selectOption({ label: "critical" });
    await section()
      .locator(".table-count", { hasText: /filtered out/ })
      .waitFor();
    const critical = await section().locator("tbody tr").allInnerTexts();
    assert.ok(critical.length > 0 && critical.length < all, `${critical.length} critical of ${all}`);
    assert.ok(
      critical.every((row) => /\bcritical\b/i.test(row)),
      `only critical issues are left: ${critical.join(" | ")}`,
    );
    assert.ok(
      critical.some((row) => /CVE-2021-42013/.test(row)),
      "the Apache path traversal is critical",
    );
    await screenshot(page, "26-lab-issues-critical");
    await page.getByLabel("Severity").selectOption({ label: "All" });
    await section()
      .locator(".table-count", { hasText: `of ${all} issues` })
      .waitFor();

    await page.getByLabel("Filter issues").fill("Git repository exposed");
    await section().getByRole("button", { name: "Git repository exposed" }).first().click();
    const dialog = page.getByRole("dialog", { name: "Git repository exposed" });
    await dialog.waitFor();
    const proof = await dialog
      .locator(".details-section", { has: page.getByRole("heading", { name: "Proof" }) })
      .innerText();
    assert.match(proof, /GET http:\/\/127\.\d+\.4\.\d+\/\.git\/HEAD/, "the request that proved it");
    assert.match(proof, /user-agent: Mozilla\/5\.0 \(compatible; Sightline/, "with its headers");
    assert.match(proof, /ref: refs\/heads\/master/, "and what came back");
    const text = await dialog.innerText();
    assert.match(text, /Remediation\s+Deny access to \/\.git/);
    const reference = dialog.getByRole("link", { name: /cwe\.mitre\.org\/data\/definitions\/527/ });
    assert.equal(await reference.getAttribute("href"), "https://cwe.mitre.org/data/definitions/527.html");
    await screenshot(page, "27-lab-issue-proof");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
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
