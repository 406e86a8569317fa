/**
 * A run's passive sources wherever a person reads the run: GET …/runs/{id} (the `sources` extension,
 * the spec's fields unchanged), GET /api/sources and `sightline sources` (whether a key is set, never the
 * key), `sightline runs show`, and the dashboard's run dialog in Chromium. A real server runs real
 * discovery with two sources on their fakes: crt.sh answers, Anubis answers 500.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { Browser, Page } from "playwright-core";
import { runClientCommand } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { keyOf, type SourceFakes, startSourceFakes } from "../helpers/source-fakes.ts";
import { chromiumSkipReason, openBrowser, signIn } from "./browser.ts";

const OTX_KEY = "otx-secret-key-0123456789";
/** The key the fake SecurityTrails accepts: the run uses it, and nothing may show or log it. */
const USED_KEY = keyOf("securitytrails");

describe("a run's passive sources in the API, the CLI and the dashboard", () => {
  let t: TestServer;
  let fakes: SourceFakes;
  let home: string;
  let receiver: Server;
  const logs: string[] = [];
  const events: Array<{ type: string; sources?: { all_failed: boolean; note: string | null } }> = [];

  const finishRun = async (id: number) => {
    for (let i = 0; i < 300; i++) {
      const run = await t.request("GET", `/api/collections/acme/runs/${id}`);
      if (run.body.result?.status === "finished") return;
      await sleep(100);
    }
    throw new Error(`run ${id} did not finish`);
  };

  before(async () => {
    receiver = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        events.push(JSON.parse(body));
        response.end("ok");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.66", resolve));
    fakes = await startSourceFakes("127.0.0.65");
    fakes.broken.add("anubis");
    t = await startTestServer(
      "sqlite",
      {
        sources: ["crtsh", "anubis", "virustotal", "securitytrails"],
        sourceSecuritytrailsUrl: fakes.url("securitytrails"),
        sourceSecuritytrailsKey: USED_KEY,
        sourceCrtshUrl: fakes.url("crtsh"),
        sourceAnubisUrl: fakes.url("anubis"),
        // A key the server holds for a source this run does not ask: listed as set, never shown.
        sourceOtxUrl: fakes.url("otx"),
        sourceOtxKey: OTX_KEY,
        sourceRequestsPerMinute: 6000,
        sourceRetries: 0,
        timeoutMs: 300,
        schedulerIntervalSeconds: 3600,
        webhookAllow: ["127.0.0.0/8"],
      },
      { logger: { level: "trace", stream: { write: (line: string) => void logs.push(line) } } },
    );
    home = mkdtempSync(join(tmpdir(), "sightline-sources-"));
    const created = await t.request("POST", "/api/collections", {
      body: { name: "acme", seeds: [{ type: "Domain", name: "lab.test" }] },
    });
    assert.equal(created.status, 200, created.text);
    const { port } = receiver.address() as AddressInfo;
    const hook = await t.request("POST", "/api/collections/acme/webhooks", {
      body: { url: `http://127.0.0.66:${port}/hook`, events: ["run.finished"] },
    });
    assert.equal(hook.status, 200, hook.text);
    const scheduled = await t.request("POST", "/api/collections/acme/schedule");
    assert.equal(scheduled.status, 200, scheduled.text);
    await finishRun(1);
  });
  after(async () => {
    await t?.close();
    await fakes?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test("GET …/runs/{id} has each source's status beside the spec's fields", async () => {
    const { body } = await t.request("GET", "/api/collections/acme/runs/1");
    const run = body.result;
    for (const field of ["id", "status", "created_at", "priority"]) assert.ok(field in run, field);
    const of = (id: string) => run.sources.sources.find((source: { source: string }) => source.source === id);
    assert.equal(of("crtsh").status, "answered");
    assert.equal(of("securitytrails").status, "answered", "its key reached it");
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
    assert.equal(text.includes(OTX_KEY) || text.includes(USED_KEY), false, "no key is answered");
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
    assert.equal(sources.output.includes(OTX_KEY) || sources.output.includes(USED_KEY), false);
    assert.match(sources.output, /anubis .*run 1: FAILED: http 500/);
    assert.match(sources.output, /virustotal .*not set/);
    const show = await runClientCommand(t, home, ["runs", "show", "acme", "1"]);
    assert.equal(show.code, 0, show.output);
    assert.match(show.output, /Sources: 3 asked/);
    assert.match(show.output, /anubis +FAILED: http 500/);
    assert.match(show.output, /crtsh +1\/1 answered/);
    assert.match(show.output, /virustotal +not queried: no key set/);
  });

  test("run.finished carries the sources; a run whose every source failed says so there and in its overview", async () => {
    for (let i = 0; i < 100 && events.length < 1; i++) await sleep(50);
    assert.equal(events[0]?.type, "run.finished");
    assert.equal(events[0]?.sources?.all_failed, false);
    fakes.broken.add("crtsh");
    fakes.broken.add("securitytrails");
    try {
      const scheduled = await t.request("POST", "/api/collections/acme/schedule");
      await finishRun(Number(scheduled.body.result.id));
      for (let i = 0; i < 100 && events.length < 2; i++) await sleep(50);
      assert.equal(events[1]?.sources?.all_failed, true);
      assert.match(
        events[1]?.sources?.note ?? "",
        /Every passive source run 2 asked failed \(.*anubis: http 500/,
      );
      const overview = await t.request("GET", "/api/collections/acme/overview");
      assert.equal(overview.body.result.sources.all_failed, true);
      assert.match(overview.body.result.sources.note, /Every passive source run 2 asked failed/);
    } finally {
      fakes.broken.delete("crtsh");
      fakes.broken.delete("securitytrails");
    }
  });

  test("no key is ever logged", () => {
    assert.ok(logs.length > 0, "the server logged");
    const leaked = logs.filter((line) => line.includes(USED_KEY) || line.includes(OTX_KEY));
    assert.deepEqual(leaked, []);
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
      await page.keyboard.press("Escape");
      await dialog.waitFor({ state: "hidden" });
    });

    test("a run whose every source failed says so", async () => {
      await page.reload();
      await page.getByRole("button", { name: "Run 2", exact: true }).click();
      const dialog = page.getByRole("dialog", { name: "Run 2" });
      await dialog.getByRole("alert").waitFor();
      assert.match(await dialog.getByRole("alert").innerText(), /Every passive source this run asked failed/);
      await page.keyboard.press("Escape");
    });

    test("the overview says so too", async () => {
      await page.goto(`${t.url}/collections/acme`);
      await page.getByText(/Every passive source run 2 asked failed/).waitFor();
    });
  });
});
