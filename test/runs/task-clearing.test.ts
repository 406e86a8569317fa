/**
 * A run's task bookkeeping goes when the run ends — finished, failed or cancelled — while which worker did
 * how many tasks is still answered; a run that is still going keeps its tasks; and the scheduler's pass
 * clears what an ended run still holds (rows written late, a clearing cut short). Both dialects.
 */
import assert from "node:assert/strict";
import { hostname } from "node:os";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { TestWork } from "./fixtures/test-work.ts";
import { createCollection, force, waitFor, waitForRun } from "./helpers.ts";

const here = `${hostname()}:${process.pid}`;

for (const { dialect, skip } of await dialects()) {
  describe(`a run's tasks once it ends, on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let work: TestWork;

    before(async () => {
      t = await startTestServer(
        dialect,
        { taskConcurrency: 2, taskAttempts: 1, schedulerIntervalSeconds: 3600 },
        {
          runWork: (services) => {
            work = new TestWork(services, { fanout: 3, fail: ["broken.example"] });
            return work;
          },
        },
      );
    });
    after(async () => t?.close());

    const taskRows = async (runId: number) =>
      Number(
        (
          await t.server.services.store.db
            .selectFrom("run_tasks")
            .select((eb) => eb.fn.countAll<number>().as("n"))
            .where("run_id", "=", runId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const cleared = (runId: number) =>
      waitFor(async () => (await taskRows(runId)) === 0, `run ${runId}'s tasks to go`);

    test("a finished run's task rows go; tasks per worker stay", async () => {
      await createCollection(t, "done", ["a.example", "b.example"]);
      const id = await force(t, "done");
      const run = await waitForRun(t, "done", id, "finished", "failed");
      assert.equal(run.status, "finished", run.error);
      assert.equal(run.tasks_done, 8);
      await cleared(id);
      assert.deepEqual(await t.server.services.runs.workersOf(id), [{ worker: here, tasks: 8, attempts: 8 }]);
    });

    test("a failed run's tasks go; its error says which task failed and why", async () => {
      await createCollection(t, "broken", ["broken.example"]);
      const id = await force(t, "broken");
      const run = await waitForRun(t, "broken", id, "failed");
      assert.match(run.error, /seed:broken\.example.*broken\.example is set to fail/);
      await cleared(id);
      assert.deepEqual(await t.server.services.runs.workersOf(id), []);
    });

    test("a started run keeps every task; cancelled, they go", async () => {
      await createCollection(t, "held", ["h1.example", "h2.example"]);
      work.hold();
      try {
        const id = await force(t, "held");
        await waitFor(() => work.executed.some((task) => task.key === "seed:h1.example"), "a task to start");
        await t.server.runs.coordinator.clearAllEnded();
        assert.equal(await taskRows(id), 2, "nothing of a started run is cleared");
        assert.deepEqual(await t.server.services.runs.endedWithTasks(), []);
        const cancelled = await t.request("POST", `/api/collections/held/runs/${id}/cancel`);
        assert.equal(cancelled.body.result.status, "cancelled");
        await cleared(id);
      } finally {
        work.release();
      }
    });

    test("the scheduler's pass clears task rows an ended run still holds", async () => {
      await createCollection(t, "late", ["l.example"]);
      const id = await force(t, "late");
      await waitForRun(t, "late", id, "finished");
      await cleared(id);
      // As a task still in flight on another worker would leave it: a follow-up written after the end.
      await t.server.services.runs.addTasks(id, [{ key: "late:1", kind: "leaf", payload: {}, depth: 1 }]);
      assert.deepEqual(await t.server.services.runs.endedWithTasks(), [id]);
      await t.server.runs.scheduler!.tick();
      await cleared(id);
      assert.deepEqual(await t.server.services.runs.workersOf(id), [{ worker: here, tasks: 4, attempts: 4 }]);
    });
  });
}
