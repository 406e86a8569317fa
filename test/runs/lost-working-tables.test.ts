/**
 * A run whose working tables were emptied under it (what a PostgreSQL crash does to its unlogged tables,
 * migration 020) is failed with that reason and never finished on what is left; earlier results stay.
 * The crash itself is the fault suite's (test/faults/outage.test.ts); here the tables are emptied by
 * hand, the same way on both dialects.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { WORKING_TABLES, WORKING_TABLES_LOST } from "../../src/store/working-marks.ts";
import { startTestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { TestWork } from "./fixtures/test-work.ts";
import { createCollection, force, waitFor, waitForRun } from "./helpers.ts";

for (const { dialect, skip } of await dialects()) {
  describe(`a run that lost its working tables on ${dialect}`, { skip }, () => {
    test("is failed with the reason at the scheduler's next pass, never finished; the next run is", async () => {
      let work: TestWork | undefined;
      const t = await startTestServer(
        dialect,
        { taskConcurrency: 2, schedulerIntervalSeconds: 3600 },
        { runWork: (services) => (work = new TestWork(services, { fanout: 2 })) },
      );
      try {
        await createCollection(t, "crashed", ["c1.example", "c2.example"]);
        const earlier = await force(t, "crashed");
        await waitForRun(t, "crashed", earlier, "finished");

        work!.hold();
        const lost = await force(t, "crashed");
        await waitFor(
          () => work!.executed.some((task) => task.runId === lost),
          "a task of the run in flight",
        );
        const { runs, store } = t.server.services;
        assert.deepEqual(await runs.lostWorkingTables(), [], "a started run is marked");
        // What a crash leaves: the working tables empty, the run's row as it was.
        for (const table of WORKING_TABLES) await store.db.deleteFrom(table).execute();
        assert.equal(await runs.workingTablesLost(lost), true);
        assert.deepEqual(
          (await runs.lostWorkingTables()).map((run) => run.id),
          [lost],
        );

        await t.server.runs.scheduler!.tick();
        const failed = await waitForRun(t, "crashed", lost, "failed");
        assert.equal(failed.error, WORKING_TABLES_LOST);
        work!.release();
        // The tasks in flight end, write into the emptied tables, and change nothing.
        await waitFor(async () => (await runs.lostWorkingTables()).length === 0, "no lost run left");
        assert.ok(!work!.finished.includes(lost), "the lost run was never finished");
        assert.equal((await runs.get(lost))!.status, "failed");
        const listed = await t.request("GET", "/api/collections/crashed/runs");
        assert.deepEqual(
          // biome-ignore lint/suspicious/noExplicitAny: runs as the API lists them
          listed.body.result.map((run: any) => [Number(run.id), run.status]).sort(),
          [
            [earlier, "finished"],
            [lost, "failed"],
          ],
          "the earlier run is still the finished one",
        );

        const next = await force(t, "crashed");
        const finished = await waitForRun(t, "crashed", next, "finished");
        assert.equal(finished.tasks_done, 6);
        assert.ok(work!.finished.includes(next));
      } finally {
        await t.close();
      }
    });

    test("a restarted server fails it before resuming anything", async () => {
      let work: TestWork | undefined;
      const t = await startTestServer(
        dialect,
        { schedulerIntervalSeconds: 3600, shutdownGraceSeconds: 0 },
        { runWork: (services) => (work = new TestWork(services, { fanout: 1 })) },
      );
      try {
        await createCollection(t, "restarted", ["r1.example"]);
        work!.hold();
        const lost = await force(t, "restarted");
        await waitFor(
          () => work!.executed.some((task) => task.runId === lost),
          "a task of the run in flight",
        );
        // The database lost the tables while the server ran; its scheduler has not passed since.
        await t.server.services.store.db.deleteFrom("run_working_marks").execute();
        await t.restart((services) => {
          work = new TestWork(services, { fanout: 1 });
          work.hold();
          return work;
        });
        const failed = await waitForRun(t, "restarted", lost, "failed", "finished");
        assert.equal(failed.status, "failed");
        assert.equal(failed.error, WORKING_TABLES_LOST);
        assert.deepEqual(work!.finished, []);
      } finally {
        await t.close();
      }
    });
  });
}
