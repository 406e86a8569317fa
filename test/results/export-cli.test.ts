/** `sightline export` against a real server: the server's CSV/NDJSON streamed to a file or stdout, filters, errors. */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { after, before, describe, test } from "node:test";
import { ExportCounter, expectedItems } from "../../src/cli/export.ts";
import { runClientCommand } from "../helpers/processes.ts";
import { fixtureCounts } from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { apiCollection, parseCsv, runIn } from "./helpers.ts";

const HOSTS = 300;

/** What an ExportCounter counts of these chunks, passed through unchanged. */
async function counted(format: string, chunks: string[]) {
  const counter = new ExportCounter(format);
  const passed: Buffer[] = [];
  await pipeline(
    Readable.from(chunks.map((chunk) => Buffer.from(chunk))),
    counter,
    async (source: AsyncIterable<Buffer>) => {
      for await (const chunk of source) passed.push(chunk);
    },
  );
  assert.equal(Buffer.concat(passed).toString(), chunks.join(""));
  return { items: counter.items, bytes: counter.bytes };
}

test("an export's items are counted as they pass: CSV records after the header, NDJSON lines", async () => {
  // A quoted field holding newlines, a doubled quote and a quote split across chunks.
  const csv = ['name,note\nalpha,"two\nlines"\nbeta,"say ""hi', '"""\n"gam\nma",x\n', "delta,plain\n"];
  assert.deepEqual(await counted("csv", csv), { items: 4, bytes: Buffer.byteLength(csv.join("")) });
  assert.equal((await counted("ndjson", ['{"a":1}\n{"a":', "2}\n", '{"a":3}\n'])).items, 3);
  assert.equal((await counted("json", ['{"success":true,"result":[1,\n2]}'])).items, 0);
});

test("the items an export holds: the total past the offset, up to the limit", () => {
  assert.equal(expectedItems(300, {}), 300);
  assert.equal(expectedItems(300, { offset: "250", limit: "100" }), 50);
  assert.equal(expectedItems(300, { limit: "5" }), 5);
  assert.equal(expectedItems(300, { offset: "400" }), 0);
});

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

  const sightline = (args: string[]) => runClientCommand(t, home, args);

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
    assert.match(table.output, /^IP\s+PORTS\s+NAMES\s+NETWORK\s+COUNTRY\s+IN SCOPE$/m);
    assert.ok(
      hosts.every((ip) => table.output.includes(ip)),
      "every host has its row",
    );
  });

  test("sightline results services: each port with the service and product it answered with", async () => {
    const json = await sightline(["results", "estate", "services", "--format", "json"]);
    assert.equal(json.code, 0, json.output);
    const services = JSON.parse(json.output) as Array<{ address: string; port: number; service: string }>;
    assert.ok(services.length >= HOSTS * 2);
    assert.ok(services.some((service) => service.port === 22 && service.service === "ssh"));
    const table = await sightline(["results", "estate", "services"]);
    assert.equal(table.code, 0, table.output);
    assert.match(table.output, /^ADDRESS\s+PORT\s+PROTOCOL\s+SERVICE\s+PRODUCT\s+VERSION\s*$/m);
    assert.match(table.output, /\b22\s+tcp\s+ssh\b/);
    const lines = table.output.split("\n").filter((line) => /^10\./.test(line));
    assert.deepEqual(
      lines.slice(0, 3).map((line) => line.split(/\s+/).slice(0, 2).join(":")),
      ["10.0.0.0:80", "10.0.0.0:443", "10.0.0.1:22"],
      "addresses in numeric order, then ports",
    );
    const wide = await sightline(["results", "estate", "services", "--wide"]);
    assert.equal(wide.code, 0, wide.output);
    assert.match(wide.output, /\bTLS\b.*\bSTARTTLS\b/, "--wide shows the TLS facts too");
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

  test("a page to a file: the items written, not the list's total", async () => {
    const file = join(home, "issues-page.csv");
    const args = ["export", "estate", "issues", "--format", "csv", "--limit", "5", "--offset", "2"];
    const result = await sightline([...args, "--output", file]);
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /Wrote 5 issues of estate to .*issues-page\.csv \(\d+\.\d MB\)\./);
    assert.equal(parseCsv(readFileSync(file, "utf8")).length, 1 + 5);
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
