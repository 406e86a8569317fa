/**
 * A check's texts (description, remediation, references) are stored once per collection, however many
 * findings carry them, and every finding reads back with its own; a changed text is a new row while the
 * history keeps the old one; migration 015 moves the texts of findings stored before it. Both dialects.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Migrator } from "kysely/migration";
import { loadConfig } from "../../src/core/config.ts";
import { openStore, type Store } from "../../src/store/database.ts";
import type { Finding } from "../../src/store/entities.ts";
import { migrateToLatest } from "../../src/store/migrate.ts";
import type { MigrationDb } from "../../src/store/migrations/helpers.ts";
import { migrations } from "../../src/store/migrations/index.ts";
import { ResultQueries } from "../../src/store/result-queries.ts";
import { openServices, type Services } from "../../src/store/services.ts";
import { servicesWithCollection, testServerConfig } from "../helpers/server.ts";
import { createTestStore, dialects } from "../helpers/stores.ts";

const check = (name: string, entityName: string, description: string): Finding => ({
  name,
  entityKind: "Uri",
  entityName,
  prettyName: `Pretty ${name}`,
  severity: 4,
  confidence: "confirmed",
  category: "misconfiguration",
  description,
  remediation: `Fix ${name}.`,
  references: [{ type: "description", uri: `https://docs.example/${name}` }],
  details: { uri: entityName },
  scoped: true,
});

const frame = (host: number, description = "The page can be framed.") =>
  check("missing-x-frame-options", `http://10.0.0.${host}/`, description);

async function issues(db: Store["db"], collectionId: number, runId: number) {
  const run = await db
    .selectFrom("runs")
    .select("finished_at")
    .where("id", "=", runId)
    .executeTakeFirstOrThrow();
  const found: Array<Pick<Finding, "name" | "entityName" | "description" | "remediation" | "references">> =
    [];
  for await (const row of new ResultQueries(db).findings(
    { collectionId, runId, finishedAt: run.finished_at! },
    {},
  ))
    found.push({
      name: row.name,
      entityName: row.entityName,
      description: row.description,
      remediation: row.remediation,
      references: row.references,
    });
  return found.sort((a, b) => `${a.name}${a.entityName}`.localeCompare(`${b.name}${b.entityName}`));
}

const expected = (findings: Finding[]) =>
  findings
    .map(({ name, entityName, description, remediation, references }) => ({
      name,
      entityName,
      description,
      remediation,
      references,
    }))
    .sort((a, b) => `${a.name}${a.entityName}`.localeCompare(`${b.name}${b.entityName}`));

const count = async (db: MigrationDb, table: string) =>
  Number(
    (
      await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as("n"))
        .executeTakeFirstOrThrow()
    ).n,
  );

for (const { dialect, skip } of await dialects()) {
  describe(`a check's texts on ${dialect}`, { skip }, () => {
    let services: Services;
    let collectionId: number;
    let close: (() => Promise<void>) | undefined;

    before(async () => {
      ({ services, collectionId, close } = await servicesWithCollection(dialect));
    });
    after(() => close?.());

    async function runWith(findings: Finding[]) {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(run.id, [], new Date(Date.now() + 3_600_000).toISOString()));
      await services.entities.stage(run.id, collectionId, { entities: [], findings, notes: [] });
      assert.ok(await services.runs.claimFinish(run.id));
      await services.entities.finishRun(run.id, collectionId);
      assert.ok(await services.runs.markFinished(run.id));
      return run.id;
    }

    test("findings of one check share one row of texts; each reads back with its own", async () => {
      const first = [
        ...Array.from({ length: 40 }, (_, i) => frame(i)),
        check("server-version-disclosure", "http://10.0.0.1/", "The server names its version."),
        check("server-version-disclosure", "http://10.0.0.2/", "The server names its version."),
      ];
      const run1 = await runWith(first);
      assert.equal(await count(services.store.db, "findings"), 42);
      assert.equal(await count(services.store.db, "finding_texts"), 2, "two checks, two rows of texts");
      assert.deepEqual(await issues(services.store.db, collectionId, run1), expected(first));

      // The same again: nothing new. Then one check's text changes: one new row; run 1 reads the old.
      await runWith(first);
      assert.equal(await count(services.store.db, "finding_texts"), 2);
      const changed = [...Array.from({ length: 40 }, (_, i) => frame(i, "Framed by anyone.")), first[40]];
      const run3 = await runWith(changed);
      assert.equal(await count(services.store.db, "finding_texts"), 3);
      assert.deepEqual(await issues(services.store.db, collectionId, run3), expected(changed));
      assert.deepEqual(
        await issues(services.store.db, collectionId, run1),
        expected(first),
        "history keeps its texts",
      );
    });
  });

  describe(`migration 015 on ${dialect}`, { skip }, () => {
    test("moves the texts of existing findings, which read back the same", async () => {
      const testStore = await createTestStore(dialect);
      const store = openStore(loadConfig({}, testStore.config));
      try {
        const migrator = new Migrator({
          db: store.db,
          provider: {
            getMigrations: async () =>
              Object.fromEntries(
                Object.entries(migrations).map(([name, migration]) => [
                  name,
                  { up: (db: MigrationDb) => migration.up(db, store.dialect) },
                ]),
              ),
          },
        });
        const { error } = await migrator.migrateTo("014-run-workers");
        assert.equal(error, undefined);
        // As the merge wrote findings before migration 015: texts in every row.
        const services = await openServices(testServerConfig(testStore), { migrate: false });
        let collectionId: number;
        let runId: number;
        try {
          const account = await services.accounts.createAccount("old", "active");
          const team = await services.accounts.createTeam(account.id, "red");
          collectionId = (await services.collections.create(account.id, team.id, "old", [], "on_demand"))!.id;
          const run = (await services.runs.create(collectionId, "forced", 1))!;
          runId = run.id;
        } finally {
          await services.store.close();
        }
        const old = [
          ...Array.from({ length: 1200 }, (_, i) => frame(i)),
          check("weak-tls", "tls://10.0.0.1:443", "Weak ciphers."),
        ];
        const now = new Date().toISOString();
        const db = store.db as MigrationDb;
        await db
          .updateTable("runs")
          .set({ status: "finished", finished_at: now, updated_at: now })
          .where("id", "=", runId)
          .execute();
        await db
          .insertInto("collection_results")
          .values({ collection_id: collectionId, run_id: runId, finished_at: now })
          .execute();
        for (let i = 0; i < old.length; i += 100)
          await db
            .insertInto("findings")
            .values(
              old.slice(i, i + 100).map((finding, j) => ({
                collection_id: collectionId,
                name: finding.name,
                entity_kind: finding.entityKind,
                entity_name: finding.entityName,
                pretty_name: finding.prettyName,
                severity: finding.severity,
                confidence: finding.confidence,
                category: finding.category,
                description: finding.description,
                remediation: finding.remediation,
                reference_links: JSON.stringify(finding.references),
                details: JSON.stringify(finding.details),
                scoped: 1,
                first_seen: now,
                last_seen: now,
                first_run_id: runId,
                last_run_id: runId,
                version_run_id: runId,
                issue_id: i + j + 1,
                latest: 1,
                content_hash: "",
              })),
            )
            .execute();

        await migrateToLatest(store);
        assert.equal(await count(db, "finding_texts"), 2);
        assert.deepEqual(await issues(store.db, collectionId, runId), expected(old));
        // A later merge of the same check names the moved row: no second copy.
        const services2 = await openServices(testServerConfig(testStore), { migrate: false });
        try {
          const run = (await services2.runs.create(collectionId, "forced", 1))!;
          await services2.entities.stage(run.id, collectionId, {
            entities: [],
            findings: [frame(0)],
            notes: [],
          });
          await services2.entities.finishRun(run.id, collectionId);
          assert.equal(await count(db, "finding_texts"), 2);
        } finally {
          await services2.store.close();
        }
      } finally {
        await store.close();
        await testStore.drop();
      }
    });
  });
}
