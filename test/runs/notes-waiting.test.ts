/**
 * Run notes are served (counted by kind on the run, paged and grouped with examples, in `sightline runs
 * show` and the dashboard's run dialog), and a distributed run with no worker says it is waiting for one
 * (in the run, the CLI, the dashboard and /metrics).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { runClientCommand } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { POSTGRES_URL, REDIS_URL, serviceSkipReason } from "../helpers/services.ts";
import { chromiumSkipReason, openBrowser, signIn } from "../web/browser.ts";
import { dropRedisPrefix, getRun, testPrefix, waitFor, waitForRun } from "./helpers.ts";

const chromium = chromiumSkipReason();

describe("run notes, served", () => {
  let t: TestServer;
  let home: string;
  let id: number;
  let browser: Browser | undefined;
  let page: Page | undefined;

  before(async () => {
    // Nothing answers DNS on 127.0.0.1:53 here: every seed gets a note.
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600, timeoutMs: 200 });
    home = mkdtempSync(join(tmpdir(), "sightline-notes-"));
    const seeds = ["a", "b", "c", "d", "e"].map((label) => ({ type: "Domain", name: `${label}.invalid` }));
    const created = await t.request("POST", "/api/collections", {
      body: { name: "noted", scan_rate: "on_demand", seeds },
    });
    assert.equal(created.status, 200, created.text);
    id = Number((await t.request("POST", "/api/collections/noted/schedule")).body.result.id);
    assert.equal((await waitForRun(t, "noted", id, "finished", "failed")).status, "finished");
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test("the run counts its notes by kind", async () => {
    const run = await getRun(t, "noted", id);
    assert.ok(run.notes.total >= 5, JSON.stringify(run.notes));
    const dns = run.notes.by_kind.find((kind: { kind: string }) => kind.kind === "dns");
    assert.ok(dns && dns.count >= 5, JSON.stringify(run.notes.by_kind));
    assert.equal(
      run.notes.by_kind.reduce((sum: number, kind: { count: number }) => sum + kind.count, 0),
      run.notes.total,
    );
  });

  test("GET …/notes groups them by kind with examples and pages through them", async () => {
    const all = await t.request("GET", `/api/collections/noted/runs/${id}/notes`);
    assert.equal(all.status, 200, all.text);
    const dns = all.body.result.kinds.find((kind: { kind: string }) => kind.kind === "dns");
    assert.equal(dns.examples.length, 3, "three examples of a kind");
    assert.match(dns.examples[0], /\.invalid/);
    assert.equal(all.body.result.notes.length, all.body.result.total);

    const first = await t.request("GET", `/api/collections/noted/runs/${id}/notes?kind=dns&limit=2`);
    const second = await t.request(
      "GET",
      `/api/collections/noted/runs/${id}/notes?kind=dns&limit=2&offset=2`,
    );
    assert.equal(first.body.result.notes.length, 2);
    assert.equal(first.body.result.total, dns.count);
    assert.ok(first.body.result.notes.every((note: { kind: string }) => note.kind === "dns"));
    assert.notDeepEqual(first.body.result.notes, second.body.result.notes, "pages differ");
    assert.match(first.body.result.notes[0].created_at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);

    const unknown = await t.request("GET", `/api/collections/noted/runs/${id}/notes?kinds=dns`);
    assert.equal(unknown.status, 400);
    assert.equal((await t.request("GET", "/api/collections/noted/runs/999/notes")).status, 404);
  });

  test("sightline runs show prints the run, its settings and its notes by kind with examples", async () => {
    const shown = await runClientCommand(t, home, ["runs", "show", "noted", String(id)]);
    assert.equal(shown.code, 0, shown.output);
    assert.match(shown.output, new RegExp(`^Run ${id} of noted: finished \\(forced, priority 1\\)`, "m"));
    assert.match(shown.output, /^Settings: ports top1000, depth 4, wordlist small, timeout 200 ms/m);
    assert.match(shown.output, /^Notes: \d+ notes$/m);
    assert.match(shown.output, /^ {2}dns: \d+ notes, e\.g\.\n {4}.*\.invalid/m);
  });

  test("the dashboard's run dialog shows the notes by kind with examples", { skip: chromium }, async () => {
    ({ browser, page } = await openBrowser());
    await signIn(page, `${t.url}/collections/noted/runs`, t.admin);
    await page.getByRole("button", { name: `Run ${id}` }).click();
    const dialog = page.getByRole("dialog", { name: `Run ${id}` });
    await dialog.getByText(/The run wrote \d+ notes:/).waitFor();
    const text = await dialog.innerText();
    assert.match(text, /dns: \d+ notes, for example/);
    assert.match(text, /\.invalid/);
    assert.match(text, /Settings it uses/);
  });
});

const distributedSkip =
  (await serviceSkipReason("PostgreSQL", POSTGRES_URL)) ?? (await serviceSkipReason("Redis", REDIS_URL));

describe("no worker, no silence", { skip: distributedSkip }, () => {
  let t: TestServer;
  let prefix: string;
  let home: string;
  let browser: Browser | undefined;

  before(async () => {
    prefix = testPrefix();
    home = mkdtempSync(join(tmpdir(), "sightline-waiting-"));
    t = await startTestServer("postgres", {
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      schedulerIntervalSeconds: 3600,
    });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    if (prefix) await dropRedisPrefix(REDIS_URL, prefix);
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test("a run says it waits for a worker, in the API, the CLI, the dashboard and /metrics", async (context) => {
    await t.request("POST", "/api/collections", {
      body: { name: "alone", scan_rate: "on_demand", seeds: [{ type: "Domain", name: "alone.invalid" }] },
    });
    const sentence = /^Waiting for a worker \(none seen in the last 30 s\): start one with sightline worker/;
    const started = await runClientCommand(t, home, ["run", "alone"]);
    assert.equal(started.code, 0, started.output);
    assert.match(started.output, /Run 1 of alone is queued/);
    assert.match(started.output, new RegExp(sentence.source.slice(1), "m"));

    const run = await getRun(t, "alone", 1);
    assert.equal(run.status, "queued");
    assert.match(run.waiting, sentence);
    const list = await t.request("GET", "/api/collections/alone/runs");
    assert.match(list.body.result[0].waiting, sentence);

    const metrics = await fetch(`${t.url}/metrics`).then((response) => response.text());
    assert.match(metrics, /^sightline_workers 0$/m);

    // The dashboard's part needs Chromium (under CI its absence has already failed the file).
    if (chromium) return context.diagnostic(chromium);
    const { browser: opened, page } = await openBrowser();
    browser = opened;
    await signIn(page, `${t.url}/collections/alone/runs`, t.admin);
    await page
      .getByText("Waiting for a worker (none seen in the last 30 s)", { exact: false })
      .first()
      .waitFor();
  });

  test("once a worker says it is there, the run no longer says it waits", async () => {
    // A worker's presence is what this process's queue sees in Redis: start one in-process.
    const { startWorker } = await import("../../src/app/worker.ts");
    const worker = await startWorker({ ...t.config, logLevel: "silent" });
    try {
      await waitFor(async () => (await getRun(t, "alone", 1)).waiting === null, "the waiting note to go");
      const metrics = await fetch(`${t.url}/metrics`).then((response) => response.text());
      assert.match(metrics, /^sightline_workers 1$/m);
    } finally {
      await worker.close();
    }
  });
});
