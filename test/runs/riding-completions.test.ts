/**
 * A task gives its slot back and its completion rides with the next task's start, with its follow-ups
 * unless they are many (one statement on PostgreSQL, one commit on SQLite): a run still finishes with
 * every task done and counted once, the last completions are written on their own, and a completion that
 * fails to be written fails its own task's attempt (retried), not the task it rode with. Both dialects.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { mayRide, RIDING_FOLLOW_UPS } from "../../src/runs/riding-completions.ts";
import { STAGING_PIECE, type StagingRows } from "../../src/store/entities.ts";
import type { DoneTask } from "../../src/store/runs.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { TestWork } from "./fixtures/test-work.ts";
import { createCollection, force, waitForRun } from "./helpers.ts";

test("a completion rides unless its follow-ups or its rows are many", () => {
  const notes = (n: number): StagingRows => ({
    entities: [],
    findings: [],
    notes: Array.from({ length: n }, () => ({ run_id: 1, collection_id: 1, created_at: "", message: "m" })),
  });
  const followUps = (n: number) => Array.from({ length: n }, (_, i) => i);
  assert.equal(mayRide([], undefined), true);
  assert.equal(mayRide(followUps(RIDING_FOLLOW_UPS), notes(10)), true);
  assert.equal(mayRide(followUps(RIDING_FOLLOW_UPS + 1), undefined), false, "many follow-ups");
  assert.equal(mayRide([], notes(STAGING_PIECE)), true);
  assert.equal(mayRide([], notes(STAGING_PIECE + 1)), false, "many rows, written in pieces");
  assert.equal(mayRide(followUps(10), notes(STAGING_PIECE - 9)), false, "many in all");
});

for (const { dialect, skip } of await dialects()) {
  describe(`completions riding with the next start, on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let work: TestWork;
    const rides: Array<{ riders: number; begins: boolean; followUps: number }> = [];
    let completions = 0;
    let failNextRide = false;

    before(async () => {
      t = await startTestServer(
        dialect,
        { taskConcurrency: 2, taskAttempts: 3, schedulerIntervalSeconds: 3600 },
        {
          runWork: (services) => {
            work = new TestWork(services, {
              fanout: 12,
              fanoutOf: { "many.example": RIDING_FOLLOW_UPS + 1 },
              taskMs: 2,
            });
            return work;
          },
        },
      );
      // Watch the store's two ways of recording a completion.
      const runs = t.server.services.runs;
      const completeAndBegin = runs.completeAndBegin.bind(runs);
      runs.completeAndBegin = async (done: DoneTask[], worker, next) => {
        rides.push({
          riders: done.length,
          begins: next !== undefined,
          followUps: done.reduce((sum, task) => sum + (task.followUps?.length ?? 0), 0),
        });
        if (failNextRide && done.length > 0) {
          failNextRide = false;
          throw new Error("a rider's row was refused");
        }
        return completeAndBegin(done, worker, next);
      };
      const completeTask = runs.completeTask.bind(runs);
      runs.completeTask = async (...args) => {
        completions++;
        return completeTask(...args);
      };
    });
    after(async () => t?.close());

    test("completions ride with later starts, follow-ups too; the run finishes with every task done once", async () => {
      rides.length = 0;
      completions = 0;
      await createCollection(t, "fan", ["a.example", "b.example"]);
      const id = await force(t, "fan");
      const run = await waitForRun(t, "fan", id, "finished", "failed");
      assert.equal(run.status, "finished", run.error);
      assert.equal(run.tasks_done, 26, "2 seeds and 24 leaves, each counted once");
      assert.equal(run.tasks_total, 26);
      assert.equal(completions, 0, "none completes on its own");
      const riders = rides.reduce((sum, ride) => sum + ride.riders, 0);
      assert.equal(riders, 26, "every task rode once");
      assert.equal(
        rides.reduce((sum, ride) => sum + ride.followUps, 0),
        24,
        "the seeds' follow-ups rode with them",
      );
      assert.ok(
        rides.some((ride) => ride.riders > 0 && ride.begins),
        "some completions rode with a task's start",
      );
      assert.ok(
        rides.some((ride) => ride.riders > 0 && !ride.begins),
        "the last ones were written on their own",
      );
      const workers = await t.server.services.runs.workersOf(id);
      assert.equal(
        workers.reduce((sum, worker) => sum + worker.tasks, 0),
        26,
      );
    });

    test("a completion with many follow-ups is written on its own", async () => {
      rides.length = 0;
      completions = 0;
      await createCollection(t, "many", ["many.example"]);
      const id = await force(t, "many");
      const run = await waitForRun(t, "many", id, "finished", "failed");
      assert.equal(run.status, "finished", run.error);
      assert.equal(run.tasks_done, RIDING_FOLLOW_UPS + 2);
      assert.equal(completions, 1, "the seed's completion, with its follow-ups");
      assert.equal(
        rides.reduce((sum, ride) => sum + ride.followUps, 0),
        0,
      );
      assert.equal(
        rides.reduce((sum, ride) => sum + ride.riders, 0),
        RIDING_FOLLOW_UPS + 1,
        "every leaf rode",
      );
    });

    test("a ride that fails costs its riders an attempt each, retried; the run still finishes", async () => {
      rides.length = 0;
      failNextRide = true;
      await createCollection(t, "flaky", ["c.example"]);
      const id = await force(t, "flaky");
      const run = await waitForRun(t, "flaky", id, "finished", "failed");
      assert.equal(run.status, "finished", run.error);
      assert.equal(failNextRide, false, "a ride failed");
      assert.equal(run.tasks_done, 13);
      const workers = await t.server.services.runs.workersOf(id);
      const attempts = workers.reduce((sum, worker) => sum + worker.attempts, 0);
      assert.ok(attempts > 13, `${attempts} attempts: the failed riders were tried again`);
    });
  });
}
