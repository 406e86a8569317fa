/** The run endpoints and the in-process lifecycle over real HTTP, on SQLite and PostgreSQL. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { RunEnded } from "../../src/runs/in-flight.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { TestWork, type TestWorkOptions } from "./fixtures/test-work.ts";
import { createCollection, force, getRun, waitFor, waitForRun } from "./helpers.ts";

const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/;

async function serverWithWork(
  dialect: "sqlite" | "postgres",
  options: TestWorkOptions,
  overrides: Parameters<typeof startTestServer>[1] = {},
) {
  let work: TestWork | undefined;
  const t = await startTestServer(
    dialect,
    { runConcurrency: 1, taskConcurrency: 1, taskAttempts: 2, schedulerIntervalSeconds: 3600, ...overrides },
    {
      runWork: (services) => {
        work = new TestWork(services, options);
        return work;
      },
    },
  );
  return { t, work: work! };
}

function assertError(
  response: { status: number; body: { success: boolean; message: string } },
  status: number,
) {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.success, false);
  assert.match(response.body.message, /\w+ .*\w+/, "a sentence");
}

for (const { dialect, skip } of await dialects()) {
  describe(`runs API on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let work: TestWork;

    before(async () => {
      ({ t, work } = await serverWithWork(dialect, { fanout: 2, fail: ["broken.example"] }));
    });
    after(async () => t?.close());

    test("schedule by POST and GET answers a string id; while the run is active, the same id", async () => {
      await createCollection(t, "acme", ["acme.example", "beta.example"]);
      work.hold();
      const post = await t.request("POST", "/api/collections/acme/schedule");
      assert.equal(post.status, 200, post.text);
      assert.deepEqual(Object.keys(post.body), ["success", "message", "result"]);
      assert.equal(post.body.success, true);
      assert.equal(post.body.message, "success");
      assert.match(post.body.result.id, /^\d+$/);
      const id = post.body.result.id;

      const get = await t.request("GET", "/api/collections/acme/schedule");
      assert.equal(get.status, 200, get.text);
      assert.equal(get.body.result.id, id, "GET while active answers the active run");
      const empty = await t.request("POST", "/api/collections/acme/schedule", {
        raw: "",
        headers: { "content-type": "application/json" },
      });
      assert.equal(empty.body.result.id, id, "an empty JSON body is no body");

      work.release();
      const run = await waitForRun(t, "acme", Number(id), "finished");
      assert.equal(run.tasks_total, 2 * 3, "two seeds, each with two follow-ups");
      assert.equal(run.tasks_done, run.tasks_total);
      assert.deepEqual(work.finished, [Number(id)]);

      const next = await t.request("GET", "/api/collections/acme/schedule");
      assert.notEqual(next.body.result.id, id, "a finished run is not reused");
      await waitForRun(t, "acme", Number(next.body.result.id), "finished");
    });

    test("the run listing has the spec's fields and types, newest first", async () => {
      const response = await t.request("GET", "/api/collections/acme/runs");
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.success, true);
      assert.equal(response.body.message, "success");
      const runs = response.body.result;
      assert.equal(runs.length, 2);
      assert.ok(runs[0].id > runs[1].id, "newest first");
      for (const run of runs) {
        assert.ok(Number.isInteger(run.id), "id is an integer");
        assert.ok(Number.isInteger(run.priority), "priority is an integer");
        assert.equal(run.priority, 1);
        assert.equal(run.status, "finished");
        assert.equal(run.trigger, "forced");
        assert.match(run.created_at, TIMESTAMP);
        assert.match(run.started_at, TIMESTAMP);
        assert.match(run.finished_at, TIMESTAMP);
        assert.equal(run.error, null);
        assert.ok(Number.isInteger(run.tasks_total) && Number.isInteger(run.tasks_done));
        assert.deepEqual(Object.keys(run).slice(0, 4), ["id", "status", "created_at", "priority"]);
      }
    });

    test("queued while another run holds the only run slot, then started, then finished", async () => {
      await createCollection(t, "first", ["one.example"]);
      await createCollection(t, "second", ["two.example"]);
      work.hold();
      const first = await force(t, "first");
      await waitForRun(t, "first", first, "started");
      const second = await force(t, "second");
      const queued = await getRun(t, "second", second);
      assert.equal(queued.status, "queued");
      assert.equal(queued.started_at, null);
      assert.equal(queued.tasks_total, 0);
      work.release();
      const done = await waitForRun(t, "second", second, "finished");
      assert.match(done.started_at, TIMESTAMP);
      assert.equal(done.tasks_done, 3);
      assert.equal((await getRun(t, "first", first)).status, "finished");
    });

    test("cancel a started and a queued run; a finished one is 409", async () => {
      await createCollection(t, "stoppable", ["stop.example"]);
      await createCollection(t, "waiting", ["wait.example"]);
      work.hold();
      const started = await force(t, "stoppable");
      await waitForRun(t, "stoppable", started, "started");
      const queued = await force(t, "waiting");

      const cancelQueued = await t.request("POST", `/api/collections/waiting/runs/${queued}/cancel`);
      assert.equal(cancelQueued.status, 200, cancelQueued.text);
      assert.equal(cancelQueued.body.result.status, "cancelled");

      const inFlight = work.aborted.length;
      const cancelled = await t.request("POST", `/api/collections/stoppable/runs/${started}/cancel`);
      assert.equal(cancelled.status, 200, cancelled.text);
      assert.equal(cancelled.body.result.status, "cancelled");
      assert.match(cancelled.body.result.error, /Cancelled by admin/);
      assert.match(cancelled.body.result.finished_at, TIMESTAMP);
      await waitFor(() => work.aborted.length > inFlight, "the task in flight to be aborted");
      assert.ok(work.aborted.at(-1)!.reason instanceof RunEnded);
      work.release();

      const again = await t.request("POST", `/api/collections/stoppable/runs/${started}/cancel`);
      assertError(again, 409);
      assert.match(again.body.message, /already cancelled/);
      assert.ok(!work.finished.includes(started) && !work.finished.includes(queued), "finish never called");

      const fresh = await force(t, "stoppable");
      assert.notEqual(fresh, started, "a cancelled run is not active");
      await waitForRun(t, "stoppable", fresh, "finished");
      assertError(await t.request("POST", `/api/collections/stoppable/runs/${fresh}/cancel`), 409);
    });

    test("a failing task is retried, then fails the run with a reason; results stay those of the last finished run", async () => {
      await createCollection(t, "fragile", ["fine.example"]);
      const good = await force(t, "fragile");
      await waitForRun(t, "fragile", good, "finished");
      const collectionId = (await t.server.services.collections.findInAccount(1, "fragile"))!.id;
      assert.equal(work.results.get(collectionId), good);

      await t.request("POST", "/api/collections/fragile", {
        body: { seeds: [{ type: "Domain", name: "broken.example" }] },
      });
      const bad = await force(t, "fragile");
      const failed = await waitForRun(t, "fragile", bad, "failed");
      assert.match(
        failed.error,
        /Task "seed:broken.example" failed 2 times; last error: broken.example is set to fail/,
      );
      assert.match(failed.finished_at, TIMESTAMP);
      assert.equal(work.executed.filter((e) => e.runId === bad && e.key === "seed:broken.example").length, 2);
      assert.ok(!work.finished.includes(bad), "finish is never called for a failed run");
      assert.equal(work.results.get(collectionId), good, "results untouched");
    });

    test("404 for an unknown collection or run, 400 for a bad run id", async () => {
      for (const [method, path] of [
        ["POST", "/api/collections/nope/schedule"],
        ["GET", "/api/collections/nope/schedule"],
        ["GET", "/api/collections/nope/runs"],
        ["GET", "/api/collections/nope/runs/1"],
        ["POST", "/api/collections/nope/runs/1/cancel"],
      ]) {
        const response = await t.request(method, path);
        assertError(response, 404);
        assert.match(response.body.message, /No collection named "nope"/);
      }
      const otherRun = (await t.request("GET", "/api/collections/acme/runs")).body.result[0].id;
      await createCollection(t, "empty-history", ["e.example"]);
      const missing = await t.request("GET", `/api/collections/empty-history/runs/${otherRun}`);
      assertError(missing, 404);
      assert.match(missing.body.message, /has no run/);
      const bad = await t.request("GET", "/api/collections/acme/runs/abc");
      assertError(bad, 400);
      assert.equal(bad.body.error.details[0].field, "id");
      assertError(await t.request("GET", "/api/collections/acme/runs", { keys: null }), 401);
    });

    test("a suspended or expired account cannot force runs (403) but can read them", async () => {
      const { accounts } = t.server.services;
      const account = (await accounts.findAccount("default"))!;
      for (const status of ["suspended", "expired"] as const) {
        await accounts.setAccountStatus(account.id, status);
        try {
          for (const method of ["GET", "POST"]) {
            const response = await t.request(method, "/api/collections/acme/schedule");
            assertError(response, 403);
            assert.match(response.body.message, new RegExp(`account is ${status}`));
          }
          assert.equal((await t.request("GET", "/api/collections/acme/runs")).status, 200);
        } finally {
          await accounts.setAccountStatus(account.id, "active");
        }
      }
    });

    test("the OpenAPI document describes the run endpoints and their errors", async () => {
      const doc = (await t.request("GET", "/api/openapi.json", { keys: null })).body;
      const schedule = doc.paths["/api/collections/{collection_name}/schedule"];
      assert.ok(schedule.get && schedule.post, "GET and POST");
      for (const status of ["200", "401", "403", "404"]) assert.ok(schedule.post.responses[status], status);
      const list = doc.paths["/api/collections/{collection_name}/runs"].get;
      const item = list.responses["200"].content["application/json"].schema.properties.result.items;
      assert.deepEqual(item.required.slice(0, 4), ["id", "status", "created_at", "priority"]);
      const cancel = doc.paths["/api/collections/{collection_name}/runs/{id}/cancel"].post;
      for (const status of ["200", "404", "409"]) assert.ok(cancel.responses[status], status);
    });
  });

  describe(`run priorities and limits on ${dialect}`, { skip }, () => {
    test("forced runs (priority 1) go before scheduled ones (5) when the worker is busy", async () => {
      const { t, work } = await serverWithWork(dialect, { fanout: 1 });
      try {
        await createCollection(t, "blocker", ["block.example"]);
        work.hold();
        const blocker = await force(t, "blocker");
        await waitForRun(t, "blocker", blocker, "started");

        await createCollection(t, "routine", ["routine.example"]);
        const tick = await t.server.runs.scheduler!.tick();
        assert.equal(tick.fired, 1, "routine fires; blocker's active run stands in for its own");

        const [scheduled] = (await t.request("GET", "/api/collections/routine/runs")).body.result;
        assert.equal(scheduled.trigger, "scheduled");
        assert.equal(scheduled.priority, 5);
        assert.equal(scheduled.status, "queued");

        await createCollection(t, "urgent", ["urgent.example"]);
        const urgent = await force(t, "urgent");
        assert.equal((await getRun(t, "urgent", urgent)).priority, 1);
        work.release();

        await waitForRun(t, "routine", scheduled.id, "finished");
        const order = work.executed.map((e) => e.runId).filter((id) => id === urgent || id === scheduled.id);
        assert.deepEqual(order, [urgent, urgent, scheduled.id, scheduled.id], "urgent's tasks all ran first");
        const urgentRun = await getRun(t, "urgent", urgent);
        const routineRun = await getRun(t, "routine", scheduled.id);
        assert.ok(urgentRun.finished_at <= routineRun.started_at);
      } finally {
        await t.close();
      }
    });

    test("past its time limit a run fails with a reason and its tasks are aborted", async () => {
      const { t, work } = await serverWithWork(
        dialect,
        { hang: ["slow.example"] },
        { runTimeLimitSeconds: 1 },
      );
      try {
        await createCollection(t, "slow", ["slow.example"]);
        const id = await force(t, "slow");
        const failed = await waitForRun(t, "slow", id, "failed");
        assert.match(failed.error, /time limit of 1 seconds/);
        await waitFor(() => work.aborted.length > 0, "the hanging task to be aborted");
        assert.ok(work.aborted[0].reason instanceof RunEnded);
        assert.match((work.aborted[0].reason as Error).message, /time limit/);
        assert.deepEqual(work.finished, []);
      } finally {
        await t.close();
      }
    });

    test("a task that fails once is retried and the run finishes", async () => {
      const { t, work } = await serverWithWork(dialect, { flaky: ["flaky.example"] }, { taskAttempts: 3 });
      try {
        await createCollection(t, "flaky", ["flaky.example"]);
        const id = await force(t, "flaky");
        const run = await waitForRun(t, "flaky", id, "finished");
        assert.equal(run.tasks_done, 1);
        assert.equal(work.executed.length, 2, "one failure, one success");
      } finally {
        await t.close();
      }
    });
  });
}
