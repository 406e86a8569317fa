/**
 * A run's passive sources wherever a person reads the run: GET …/runs/{id} (the `sources` extension,
 * the spec's fields unchanged), GET /api/sources and `sightline sources` (whether a key is set, never the
 * key), `sightline runs show`, and the dashboard's run dialog in Chromium. A real server runs real
 * discovery with two sources on their fakes: crt.sh answers, Anubis answers 500.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { Browser, Page } from "playwright-core";
import { runClientCommand } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { type SourceFakes, startSourceFakes } from "../helpers/source-fakes.ts";
import { chromiumSkipReason, openBrowser, signIn } from "./browser.ts";

const OTX_KEY = "otx-secret-key-0123456789";

describe("a run's passive sources in the API, the CLI and the dashboard", () => {
  let t: TestServer;
  let fakes: SourceFakes;
  let home: string;

  before(async () => {
    fakes = await startSourceFakes("127.0.0.65");
    fakes.broken.add("anubis");
    t = await startTestServer("sqlite", {
      sources: ["crtsh", "anubis", "virustotal"],
      sourceCrtshUrl: fakes.url("crtsh"),
      sourceAnubisUrl: fakes.url("anubis"),
      // A key the server holds for a source this run does not ask: listed as set, never shown.
      sourceOtxUrl: fakes.url("otx"),
      sourceOtxKey: OTX_KEY,
      sourceRequestsPerMinute: 6000,
      sourceRetries: 0,
      timeoutMs: 300,
      schedulerIntervalSeconds: 3600,
    });
    home = mkdtempSync(join(tmpdir(), "sightline-sources-"));
    const created = await t.request("POST", "/api/collections", {
      body: { name: "acme", seeds: [{ type: "Domain", name: "lab.test" }] },
    });
    assert.equal(created.status, 200, created.text);
    const scheduled = await t.request("POST", "/api/collections/acme/schedule");
    assert.equal(scheduled.status, 200, scheduled.text);
    for (let i = 0; i < 300; i++) {
      const run = await t.request("GET", "/api/collections/acme/runs/1");
      if (run.body.result?.status === "finished") return;
      await sleep(100);
    }
    throw new Error("the run did not finish");
  });
  after(async () => {
    await t?.close();
    await fakes?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test("GET …/runs/{id} has each source's status beside the spec's fields", async () => {
    const { body } = await t.request("GET", "/api/collections/acme/runs/1");
    const run = body.result;
    for (const field of ["id", "status", "created_at", "priority"]) assert.ok(field in run, field);
    const of = (id: string) => run.sources.sources.find((source: { source: string }) => source.source === id);
    assert.equal(of("crtsh").status, "answered");
    assert.ok(of("crtsh").names >= 4, "crt.sh's names counted");
    assert.equal(of("anubis").status, "failed");
    assert.equal(of("anubis").failure, "http 500");
    assert.match(of("otx").reason, /not chosen/);
    assert.equal(of("virustotal").queried, false);
    assert.match(of("virustotal").reason, /no key set \(SIGHTLINE_SOURCE_VIRUSTOTAL_KEY\)/);
    assert.match(of("hackertarget").reason, /not chosen/);
    assert.equal(run.sources.all_failed, false);
    const overview = await t.request("GET", "/api/collections/acme/overview");
    assert.deepEqual(overview.body.result.sources.failed, ["anubis"]);
    assert.equal(overview.body.result.sources.note, null);
  });

  test("GET /api/sources says whether a key is set, never the key", async () => {
    const { status, text, body } = await t.request("GET", "/api/sources");
    assert.equal(status, 200);
    assert.equal(text.includes(OTX_KEY), false, "the key is not answered");
    const otx = body.result.find((source: { source: string }) => source.source === "otx");
    assert.equal(otx.key_set, true);
    assert.equal(otx.chosen, false);
    const crtsh = body.result.find((source: { source: string }) => source.source === "crtsh");
    assert.equal(crtsh.last_run, 1);
    assert.equal(crtsh.last_status.status, "answered");
    const virustotal = body.result.find((source: { source: string }) => source.source === "virustotal");
    assert.equal(virustotal.key_set, false);
    assert.equal(virustotal.chosen, false);
  });

  test("sightline sources and sightline runs show", async () => {
    const sources = await runClientCommand(t, home, ["sources"]);
    assert.equal(sources.code, 0, sources.output);
    assert.equal(sources.output.includes(OTX_KEY), false);
    assert.match(sources.output, /anubis .*run 1: FAILED: http 500/);
    assert.match(sources.output, /virustotal .*not set/);
    const show = await runClientCommand(t, home, ["runs", "show", "acme", "1"]);
    assert.equal(show.code, 0, show.output);
    assert.match(show.output, /Sources: 2 asked/);
    assert.match(show.output, /anubis +FAILED: http 500/);
    assert.match(show.output, /crtsh +1\/1 answered/);
    assert.match(show.output, /virustotal +not queried: no key set/);
  });

  describe("the dashboard's run dialog", { skip: chromiumSkipReason() }, () => {
    let browser: Browser;
    let page: Page;
    before(async () => {
      ({ browser, page } = await openBrowser());
      await signIn(page, `${t.url}/collections/acme/runs`, t.admin);
    });
    after(() => browser?.close());

    test("shows every source: answered, failed with its reason, not queried with why", async () => {
      await page.getByRole("button", { name: "Run 1", exact: true }).click();
      const dialog = page.getByRole("dialog", { name: "Run 1" });
      const table = dialog.getByRole("table", { name: "Passive sources" });
      await table.waitFor();
      const row = (id: string) =>
        table.locator("tr", { has: page.getByRole("rowheader", { name: id, exact: true }) });
      assert.match(await row("anubis").innerText(), /failed\s.*http 500/s);
      assert.match(await row("crtsh").innerText(), /answered\s+1\/1/);
      assert.match(await row("virustotal").innerText(), /not queried.*no key set/s);
      assert.equal(await dialog.getByRole("alert").count(), 0, "not every source failed");
    });
  });
});
