/** Collection and result client commands: real `sightline` processes against a real server. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { resultRows, toCsv } from "../../src/cli/collections.ts";
import { overviewLines } from "../../src/cli/overview.ts";
import { runClientCommand } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

describe("sightline collections / results (client commands)", () => {
  let t: TestServer;
  let home: string;

  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
    home = mkdtempSync(join(tmpdir(), "sightline-client-"));
  });
  after(async () => {
    await t?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  const sightline = (args: string[], env: Record<string, string> = {}) =>
    runClientCommand(t, home, args, env);

  test("create from flags and a file, add, show, list, delete", async () => {
    const file = join(home, "seeds.txt");
    writeFileSync(
      file,
      "# our estate\nIpAddress 192.0.2.10\n\nNameserver ns1.acme.example\nNetBlock:198.51.100.0/24\n",
    );
    const created = await sightline([
      "collections",
      "create",
      "acme",
      "--seed",
      "Domain:acme.example",
      "--seeds-file",
      file,
    ]);
    assert.equal(created.code, 0, created.output);
    assert.match(created.output, /Created collection acme with 4 seeds\./);

    const added = await sightline([
      "collections",
      "add-seeds",
      "acme",
      "--seed",
      "www.acme.example",
      "--seed",
      "acme.example",
    ]);
    assert.match(added.output, /Added 1 new seeds to acme; it has 5\./);

    const shown = await sightline(["collections", "show", "acme", "--json"]);
    const collection = JSON.parse(shown.output);
    assert.deepEqual(
      collection.seeds.map((s: { type: string }) => s.type).sort(),
      ["DnsRecord", "Domain", "IpAddress", "NetBlock", "Nameserver"].sort(),
    );

    const list = await sightline(["collections", "list", "--json"]);
    assert.deepEqual(JSON.parse(list.output), ["acme"]);

    const overview = await sightline(["results", "acme", "overview"]);
    assert.equal(overview.code, 0, overview.output);
    assert.match(
      overview.output,
      /^acme: 5 seeds\nLast run: none yet\nResults: none yet \(no run has finished\)\n$/,
    );

    const deleted = await sightline(["collections", "delete-seeds", "acme"]);
    assert.match(deleted.output, /Deleted 5 seeds from acme\./);
  });

  test("bad input and a wrong key: non-zero exit and a sentence", async () => {
    const badSeed = await sightline(["collections", "create", "x", "--seed", "what is this"]);
    assert.equal(badSeed.code, 2);
    assert.match(badSeed.output, /cannot tell what "what is this" is/);
    const apiRefused = await sightline(["collections", "create", "x", "--seed", "IpAddress:300.1.1.1"]);
    assert.equal(apiRefused.code, 1);
    assert.match(apiRefused.output, /not a valid IpAddress/);
    const kind = await sightline(["results", "acme", "secrets"]);
    assert.equal(kind.code, 2);
    assert.match(kind.output, /Unknown result kind "secrets"/);
    const wrongKey = await sightline(["collections", "list"], { SERVICE_SECRET_KEY: "wrong" });
    assert.equal(wrongKey.code, 1);
    assert.match(wrongKey.output, /not valid or has been revoked/);
    const missing = await sightline(["collections", "show", "nope"]);
    assert.equal(missing.code, 1);
    assert.match(missing.output, /No collection named "nope"/);
  });
});

test("rows and CSV", () => {
  assert.deepEqual(resultRows("hosts", { "192.0.2.1": { os: "" } }), [{ ip: "192.0.2.1", os: "" }]);
  assert.equal(
    toCsv([
      { name: 'a "quoted", value', ports: [{ number: "0.443e3" }] },
      { name: "b", extra: 1 },
    ]),
    // People and spreadsheets read plain numbers: 443, not the wire's "0.443e3".
    'name,ports,extra\r\n"a ""quoted"", value","[{""number"":443}]",\r\nb,,1\r\n',
  );
});

test("the overview reads as lines: the last run, counts, issues by severity in words, what is new", () => {
  const run = {
    id: 7,
    status: "finished",
    created_at: "2026-11-22 10:00:00 UTC",
    priority: 1,
    trigger: "forced",
    started_at: "2026-11-22 10:00:01 UTC",
    finished_at: "2026-11-22 10:02:00 UTC",
    error: null,
    tasks_total: 40,
    tasks_done: 40,
    waiting: null,
  } as const;
  const counts = {
    applications: 3,
    domains: 2,
    hosts: 1,
    services: 4,
    certificates: 1,
    netblocks: 1,
    issues: 5,
    products: 2,
    vulnerabilities: 0,
    recent: 6,
  };
  const lines = overviewLines("acme", {
    seed_count: 1,
    last_run: run,
    results_run_id: 7,
    counts,
    issues_by_severity: [1, 2, 3, 4, 5].map((level) => ({ severity: `0.${level}e1`, count: level - 1 })),
    top_products: [{ product: "nginx 1.25.3", count: "2" }],
    top_ports: [{ port: "0.443e3", protocol: "tcp", count: 2 }],
    new_since_previous_run: { previous_run_id: 6, entities: 3, issues: 1 },
    disappeared_since_previous_run: { entities: 2, issues: 0 },
    change_note: null,
  });
  assert.deepEqual(lines, [
    "acme: 1 seed",
    "Last run: 7, finished (forced), 40/40 tasks, started 2026-11-22 10:00:01 UTC, ended 2026-11-22 10:02:00 UTC",
    "Results of run 7: 3 applications, 2 domains, 1 hosts, 4 services, 1 certificates, 1 netblocks, 5 issues, 2 products, 0 vulnerabilities, 6 recent",
    "Issues by severity: 0 critical, 1 high, 2 medium, 3 low, 4 informational",
    "New since run 6: 3 entities, 1 issues",
    "Gone since run 6: 2 entities, 0 issues",
  ]);
});
