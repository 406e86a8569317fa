/** `sightline export` against a real server: the server's CSV/NDJSON streamed to a file or stdout, filters, errors. */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { spawnSightline } from "../helpers/processes.ts";
import { fixtureCounts } from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { apiCollection, parseCsv, runIn } from "./helpers.ts";

const HOSTS = 300;

describe("sightline export", () => {
  let t: TestServer;
  let home: string;

  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
    home = mkdtempSync(join(tmpdir(), "sightline-export-"));
    await runIn(t, await apiCollection(t, "estate"), { hosts: HOSTS });
  });
  after(async () => {
    await t?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  async function sightline(args: string[]) {
    const child = spawnSightline(args, {
      HOME: home,
      SIGHTLINE_URL: t.url,
      SERVICE_ACCESS_KEY: t.admin.accessKey,
      SERVICE_SECRET_KEY: t.admin.secretKey,
    });
    const code = await child.exited;
    return { code, output: child.output() };
  }

  test("sightline results: a table for people, JSON and CSV with the same hosts", async () => {
    const json = await sightline(["results", "estate", "hosts", "--format", "json"]);
    assert.equal(json.code, 0, json.output);
    const hosts = Object.keys(JSON.parse(json.output));
    assert.equal(hosts.length, HOSTS);
    const csv = await sightline(["results", "estate", "hosts", "--format", "csv"]);
    assert.equal(csv.code, 0, csv.output);
    const rows = parseCsv(csv.output);
    assert.equal(rows[0][0], "ip");
    assert.deepEqual(
      rows
        .slice(1)
        .map((row) => row[0])
        .sort(),
      [...hosts].sort(),
    );
    const table = await sightline(["results", "estate", "hosts"]);
    assert.equal(table.code, 0, table.output);
    assert.match(table.output, /^IP\s+FIRST_SEEN\s+LAST_SEEN\s+NET_NAME/m);
    assert.ok(
      hosts.every((ip) => table.output.includes(ip)),
      "every host has its row",
    );
  });

  test("CSV to a file: the server's rows, header first, equal to the JSON items", async () => {
    const file = join(home, "issues.csv");
    const result = await sightline(["export", "estate", "issues", "--format", "csv", "--output", file]);
    assert.equal(result.code, 0, result.output);
    const truth = fixtureCounts(HOSTS);
    assert.match(result.output, new RegExp(`Wrote ${truth.issues} issues of estate to`));
    const [header, ...rows] = parseCsv(readFileSync(file, "utf8"));
    assert.equal(rows.length, truth.issues);
    const json = (await t.request("GET", "/api/collections/estate/issues")).body.result;
    assert.deepEqual(header, Object.keys(json[0]));
    assert.equal(rows[0][header.indexOf("id")], json[0].id);
    assert.ok(!existsSync(`${file}.partial`));
  });

  test("NDJSON to stdout with filters, one object per line", async () => {
    const result = await sightline([
      "export",
      "estate",
      "hosts",
      "--format",
      "ndjson",
      "--scoped",
      "false",
      "--port",
      "22",
    ]);
    assert.equal(result.code, 0, result.output);
    const hosts = result.output
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    assert.ok(hosts.length > 0);
    for (const host of hosts) {
      assert.equal(host.scoped, false);
      assert.ok(host.ports.some((p: { number: string }) => p.number === "0.22e2"));
      assert.match(host.ip, /^10\./);
    }
  });

  test("JSON is the envelope; the API's refusals are printed as its sentences", async () => {
    const json = await sightline(["export", "estate", "products", "--format", "json", "--limit", "2"]);
    assert.equal(json.code, 0, json.output);
    const body = JSON.parse(json.output);
    assert.equal(body.success, true);
    assert.equal(body.result.length, 2);

    const refused = await sightline(["export", "estate", "issues", "--severity", "7"]);
    assert.equal(refused.code, 1);
    assert.match(refused.output, /severity/);
    const missing = await sightline(["export", "nope", "hosts", "--output", join(home, "nope.csv")]);
    assert.equal(missing.code, 1);
    assert.match(missing.output, /No collection named "nope"/);
    assert.ok(!existsSync(join(home, "nope.csv")));
    const kind = await sightline(["export", "estate", "overview"]);
    assert.equal(kind.code, 2);
    assert.match(kind.output, /Unknown result list "overview"/);
  });
});
