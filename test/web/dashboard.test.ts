/**
 * The dashboard in a real browser against a real server: sign-in, creating a collection from a pasted
 * list, adding seeds, and the runs and result pages rendering their states. Screenshots land in
 * test-artifacts/web/.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { chromiumSkipReason, openBrowser, screenshot, signIn } from "./browser.ts";

const skip = chromiumSkipReason();

describe("dashboard in Chromium", { skip }, () => {
  let t: TestServer;
  let browser: Browser;
  let page: Page;

  let blue: number;

  before(async () => {
    t = await startTestServer("sqlite");
    // The admin is also in a second team, so the team choice has something to choose.
    const { accounts } = t.server.services;
    blue = (await accounts.createTeam((await accounts.findAccount("default"))!.id, "blue")).id;
    await accounts.addMember(blue, (await accounts.findUser("admin"))!.id);
    ({ browser, page } = await openBrowser());
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const submitKeys = async (secretKey: string) => {
    await page.getByLabel("Access key").fill(t.admin.accessKey);
    await page.getByLabel("Secret key").fill(secretKey);
    await page.getByRole("button", { name: "Sign in" }).click();
  };

  test("a wrong key pair shows the API's sentence; the right one signs in", async () => {
    await page.goto(`${t.url}/`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await submitKeys("not-the-secret");
    const alert = page.getByRole("alert");
    await alert.waitFor();
    assert.match(await alert.innerText(), /The API key pair is not valid or has been revoked/);
    await screenshot(page, "01-sign-in-wrong-key");

    await submitKeys(t.admin.secretKey);
    await page.getByRole("heading", { name: "Collections", level: 1 }).waitFor();
    await page.getByText(/You have no collections yet/).waitFor();
    const stored = await page.evaluate<string | null>("sessionStorage.getItem('sightline.keys')");
    assert.ok(stored?.includes(t.admin.accessKey), "the pair is kept in sessionStorage");
    assert.equal(await page.evaluate<number>("localStorage.length"), 0, "nothing is kept beyond the session");
    await screenshot(page, "02-collections-empty");
  });

  test("a pasted list with one bad line shows the error on that line and saves nothing", async () => {
    await page.getByRole("link", { name: "New collection" }).first().click();
    await page.getByRole("heading", { name: "New collection" }).waitFor();
    await page.getByLabel("Name").fill("acme");
    await page
      .getByLabel("Seeds, one per line")
      .fill(
        [
          "acme.example",
          "",
          "# the office range",
          "192.0.2.10",
          "not a seed!",
          "https://www.acme.example/",
          "Nameserver ns1.acme.example",
        ].join("\n"),
      );
    await page
      .locator(".seed-summary")
      .getByText(/4 seeds ready .*1 line needs attention/)
      .waitFor();
    await page.getByRole("button", { name: "Create collection" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    assert.match(await alert.innerText(), /^Line 5: "not a seed!" is not recognised/);
    const badRow = page.locator("tr.bad");
    assert.equal(await badRow.count(), 1);
    assert.equal(await badRow.getAttribute("data-line"), "5");
    assert.match(await badRow.innerText(), /not recognised/);
    assert.equal(await page.locator(":focus").getAttribute("aria-label"), "Type of line 5");
    await screenshot(page, "03-new-collection-bad-line");
    const missing = await t.request("GET", "/api/collections/acme");
    assert.equal(missing.status, 404, "nothing was saved");
  });

  test("a type chosen for a line is written into it and checked with the API's rules", async () => {
    // "not a seed!" cannot be any type; choosing Domain keeps it bad, with the API's own sentence.
    await page.getByLabel("Type of line 5").selectOption("Domain");
    await page
      .locator("tr.bad")
      .getByText(/"not a seed!" is not a valid Domain: expected a domain name/)
      .waitFor();
    assert.match(await page.getByLabel("Seeds, one per line").inputValue(), /^Domain not a seed!$/m);
  });

  test("the team is chosen from the user's teams; one the user has left meanwhile is refused with the API's sentence", async () => {
    const { accounts } = t.server.services;
    const teams = (await t.request("GET", "/api/teams")).body.result as Array<{ id: number; name: string }>;
    const home = teams.find((team) => team.name === "default")!;
    const field = page.getByLabel("Team");
    assert.equal(
      await field.evaluate((select) => select.tagName),
      "SELECT",
      "a choice, not a number to type",
    );
    await field.locator("option", { hasText: "blue" }).waitFor({ state: "attached" });
    assert.deepEqual(await field.locator("option").allInnerTexts(), [
      `default — team ${home.id}, your default`,
      `blue — team ${blue}`,
    ]);
    assert.equal(await field.inputValue(), String(home.id), "the default team is chosen to begin with");
    await field.selectOption({ label: `blue — team ${blue}` });
    // The bad line still blocks; the team is the API's to judge once the seeds are good.
    await page.getByRole("button", { name: "Create collection" }).click();
    await page.getByText("Line 5:", { exact: false }).waitFor();
    const text = await page.getByLabel("Seeds, one per line").inputValue();
    await page.getByLabel("Seeds, one per line").fill(text.replace("Domain not a seed!\n", ""));
    const admin = (await accounts.findUser("admin"))!;
    await accounts.removeMember(blue, admin.id);
    try {
      await page.getByRole("button", { name: "Create collection" }).click();
      await page
        .getByRole("alert")
        .getByText(`You are not a member of team ${blue}; pick one of your teams.`)
        .waitFor();
      assert.equal((await t.request("GET", "/api/collections/acme")).status, 404, "nothing was saved");
    } finally {
      await accounts.addMember(blue, admin.id);
    }
    await page.getByLabel("Seeds, one per line").fill(text);
  });

  test("fixing the line creates the collection and opens its runs", async () => {
    const text = await page.getByLabel("Seeds, one per line").inputValue();
    await page.getByLabel("Seeds, one per line").fill(text.replace("Domain not a seed!\n", ""));
    await page.getByRole("button", { name: "Create collection" }).click();
    await page.getByRole("heading", { name: "acme", level: 1 }).waitFor();
    assert.match(new URL(page.url()).pathname, /^\/collections\/acme\/runs$/);
    await page.getByText(/The collection was created with 4 seeds/).waitFor();
    const created = await t.request("GET", "/api/collections/acme");
    assert.equal(created.body.result.team_id, blue, "it went to the team chosen");
    assert.deepEqual(
      created.body.result.seeds.map((s: { type: string; name: string }) => `${s.type} ${s.name}`).sort(),
      [
        "Domain acme.example",
        "IpAddress 192.0.2.10",
        "Nameserver ns1.acme.example",
        "Uri https://www.acme.example/",
      ],
    );
    // The runs list answers, or says in the API's words why it cannot: never a blank section.
    await page.locator("#runs-heading ~ .notice, #runs-heading ~ .data-table").first().waitFor();
    await screenshot(page, "04-runs");
  });

  test("seeds are added from the seeds page, and delete-all asks first", async () => {
    await page.getByRole("link", { name: "Seeds & settings" }).click();
    await page.getByRole("heading", { name: "Seeds", level: 2, exact: true }).waitFor();
    await page
      .getByLabel("Seeds, one per line")
      .fill("198.51.100.7/24\nacme.example\nDnsRecord mail.acme.example");
    await page.getByRole("button", { name: "Add seeds" }).click();
    const notice = page.locator(".notice.success");
    await notice.waitFor();
    assert.match(await notice.innerText(), /Added 2 new seeds; the collection now has 6 seeds/);
    const read = await t.request("GET", "/api/collections/acme");
    assert.equal(read.body.result.seed_count, 6);
    assert.ok(read.body.result.seeds.some((s: { name: string }) => s.name === "198.51.100.0/24"));
    await page.locator(".data-table").getByText("mail.acme.example").waitFor();
    await screenshot(page, "05-seeds");

    await page.getByRole("button", { name: "Delete all seeds…" }).click();
    await page.getByRole("button", { name: "Keep them" }).click();
    assert.equal(
      (await t.request("GET", "/api/collections/acme")).body.result.seed_count,
      6,
      "nothing deleted without the confirmation",
    );
  });

  test("seeds load from a file into the list", async () => {
    await page.getByLabel("Or load them from a text or CSV file").setInputFiles({
      name: "estate.csv",
      mimeType: "text/csv",
      buffer: Buffer.from("type,name\nDomain,upload.example\nNameserver,ns9.upload.example\n"),
    });
    // The file is read asynchronously; the summary says when its lines are in.
    await page.locator(".seed-summary").getByText("2 seeds ready (1 Domain, 1 Nameserver).").waitFor();
    assert.match(
      await page.getByLabel("Seeds, one per line").inputValue(),
      /Domain,upload\.example\nNameserver,ns9\.upload\.example/,
    );
    await page.getByRole("button", { name: "Add seeds" }).click();
    await page.getByText(/Added 2 new seeds; the collection now has 8 seeds/).waitFor();
  });

  test("the scan rate is saved", async () => {
    await page.getByLabel("Scan rate").selectOption("weekly");
    await page.getByRole("button", { name: "Save scan rate" }).click();
    await page.getByText("Scan rate set to “Weekly”.").waitFor();
    assert.equal((await t.request("GET", "/api/collections/acme")).body.result.scan_rate, "weekly");
  });

  test("the scan profile: a preset with overrides is saved, a bad port list refused, then dropped", async () => {
    const profile = async () => (await t.request("GET", "/api/collections/acme")).body.result.scan_profile;
    await page.getByLabel("Preset").selectOption("thorough");
    assert.equal(
      await page.getByLabel("UDP pass").locator("option").first().innerText(),
      "Unset (preset: on)",
    );
    await page.getByLabel("TCP ports").fill("22,443,70000");
    await page.getByRole("button", { name: "Save scan profile" }).click();
    await page
      .getByRole("alert")
      .getByText(/scan_profile\.ports has "70000", outside 1–65535/)
      .waitFor();
    assert.equal(await profile(), null, "nothing was saved");

    await page.getByLabel("TCP ports").fill("22,443");
    await page.getByLabel("UDP pass").selectOption("off");
    await page.getByLabel("Depth").fill("2");
    await page.getByRole("button", { name: "Save scan profile" }).click();
    await page.getByText("Scan profile saved: the next run scans with it.").waitFor();
    assert.deepEqual(await profile(), { preset: "thorough", ports: "22,443", udp: false, depth: 2 });
    await screenshot(page, "scan-profile");

    await page.reload();
    assert.equal(
      await page.getByLabel("TCP ports").inputValue(),
      "22,443",
      "the form shows the stored profile",
    );
    await page.getByRole("button", { name: "Use the server's settings" }).click();
    await page.getByText("Scan profile removed: runs use the server's settings.").waitFor();
    assert.equal(await profile(), null);
  });

  for (const [tab, heading] of [
    ["", "Overview"],
    ["/hosts", "Hosts"],
    ["/applications", "Applications"],
    ["/issues", "Issues"],
    ["/vulnerabilities", "Vulnerabilities"],
    ["/products", "Products"],
    ["/domains", "Domains"],
    ["/netblocks", "Netblocks"],
    ["/connections", "Connections"],
    ["/recent", "Recent"],
  ]) {
    test(`the ${heading.toLowerCase()} page renders a state, never a blank page (opened by its address)`, async () => {
      await page.goto(`${t.url}/collections/acme${tab}`);
      await page.getByRole("heading", { name: heading, level: 2 }).waitFor();
      const section = page.locator("section[aria-labelledby]").first();
      await section.locator(".notice.empty, .notice.error, .data-table").first().waitFor();
      // The overview has several parts, each loading on its own: read it once none is still loading.
      await page.waitForFunction(
        (element) => !/Loading/.test(element?.textContent ?? ""),
        await section.elementHandle(),
      );
      const text = await section.innerText();
      assert.ok(/No .* yet|There is no GET|Showing/.test(text), `${heading}: ${text}`);
      assert.equal(
        await page.getByRole("link", { name: heading, exact: true }).getAttribute("aria-current"),
        "page",
      );
      await screenshot(page, `06-results${tab.replace("/", "-") || "-overview"}`);
    });
  }

  test("an unknown collection shows the API's sentence", async () => {
    await page.goto(`${t.url}/collections/nope`);
    const alert = page.getByRole("alert");
    await alert.waitFor();
    assert.match(await alert.innerText(), /No collection named "nope" is visible to you/);
  });

  test("the collection list shows team, scan rate and seeds; keyboard reaches the skip link; the data is attributed", async () => {
    await page.goto(`${t.url}/`);
    await page.getByRole("link", { name: "acme" }).waitFor();
    const row = page.locator("tbody tr", { hasText: "acme" });
    await row.getByText("Weekly").waitFor();
    assert.match(await row.innerText(), /Weekly[\s\S]*8/);
    await page.keyboard.press("Tab");
    assert.equal(await page.locator(":focus").innerText(), "Skip to content");
    // The network data's licence asks for its attribution wherever results are shown.
    const attribution = page.getByRole("link", { name: "IP to ASN Lite by DB-IP" });
    assert.equal(await attribution.getAttribute("href"), "https://db-ip.com");
    await screenshot(page, "07-collections");
  });

  test("on a phone-sized screen the pages still fit", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${t.url}/collections/acme/seeds`);
    await page.getByRole("heading", { name: "Seeds", level: 2, exact: true }).waitFor();
    // Runs in the page: how far it scrolls sideways, and the first elements sticking out (tables may scroll).
    const overflow = await page.evaluate<{ by: number; wide: string[] }>(`(() => {
      const width = document.documentElement.clientWidth;
      const wide = [...document.querySelectorAll("body *")]
        .filter((element) => element.getBoundingClientRect().right > width + 1 && !element.closest(".table-scroll"))
        .map((element) => element.tagName.toLowerCase() + "." + element.className);
      return { by: document.documentElement.scrollWidth - width, wide: wide.slice(0, 5) };
    })()`);
    assert.ok(overflow.by <= 1, `the page scrolls sideways by ${overflow.by}px: ${overflow.wide.join(", ")}`);
    await screenshot(page, "08-seeds-phone");
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  test("signing out forgets the keys", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    assert.equal(await page.evaluate<string | null>("sessionStorage.getItem('sightline.keys')"), null);
  });

  test("a key pair revoked during the session leads back to sign-in with the API's sentence", async () => {
    const { accounts } = t.server.services;
    const key = await accounts.issueKey((await accounts.findUser("admin"))!.id);
    await signIn(page, `${t.url}/`, key);
    await page.locator("tbody tr", { hasText: "acme" }).getByText("Weekly").waitFor();
    await accounts.revokeKey(key.accessKey);
    // The next request the dashboard makes — here, opening the collection by its address — is refused.
    await page.goto(`${t.url}/collections/acme`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByText(/has been revoked/).waitFor();
    assert.equal(await page.evaluate<string | null>("sessionStorage.getItem('sightline.keys')"), null);
  });
});
