/**
 * The results' JSON columns are stored compressed (json-codec.ts, migration 017) and read back as they
 * were written; values too short to gain are stored as they are; and a database whose rows were written
 * before — JSON text, on PostgreSQL in text columns that the migration turns into bytea — reads the same
 * with no rewrite, and keeps doing so while later runs add compressed rows next to them. Both dialects.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import type { Finding, StagedEntity } from "../../src/store/entities.ts";
import { decodeJson, encodeJson } from "../../src/store/json-codec.ts";
import { encodeJsonMany } from "../../src/store/json-codec-thread.ts";
import { DICTIONARY_1 } from "../../src/store/json-dictionary.ts";
import { migrateToLatest } from "../../src/store/migrate.ts";
import { migrations } from "../../src/store/migrations/index.ts";
import { ResultQueries } from "../../src/store/result-queries.ts";
import type { Services } from "../../src/store/services.ts";
import { servicesWithCollection } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

const FORMAT_1 = 0x01;

describe("the JSON codec", () => {
  test("many values at once: the same bytes as one at a time, on the encoding thread or here", async () => {
    const jsons = Array.from({ length: 500 }, (_, i) =>
      JSON.stringify(
        i % 7 === 0 ? [] : { ip_address: `10.0.${i >> 8}.${i & 255}`, port: 443, banner: "x".repeat(i) },
      ),
    );
    for (const batch of [jsons, jsons.slice(0, 3), []]) {
      const encoded = await encodeJsonMany(batch);
      assert.equal(encoded.length, batch.length);
      for (const [i, value] of encoded.entries()) {
        assert.ok(Buffer.isBuffer(value), "a Buffer, as both drivers bind bytes");
        assert.deepEqual(value, Buffer.from(encodeJson(batch[i])));
        assert.equal(decodeJson(value), batch[i]);
      }
    }
  });

  test("answers the JSON it was given, whatever it holds", () => {
    for (const value of [
      [],
      {},
      [{ name: "a.test", type: "Service::Entity::Domain" }],
      { title: "Café ☕ \u0000 \u2028 𝄞", nested: { list: [1, 2.5, null, true, "x".repeat(5000)] } },
      { uri: "https://www.example.org:443/", code: "200", headers: ["server: nginx/1.25.3"], port: 443 },
    ]) {
      const json = JSON.stringify(value);
      assert.equal(decodeJson(encodeJson(json)), json);
    }
  });

  test("compresses what gains from it, keeps short values as they are, reads plain JSON", () => {
    const long = JSON.stringify([
      { name: "ports:IpAddress:192.0.2.1", task: "ports", entity_type: "Service::Entity::IpAddress" },
    ]);
    const stored = encodeJson(long);
    assert.equal(stored[0], FORMAT_1);
    assert.ok(stored.length < long.length / 2, `${stored.length} bytes for ${long.length}`);
    assert.deepEqual(Buffer.from(encodeJson("[]")).toString(), "[]");
    assert.equal(decodeJson("[1]"), "[1]", "the text of a row written before");
    assert.equal(decodeJson(new TextEncoder().encode('{"a":1}')), '{"a":1}', "plain bytes");
  });

  test("the dictionary fits the window deflate reaches back over (8 KB less 262 bytes)", () => {
    assert.ok(Buffer.byteLength(DICTIONARY_1) <= 8192 - 262);
  });
});

const application = (host: number): StagedEntity => ({
  kind: "Uri",
  name: `https://www${host}.c.test:443`,
  details: {
    uri: `https://www${host}.c.test/`,
    code: "200",
    title: `Portal ${host}`,
    headers: ["server: nginx/1.25.3", "content-type: text/html", "date: …"],
    content: [{ name: "Missing Security Header - x-frame-options", type: "content", result: true }],
    response_data_hash: `${host}`.padStart(64, "0"),
    products: [["Nginx", "1.25.3"]],
    protocol: "HTTP/1.1",
    service: "https",
    port: 443,
    ip_address: `192.0.2.${host}`,
    hostname: `www${host}.c.test`,
  },
  scoped: true,
  hidden: false,
  depth: 1,
  aliases: [],
  ancestors: [
    { name: "c.test", type: "Service::Entity::Domain" },
    { name: `192.0.2.${host}:443/tcp`, type: "Service::Entity::NetworkService" },
  ],
  taskResult: {
    name: `http:192.0.2.${host}:443`,
    task: "http",
    entity_type: "Service::Entity::NetworkService",
    entity_name: `192.0.2.${host}:443/tcp`,
    depth: 1,
  },
});

const address = (host: number): StagedEntity => ({
  kind: "IpAddress",
  name: `192.0.2.${host}`,
  details: { resolutions: [`www${host}.c.test`] },
  scoped: true,
  hidden: false,
  depth: 0,
  aliases: [],
  ancestors: [],
});

const disclosure = (host: number): Finding => ({
  name: "server_version_disclosure",
  entityKind: "Uri",
  entityName: `https://www${host}.c.test:443`,
  prettyName: "Server version disclosed",
  severity: 5,
  confidence: "confirmed",
  category: "misconfiguration",
  description: "The server names its version.",
  remediation: "Hide it.",
  references: [],
  details: {
    request: { method: "GET", url: `https://www${host}.c.test/`, headers: { accept: "*/*" } },
    status: "200",
    headers_disclosed: ["server: nginx/1.25.3"],
    template_id: "server-version-disclosure",
  },
  scoped: true,
});

const HOSTS = [1, 2, 3, 4, 5];

/** The JSON columns, by table, and each row's values as stored. */
const COLUMNS = { entities: ["details", "ancestors", "task_results"], findings: ["details"] } as const;

for (const { dialect, skip } of await dialects()) {
  describe(`compressed JSON columns on ${dialect}`, { skip }, () => {
    let services: Services;
    let collectionId: number;
    let close: (() => Promise<void>) | undefined;

    before(async () => {
      ({ services, collectionId, close } = await servicesWithCollection(dialect));
    });
    after(() => close?.());

    async function runWith(hosts: number[]) {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(run.id, [], new Date(Date.now() + 3_600_000).toISOString()));
      await services.entities.stage(run.id, collectionId, {
        entities: hosts.flatMap((host) => [application(host), address(host)]),
        findings: hosts.map(disclosure),
        notes: [],
      });
      assert.ok(await services.runs.claimFinish(run.id));
      await services.entities.finishRun(run.id, collectionId);
      assert.ok(await services.runs.markFinished(run.id));
    }

    /** The latest run's entities with provenance and its issues, as the API's readers see them. */
    async function results() {
      const run = await services.entities.resultRun(collectionId);
      assert.ok(run);
      const asOf = { collectionId, runId: run.runId, finishedAt: run.finishedAt };
      const queries = new ResultQueries(services.store.db);
      const entities = [];
      for await (const row of queries.entities(asOf, {}, { provenance: true }))
        entities.push({ ...row, lastSeen: undefined, rowId: undefined });
      const issues = [];
      for await (const row of queries.findings(asOf, {})) issues.push({ ...row, lastSeen: undefined });
      return { entities, issues };
    }

    async function stored(table: keyof typeof COLUMNS) {
      const { rows } = await sql<Record<string, string | Uint8Array> & { id: number }>`
        select ${sql.join([sql.ref("id"), ...COLUMNS[table].map((column) => sql.ref(column))])}
        from ${sql.table(table)} order by id`.execute(services.store.db);
      return rows;
    }

    test("a run's JSON is stored compressed and reads back as it was staged", async () => {
      await runWith(HOSTS);
      const { entities, issues } = await results();
      for (const host of HOSTS) {
        const staged = application(host);
        const read = entities.find((entity) => entity.name === staged.name);
        assert.deepEqual(read?.details, staged.details);
        assert.deepEqual(read?.ancestors, staged.ancestors);
        assert.deepEqual(read?.taskResults, [staged.taskResult]);
        const issue = issues.find((found) => found.entityName === staged.name);
        assert.deepEqual(issue?.details, disclosure(host).details);
      }
      assert.deepEqual(
        entities.find((entity) => entity.name === "192.0.2.1")?.details,
        address(1).details,
        "a small value",
      );
      for (const table of ["entities", "findings"] as const)
        for (const row of await stored(table))
          for (const column of COLUMNS[table]) {
            const value = row[column];
            assert.ok(value instanceof Uint8Array, `${table}.${column} is stored as bytes`);
            const json = decodeJson(value);
            if (json.length >= 64)
              assert.ok(
                value[0] === FORMAT_1 && value.length < json.length * 0.75,
                `${table}.${column}: ${value.length} bytes stored for ${json.length} of JSON`,
              );
          }
    });

    test("rows written before migration 017 read the same, before and after later runs", async () => {
      const written = await results();
      // As the database was before migration 017: every JSON value plain text in a text column.
      const db = services.store.db;
      for (const table of ["entities", "findings"] as const) {
        const rows = await stored(table);
        if (dialect === "postgres")
          await sql`alter table ${sql.table(table)} ${sql.join(
            COLUMNS[table].map((column) => sql`alter column ${sql.ref(column)} type text using ''`),
          )}`.execute(db);
        for (const row of rows)
          await sql`update ${sql.table(table)} set ${sql.join(
            COLUMNS[table].map((column) => sql`${sql.ref(column)} = ${decodeJson(row[column])}`),
          )} where id = ${row.id}`.execute(db);
      }
      // Migration 017 and those after it run again (each of them may run on a database it has changed).
      await sql`delete from kysely_migration where name >= '017'`.execute(db);
      assert.deepEqual(
        await migrateToLatest(services.store),
        Object.keys(migrations).filter((name) => name >= "017"),
      );

      const old = await stored("entities");
      for (const row of old) {
        const value = row.details;
        if (dialect === "sqlite") assert.equal(typeof value, "string", "SQLite keeps the old rows' text");
        else assert.ok(value instanceof Uint8Array && value[0] === "{".charCodeAt(0), "their UTF-8");
      }
      assert.deepEqual(await results(), written, "the old rows read as they did");

      // A later run: unchanged entities only continue their old (plain) versions; a changed one and a
      // new one get compressed versions; all of it reads as staged.
      await runWith([...HOSTS, 6]);
      const later = await results();
      const six = later.entities.find((entity) => entity.name === application(6).name);
      assert.deepEqual(six?.details, application(6).details);
      assert.deepEqual(
        later.entities.filter((entity) => !entity.name.includes("6")),
        written.entities,
        "the continued old rows",
      );
      const rows = await stored("entities");
      assert.ok(rows.length > old.length, "the new entity's versions were added");
      assert.ok(
        rows.slice(old.length).some((row) => (row.details as Uint8Array)[0] === FORMAT_1),
        "and compressed",
      );
    });
  });
}
