/**
 * People see plain numbers and words: CLI result tables with a few useful columns per kind, hosts in
 * numeric address order, `--wide` for the rest; CSV from the CLI and the server, and the dashboard's
 * fields, with 443 and "critical" where the JSON wire has "0.443e3" and "0.1e1".
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser } from "playwright-core";
import { runClientCommand } from "../helpers/processes.ts";
import { buildRun } from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { chromiumSkipReason, openBrowser, signIn } from "../web/browser.ts";

/** A decimal-exponent number as the wire writes it ("0.443e3", "0.1e1"). */
const WIRE_NUMBER = /(^|[^\w.])-?0\.\d+e-?\d+\b/;
const HOSTS = 12;

describe("results read as plain numbers and words", () => {
  let t: TestServer;
  let home: string;
  let browser: Browser | undefined;

  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
    home = mkdtempSync(join(tmpdir(), "sightline-readable-"));
    const created = await t.request("POST", "/api/collections", {
      body: { name: "fx", scan_rate: "on_demand", seeds: [{ type: "Domain", name: "corp.example" }] },
    });
    assert.equal(created.status, 200, created.text);
    const account = (await t.server.services.accounts.findAccount("default"))!;
    const row = (await t.server.services.collections.findInAccount(account.id, "fx"))!;
    await buildRun(t.server.services.store.db, { collectionId: row.id, name: "fx" }, { hosts: HOSTS });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  const sightline = (args: string[]) => runClientCommand(t, home, args);

  test("the hosts table: six columns, ports as 443/tcp, addresses in numeric order", async () => {
    const { code, output } = await sightline(["results", "fx", "hosts"]);
    assert.equal(code, 0, output);
    assert.doesNotMatch(output, WIRE_NUMBER);
    const [header, ...lines] = output.trimEnd().split("\n");
    assert.match(header!, /^IP\s+PORTS\s+NAMES\s+NETWORK\s+COUNTRY\s+IN SCOPE$/);
    const addresses = lines.map((line) => line.split(/\s+/)[0]);
    assert.deepEqual(
      addresses,
      Array.from({ length: HOSTS }, (_, host) => `10.0.0.${host}`),
      "10.0.0.2 comes before 10.0.0.10",
    );
    assert.match(lines[1]!, /^10\.0\.0\.1\s+22\/tcp, 80\/tcp, 443\/tcp\s/);
    assert.ok(Math.max(...lines.map((line) => line.length)) <= 140, output);
  });

  test("the issues table says critical, and --wide shows every field without wire numbers", async () => {
    const issues = await sightline(["results", "fx", "issues"]);
    assert.equal(issues.code, 0, issues.output);
    assert.match(issues.output, /^SEVERITY\s+ISSUE\s+ON\s+CONFIDENCE\s+IN SCOPE\s+FIRST SEEN$/m);
    assert.match(issues.output, /^critical\s+Exposed \.git repository\s/m);
    assert.doesNotMatch(issues.output, WIRE_NUMBER);
    const wide = await sightline(["results", "fx", "issues", "--wide"]);
    assert.equal(wide.code, 0, wide.output);
    assert.match(wide.output.split("\n")[0]!, /ALIAS_GROUP_ID/);
    assert.doesNotMatch(wide.output, WIRE_NUMBER);
  });

  test("CSV from the CLI and from the server has plain numbers and severity words", async () => {
    const cli = await sightline(["results", "fx", "hosts", "--format", "csv"]);
    assert.equal(cli.code, 0, cli.output);
    assert.doesNotMatch(cli.output, WIRE_NUMBER);
    assert.match(cli.output, /""number"":443/);
    const server = await t.request("GET", "/api/collections/fx/issues?format=csv");
    assert.equal(server.status, 200, server.text);
    assert.doesNotMatch(server.text, WIRE_NUMBER);
    const [header, first] = server.text.split("\r\n");
    const severity = header!.split(",").indexOf("severity");
    assert.match(first!.split(",")[severity]!, /^(critical|high|medium|low|informational)$/);
    // The JSON wire format keeps the spec's.
    const json = await t.request("GET", "/api/collections/fx/issues");
    assert.match(json.body.result[0].severity, /^0\.\de1$/);
  });

  test("the dashboard's details show plain numbers", {
    skip: chromiumSkipReason(),
  }, async () => {
    const opened = await openBrowser();
    browser = opened.browser;
    const { page } = opened;
    await signIn(page, `${t.url}/collections/fx/recent`, t.admin);
    await page.locator(".section-body tbody tr").first().waitFor();
    await page.locator(".section-body tbody tr button").first().click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor();
    const text = await dialog.innerText();
    assert.match(text, /Alias group\s+\d+$/m, "the alias group as a plain number");
    assert.doesNotMatch(text, WIRE_NUMBER);
  });
});
