/** An embedded server that stops — cleanly or killed — loses no run: the next one resumes what was left. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { ApiClient } from "../../src/cli/api-client.ts";
import { spawnSightline } from "../helpers/processes.ts";
import { BOOTSTRAP_KEYS, startTestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { TestWork } from "./fixtures/test-work.ts";
import { createCollection, force, waitFor, waitForRun } from "./helpers.ts";

const WORK_MODULE = fileURLToPath(new URL("./fixtures/test-work.ts", import.meta.url));

for (const { dialect, skip } of await dialects()) {
  describe(`restarting an embedded server on ${dialect}`, { skip }, () => {
    test("tasks in flight are handed back and a queued run waits; the next server finishes both", async () => {
      let before: TestWork | undefined;
      const t = await startTestServer(
        dialect,
        { runConcurrency: 1, taskConcurrency: 2, shutdownGraceSeconds: 0, schedulerIntervalSeconds: 3600 },
        { runWork: (services) => (before = new TestWork(services, { fanout: 1 })) },
      );
      try {
        await createCollection(t, "resumed", ["r1.example", "r2.example", "r3.example"]);
        await createCollection(t, "waiting", ["w1.example"]);
        before!.hold();
        const resumed = await force(t, "resumed");
        const waiting = await force(t, "waiting");
        await waitFor(() => before!.executed.length === 2, "two tasks in flight");

        let after: TestWork | undefined;
        await t.restart((services) => (after = new TestWork(services, { fanout: 1 })));
        assert.equal((await waitForRun(t, "resumed", resumed, "finished")).tasks_done, 6);
        assert.equal((await waitForRun(t, "waiting", waiting, "finished")).tasks_done, 2);
        assert.deepEqual(before!.finished, []);
        assert.deepEqual(after!.finished.sort(), [resumed, waiting].sort());
        // Each of the 6 tasks done in one attempt (a task takes at least one).
        const done = await t.server.services.runs.workersOf(resumed);
        assert.deepEqual(
          [done.reduce((sum, row) => sum + row.tasks, 0), done.reduce((sum, row) => sum + row.attempts, 0)],
          [6, 6],
          "a hand-back is not an attempt",
        );
      } finally {
        await t.close();
      }
    });

    test("a finish cut short by a crash is done again by the next server", async () => {
      const t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600 });
      try {
        await createCollection(t, "half-saved", ["h.example"]);
        const { runs, collections } = t.server.services;
        const collectionId = (await collections.findInAccount(1, "half-saved"))!.id;
        // As a crash would leave it: every task done, the claim to finish taken, never completed.
        const run = (await runs.create(collectionId, "forced", 1))!;
        assert.ok(await runs.start(run.id, [], new Date(Date.now() + 3_600_000).toISOString()));
        assert.ok(await runs.claimFinish(run.id));
        let next: TestWork | undefined;
        await t.restart((services) => (next = new TestWork(services)));
        await waitForRun(t, "half-saved", run.id, "finished");
        // (The new server's scheduler may also fire the collection's first automatic run meanwhile.)
        assert.equal(next!.finished.filter((id) => id === run.id).length, 1);
      } finally {
        await t.close();
      }
    });
  });
}

describe("killing an embedded server (SQLite) mid-run", () => {
  test("the next server on the same data resumes the started run and the queued one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sightline-crash-"));
    const env = {
      SIGHTLINE_DATA_DIR: dir,
      PORT: "0",
      HOST: "127.0.0.1",
      SIGHTLINE_BOOTSTRAP_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
      SIGHTLINE_BOOTSTRAP_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
      SIGHTLINE_RUN_WORK_MODULE: WORK_MODULE,
      SIGHTLINE_TEST_WORK: JSON.stringify({ fanout: 2, taskMs: 150 }),
      SIGHTLINE_RUN_CONCURRENCY: "1",
      SIGHTLINE_TASK_CONCURRENCY: "1",
      LOG_LEVEL: "warn",
    };
    const serve = async () => {
      const server = spawnSightline(["serve"], env);
      const line = await server.waitForLine(/is listening on/);
      const url = /listening on (\S+)/.exec(line)![1];
      return { server, client: new ApiClient({ url, ...BOOTSTRAP_KEYS }) };
    };
    const first = await serve();
    let second: Awaited<ReturnType<typeof serve>> | undefined;
    try {
      for (const name of ["crashed", "queued"]) {
        await first.client.post("/api/collections", {
          name,
          seeds: [
            { type: "Domain", name: `${name}-1.example` },
            { type: "Domain", name: `${name}-2.example` },
          ],
        });
      }
      const crashed = Number(
        (await first.client.post<{ id: string }>("/api/collections/crashed/schedule")).id,
      );
      const queued = Number((await first.client.post<{ id: string }>("/api/collections/queued/schedule")).id);
      await waitFor(async () => {
        const run = await first.client.get<{ tasks_done: number }>(
          `/api/collections/crashed/runs/${crashed}`,
        );
        return run.tasks_done >= 1;
      }, "the first run to be under way");
      first.server.child.kill("SIGKILL");
      assert.equal(await first.server.exited, "SIGKILL");

      second = await serve();
      const { client } = second;
      for (const [name, id] of [
        ["crashed", crashed],
        ["queued", queued],
      ] as const) {
        const run = await waitFor(async () => {
          const current = await client.get<{ status: string; tasks_done: number; tasks_total: number }>(
            `/api/collections/${name}/runs/${id}`,
          );
          return current.status === "finished" ? current : undefined;
        }, `run ${id} of ${name} to finish after the restart`);
        assert.equal(run.tasks_total, 6);
        assert.equal(run.tasks_done, 6);
      }
    } finally {
      await second?.server.stop();
      await first.server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
