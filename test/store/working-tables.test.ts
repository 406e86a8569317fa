/**
 * A run's working tables (its tasks and staging, migration 020): unlogged on PostgreSQL, with no foreign
 * key and logged id sequences; a started run has a mark that goes with them in a crash, and the merge
 * refuses a started run without it, inside its own transaction. A collection's deletion takes its runs'
 * working rows by hand. Both dialects.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import type { Services } from "../../src/store/services.ts";
import { WORKING_TABLES_LOST } from "../../src/store/working-marks.ts";
import { servicesWithCollection } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

const WORKING_TABLES = ["run_tasks", "staged_entities", "staged_findings", "run_working_marks"] as const;

for (const { dialect, skip } of await dialects()) {
  describe(`a run's working tables on ${dialect}`, { skip }, () => {
    let services: Services;
    let collectionId: number;
    let close: (() => Promise<void>) | undefined;
    before(async () => {
      ({ services, collectionId, close } = await servicesWithCollection(dialect));
    });
    after(() => close?.());

    const deadline = () => new Date(Date.now() + 3_600_000).toISOString();
    const task = (key: string) => ({ key, kind: "test", payload: {}, depth: 0 });
    const stage = (runId: number, name: string, collection = collectionId) =>
      services.entities.stage(runId, collection, {
        entities: [
          {
            kind: "DnsRecord",
            name,
            details: {},
            scoped: true,
            hidden: false,
            depth: 0,
            aliases: [],
            ancestors: [],
          },
        ],
        findings: [],
        notes: [],
      });
    const rowsOf = async (table: (typeof WORKING_TABLES)[number], runId: number) =>
      Number(
        (
          await services.store.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number>().as("n"))
            .where("run_id", "=", runId)
            .executeTakeFirstOrThrow()
        ).n,
      );

    test("a started run is marked until it ends", async () => {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.equal(await rowsOf("run_working_marks", run.id), 0, "a queued run has no working tables yet");
      assert.equal(await services.runs.workingTablesLost(run.id), false, "nor has it lost any");
      assert.ok(await services.runs.start(run.id, [task("a")], deadline()));
      assert.equal(await rowsOf("run_working_marks", run.id), 1);
      assert.equal(await services.runs.workingTablesLost(run.id), false);
      assert.deepEqual(await services.runs.lostWorkingTables(), []);
      assert.ok(await services.runs.end(run.id, "cancelled", null));
      assert.equal(await rowsOf("run_working_marks", run.id), 0, "gone as the run ended");
      assert.equal(await services.runs.workingTablesLost(run.id), false, "an ended run has nothing to lose");

      const finished = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(finished.id, [], deadline()));
      assert.ok(await services.runs.claimFinish(finished.id));
      assert.equal(await rowsOf("run_working_marks", finished.id), 1, "a finish under way keeps it");
      assert.ok(await services.runs.markFinished(finished.id));
      assert.equal(await rowsOf("run_working_marks", finished.id), 0, "gone as the run finished");
    });

    test("the merge refuses a started run without its mark, and keeps what was staged", async () => {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(run.id, [task("b")], deadline()));
      await stage(run.id, "kept.acme.test");
      await services.store.db.deleteFrom("run_working_marks").where("run_id", "=", run.id).execute();
      assert.deepEqual(
        (await services.runs.lostWorkingTables()).map((row) => row.id),
        [run.id],
      );
      await assert.rejects(services.entities.finishRun(run.id, collectionId), {
        message: WORKING_TABLES_LOST,
      });
      assert.equal(await rowsOf("staged_entities", run.id), 1, "the refused merge changed nothing");
      const results = await services.store.db
        .selectFrom("collection_results")
        .select("run_id")
        .where("collection_id", "=", collectionId)
        .executeTakeFirst();
      assert.notEqual(results?.run_id, run.id, "the run's results were not made current");
      assert.ok(await services.runs.end(run.id, "failed", WORKING_TABLES_LOST));
    });

    test("deleting a collection deletes its runs' tasks, staging and marks", async () => {
      const other = (await services.collections.create(1, 1, "doomed", [], "on_demand"))!;
      const run = (await services.runs.create(other.id, "forced", 1))!;
      assert.ok(await services.runs.start(run.id, [task("c"), task("d")], deadline()));
      await stage(run.id, "doomed.acme.test", other.id);
      const kept = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(kept.id, [task("e")], deadline()));
      assert.ok(await services.collections.delete(other.id));
      for (const table of WORKING_TABLES)
        assert.equal(await rowsOf(table, run.id), 0, `${table} of the deleted run`);
      assert.equal(await rowsOf("run_tasks", kept.id), 1, "another collection's run keeps its tasks");
      assert.equal(await rowsOf("run_working_marks", kept.id), 1);
      assert.ok(await services.runs.end(kept.id, "cancelled", null));
    });

    // PostgreSQL only: SQLite has no unlogged tables and keeps its keys.
    if (dialect === "postgres")
      test("unlogged, with no foreign key, and their id sequences logged", async () => {
        const { rows } = await sql<{ relname: string; relpersistence: string }>`
        select relname, relpersistence from pg_class
        where relname in ('run_tasks', 'staged_entities', 'staged_findings', 'run_working_marks',
          'run_tasks_id_seq', 'staged_entities_id_seq', 'staged_findings_id_seq')
        order by relname`.execute(services.store.db);
        assert.deepEqual(Object.fromEntries(rows.map((row) => [row.relname, row.relpersistence])), {
          run_tasks: "u",
          run_tasks_id_seq: "p",
          run_working_marks: "u",
          staged_entities: "u",
          staged_entities_id_seq: "p",
          staged_findings: "u",
          staged_findings_id_seq: "p",
        });
        const { rows: keys } = await sql<{ conname: string }>`
        select conname from pg_constraint
        where contype = 'f' and conrelid::regclass::text in ('run_tasks', 'staged_entities', 'staged_findings', 'run_working_marks')`.execute(
          services.store.db,
        );
        assert.deepEqual(keys, []);
      });
  });
}
