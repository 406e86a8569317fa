/**
 * A run that fails or is cancelled never replaces results, so what its tasks staged goes with it: at once
 * when it ends, and on the scheduler's next pass for a task that was still writing as it ended. And once
 * any run has ended its task bookkeeping goes, keeping which worker did how many tasks; a run still active
 * keeps every task. A started run holds a mark of its working tables until it ends (migration 020: on
 * PostgreSQL those tables are unlogged and hold no foreign key), and the merge refuses a started run whose
 * mark is gone. Both dialects.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { stagingRows } from "../../src/store/entities.ts";
import type { Services } from "../../src/store/services.ts";
import { WORKING_TABLES, WORKING_TABLES_LOST } from "../../src/store/working-marks.ts";
import { stagedEntity } from "../helpers/result-fixtures.ts";
import { servicesWithCollection } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { countTurns } from "../helpers/turns.ts";

for (const { dialect, skip } of await dialects()) {
  describe(`runs that end on ${dialect}`, { skip }, () => {
    let services: Services;
    let collectionId: number;
    let close: (() => Promise<void>) | undefined;

    before(async () => {
      ({ services, collectionId, close } = await servicesWithCollection(dialect));
    });
    after(() => close?.());

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
    const stagedRuns = async () =>
      (await services.store.db.selectFrom("staged_entities").select("run_id").distinct().execute())
        .map((row) => row.run_id)
        .sort();

    test("failing or cancelling a run discards its staging; a write after the end goes on the next sweep", async () => {
      const failing = (await services.runs.create(collectionId, "forced", 1))!;
      await stage(failing.id, "a.acme.test");
      assert.deepEqual(await stagedRuns(), [failing.id]);
      assert.equal(await services.runs.end(failing.id, "failed", "a task failed"), true);
      assert.deepEqual(await stagedRuns(), [], "discarded as the run failed");

      const cancelled = (await services.runs.create(collectionId, "forced", 1))!;
      await stage(cancelled.id, "b.acme.test");
      assert.equal(await services.runs.end(cancelled.id, "cancelled", "by admin"), true);
      await stage(cancelled.id, "late.acme.test"); // a task that was still running
      const active = (await services.runs.create(collectionId, "forced", 1))!;
      await stage(active.id, "c.acme.test");
      assert.deepEqual(await stagedRuns(), [cancelled.id, active.id].sort());
      assert.equal(await services.runs.discardEndedStaging(), 1);
      assert.deepEqual(await stagedRuns(), [active.id], "an active run keeps what it staged");
      assert.equal(await services.runs.end(active.id, "cancelled", null), true);
    });

    const tasks = (n: number, prefix = "t") =>
      Array.from({ length: n }, (_, i) => ({
        key: `${prefix}:${i}`,
        kind: "test",
        payload: { i },
        depth: 0,
      }));
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
    const taskRows = (runId: number) => rowsOf("run_tasks", runId);
    const deadline = () => new Date(Date.now() + 3_600_000).toISOString();
    /** Runs every task of the run on the worker `workerOf(i)`, the i-th started `attemptsOf(i)` times. */
    async function work(runId: number, workerOf: (i: number) => string, attemptsOf = (_: number) => 1) {
      const ids = await services.runs.unfinishedTaskIds(runId);
      for (const [i, id] of ids.entries()) {
        for (let attempt = 1; attempt < attemptsOf(i); attempt++) {
          await services.runs.beginTask(id, "gone:1");
          await services.runs.releaseTask(id, { error: "its worker stopped" });
        }
        await services.runs.beginTask(id, workerOf(i));
        await services.runs.completeTask(runId, id, [], workerOf(i));
      }
    }

    test("a finished run's task rows go, and which worker did how many tasks is still answered", async () => {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(run.id, tasks(6), deadline()));
      await work(
        run.id,
        (i) => (i % 3 === 0 ? "b:2" : "a:1"),
        (i) => (i === 0 ? 2 : 1),
      );
      const during = await services.runs.workersOf(run.id);
      assert.deepEqual(during, [
        { worker: "a:1", tasks: 4, attempts: 4 },
        { worker: "b:2", tasks: 2, attempts: 3 },
      ]);
      assert.equal(await services.runs.clearEnded(run.id), 0, "a started run keeps its tasks");
      assert.equal(await taskRows(run.id), 6);
      assert.ok(await services.runs.claimFinish(run.id));
      assert.ok(await services.runs.markFinished(run.id));

      assert.equal(await services.runs.clearEnded(run.id), 6);
      assert.equal(await taskRows(run.id), 0, "no task row is left");
      assert.deepEqual(await services.runs.workersOf(run.id), during, "kept with the run");
      assert.equal(await services.runs.clearEnded(run.id), 0, "clearing again changes nothing");
      assert.deepEqual(await services.runs.workersOf(run.id), during);
      assert.deepEqual(await services.runs.endedWithTasks(), []);
    });

    test("a failed run's tasks go too; a late write is found and cleared; an active run keeps its tasks", async () => {
      const failed = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(failed.id, tasks(4), deadline()));
      const [first, , third] = await services.runs.unfinishedTaskIds(failed.id);
      await services.runs.beginTask(first, "a:1");
      await services.runs.completeTask(failed.id, first, [], "a:1");
      await services.runs.beginTask(third, "a:1"); // in flight as the run fails
      assert.equal(await services.runs.end(failed.id, "failed", "a task failed"), true);
      const active = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(active.id, tasks(3), deadline()));

      assert.equal(await services.runs.clearEnded(failed.id), 4);
      // The task in flight completes after the run's rows went, and names a follow-up.
      await services.runs.completeTask(failed.id, third, tasks(1, "late"), "a:1");
      assert.equal(await taskRows(failed.id), 1);
      assert.deepEqual(
        await services.runs.endedWithTasks(),
        [failed.id],
        "the sweep finds it, not the active run",
      );
      assert.equal(await services.runs.clearEnded(failed.id), 1);
      assert.equal(await taskRows(failed.id), 0);
      assert.deepEqual(await services.runs.workersOf(failed.id), [{ worker: "a:1", tasks: 1, attempts: 1 }]);

      assert.equal(await services.runs.clearEnded(active.id), 0);
      assert.equal(await taskRows(active.id), 3, "a run that may be resumed keeps every task");
      assert.equal((await services.runs.unfinishedTaskIds(active.id)).length, 3);
      assert.equal(await services.runs.end(active.id, "cancelled", null), true);
      assert.equal(await services.runs.clearEnded(active.id), 3, "a cancelled run's pending tasks go");
      assert.deepEqual(await services.runs.workersOf(active.id), []);
    });

    test("a large run's tasks go in batches that serve the event loop; cut short, nothing is lost or counted twice", async () => {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(run.id, tasks(600), deadline()));
      await work(run.id, (i) => `w:${i % 3}`);
      assert.ok(await services.runs.claimFinish(run.id));
      assert.ok(await services.runs.markFinished(run.id));
      const expected = [0, 1, 2].map((w) => ({ worker: `w:${w}`, tasks: 200, attempts: 200 }));

      // A shutdown after the first batch: the rest stays for the sweep, and the counts add up meanwhile.
      let batches = 0;
      const cut = await services.runs.clearEnded(run.id, { stopping: () => batches++ >= 1 });
      assert.ok(cut > 0 && cut < 600, `${cut} rows went before the stop`);
      assert.equal(await taskRows(run.id), 600 - cut);
      assert.deepEqual(await services.runs.workersOf(run.id), expected);
      assert.deepEqual(await services.runs.endedWithTasks(), [run.id]);

      const turns = countTurns();
      assert.equal(await services.runs.clearEnded(run.id), 600 - cut);
      turns.stop();
      assert.ok(turns.count >= Math.floor((600 - cut) / 250), `the loop ran ${turns.count} times meanwhile`);
      assert.equal(await taskRows(run.id), 0);
      assert.deepEqual(await services.runs.workersOf(run.id), expected);
      // And their space is given back: free pages (SQLite), the emptied table with its indexes (PostgreSQL).
      if (dialect === "sqlite") {
        const { rows } = await sql<{ freelist_count: number }>`pragma freelist_count`.execute(
          services.store.db,
        );
        assert.ok(rows[0].freelist_count <= 8, `${rows[0].freelist_count} free pages left`);
      } else {
        const { rows } = await sql<{
          bytes: string;
        }>`select pg_total_relation_size('run_tasks') as bytes`.execute(services.store.db);
        assert.ok(Number(rows[0].bytes) <= 80_000, `run_tasks still takes ${rows[0].bytes} bytes`);
      }
    });

    test("a completion adds its new follow-ups and counts them and itself once; repeated, it adds and counts nothing", async () => {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(run.id, tasks(2, "seed"), deadline()));
      const [first, second] = await services.runs.unfinishedTaskIds(run.id);
      await services.runs.beginTask(first, "a:1");
      const followUps = [...tasks(3, "next"), tasks(1, "seed")[0]];
      const done = await services.runs.completeTask(run.id, first, followUps, "a:1");
      assert.equal(done.completed, true);
      assert.equal(done.added.length, 3, "a key the run has is not added again");
      const again = await services.runs.completeTask(run.id, first, followUps, "a:1");
      assert.deepEqual(again, { added: [], completed: false });
      await services.runs.beginTask(second, "b:1");
      const other = await services.runs.completeTask(run.id, second, tasks(3, "next"), "b:1");
      assert.deepEqual(other, { added: [], completed: true });
      const row = (await services.runs.get(run.id))!;
      assert.deepEqual([row.tasks_done, row.tasks_total], [2, 5]);
      assert.deepEqual((await services.runs.unfinishedTaskIds(run.id)).sort(), [...done.added].sort());
      assert.equal(await services.runs.end(run.id, "cancelled", null), true);
    });

    test("completions riding together add each one's new follow-ups once, to the first naming them, and begin the next", async () => {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(run.id, tasks(3, "seed"), deadline()));
      const [first, second, third] = await services.runs.unfinishedTaskIds(run.id);
      await services.runs.beginTask(first, "a:1");
      await services.runs.beginTask(second, "a:1");
      const shared = tasks(4, "next");
      const written = await services.runs.completeAndBegin(
        [
          { runId: run.id, taskId: first, followUps: [shared[2], shared[0], tasks(1, "seed")[0]] },
          { runId: run.id, taskId: second, followUps: [shared[0], shared[1], shared[3]] },
        ],
        "a:1",
        { taskId: third },
      );
      assert.deepEqual([...written.completed].sort(), [first, second].sort());
      assert.equal(written.task?.id, third, "the next task begun in the same write");
      const [ofFirst, ofSecond] = [written.added.get(first)!, written.added.get(second)!];
      assert.equal(ofFirst.length, 2, "a key the run has is not added again");
      assert.equal(ofSecond.length, 2, "a key the first added is not added again to the second");
      assert.equal(new Set([...ofFirst, ...ofSecond]).size, 4);
      const row = (await services.runs.get(run.id))!;
      assert.deepEqual([row.tasks_done, row.tasks_total], [2, 7]);
      const pending = (await services.runs.unfinishedTaskIds(run.id)).filter((id) => id !== third);
      assert.deepEqual(pending.sort(), [...ofFirst, ...ofSecond].sort());
      const keys = await services.store.db
        .selectFrom("run_tasks")
        .select(["id", "key"])
        .where("id", "in", ofFirst)
        .execute();
      assert.deepEqual(
        ofFirst.map((id) => keys.find((row) => row.id === id)?.key),
        ["next:2", "next:0"],
        "in the order given",
      );
      const again = await services.runs.completeAndBegin(
        [{ runId: run.id, taskId: first, followUps: shared }],
        "a:1",
      );
      assert.deepEqual([again.completed.size, again.added.get(first)], [0, []], "repeated: nothing");
      assert.equal(await services.runs.end(run.id, "cancelled", null), true);
    });

    test("task counts reach the run's row (within a quarter second on PostgreSQL); the finish is claimed from the tasks and recounts them", async () => {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(run.id, tasks(2, "seed"), deadline()));
      const [first, second] = await services.runs.unfinishedTaskIds(run.id);
      await services.runs.beginTask(first, "a:1");
      await services.runs.completeTask(run.id, first, tasks(2, "next"), "a:1");
      const stored = async () => ({
        ...(await services.store.db
          .selectFrom("runs")
          .select(["tasks_done", "tasks_total"])
          .where("id", "=", run.id)
          .executeTakeFirstOrThrow()),
      });
      // This process's reads see its counts at once, whether or not they are written yet.
      const seen = (await services.runs.get(run.id))!;
      assert.deepEqual([seen.tasks_done, seen.tasks_total], [1, 4]);
      await services.runs.writeCounts();
      assert.deepEqual(await stored(), { tasks_done: 1, tasks_total: 4 });
      assert.equal(await services.runs.claimFinish(run.id), false, "three tasks are pending");
      for (const id of await services.runs.unfinishedTaskIds(run.id)) {
        await services.runs.beginTask(id, "a:1");
        if (id !== second) await services.runs.completeTask(run.id, id, [], "a:1");
      }
      assert.equal(await services.runs.claimFinish(run.id), false, "one task is running");
      await services.runs.completeTask(run.id, second, [], "a:1");
      // Counts left unwritten, or written wrong, do not decide the finish, and are made exact by it.
      await services.store.db.updateTable("runs").set({ tasks_done: 0 }).where("id", "=", run.id).execute();
      assert.equal(await services.runs.claimFinish(run.id), true);
      assert.equal(await services.runs.claimFinish(run.id), false, "claimed once");
      assert.deepEqual(await stored(), { tasks_done: 4, tasks_total: 4 });
      await services.runs.writeCounts();
      assert.deepEqual(
        await stored(),
        { tasks_done: 4, tasks_total: 4 },
        "a late write leaves a claimed run alone",
      );
      assert.ok(await services.runs.markFinished(run.id));
    });

    test("what a task found is written with its completion, whole or not at all: with follow-ups or none, and larger than one statement", async () => {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(run.id, tasks(4, "seed"), deadline()));
      const ids = await services.runs.unfinishedTaskIds(run.id);
      const sighting = (name: string) => ({
        kind: "DnsRecord",
        name,
        details: { seen: name },
        scoped: true,
        hidden: false,
        depth: 1,
        aliases: [],
        ancestors: [],
      });
      const found = (names: string[], notes: string[] = []) =>
        stagingRows(run.id, collectionId, {
          entities: names.map(sighting),
          findings: [
            {
              name: "check",
              entityKind: "DnsRecord",
              entityName: names[0],
              prettyName: "A check",
              severity: 3,
              confidence: "confirmed",
              category: "misconfiguration",
              description: "What it is.",
              remediation: "What to do.",
              references: [],
              details: {},
              scoped: true,
            },
          ],
          notes,
          noteKind: "dns",
        });
      const staged = async () => ({
        entities: (
          await services.store.db
            .selectFrom("staged_entities")
            .select("name")
            .where("run_id", "=", run.id)
            .execute()
        ).length,
        findings: (
          await services.store.db
            .selectFrom("staged_findings")
            .select("id")
            .where("run_id", "=", run.id)
            .execute()
        ).length,
        notes: (
          await services.store.db.selectFrom("run_notes").select("id").where("run_id", "=", run.id).execute()
        ).length,
      });
      const status = async (id: number) =>
        (
          await services.store.db
            .selectFrom("run_tasks")
            .select("status")
            .where("id", "=", id)
            .executeTakeFirstOrThrow()
        ).status;

      for (const id of ids) await services.runs.beginTask(id, "a:1");
      // No follow-ups.
      assert.deepEqual(
        await services.runs.completeTask(run.id, ids[0], [], "a:1", await found(["a.acme.test"], ["n"])),
        {
          added: [],
          completed: true,
        },
      );
      assert.deepEqual(await staged(), { entities: 1, findings: 1, notes: 1 });
      // With follow-ups.
      const withFollowUps = await services.runs.completeTask(
        run.id,
        ids[1],
        tasks(2, "next"),
        "a:1",
        await found(["b.acme.test"]),
      );
      assert.deepEqual([withFollowUps.completed, withFollowUps.added.length], [true, 2]);
      assert.deepEqual(await staged(), { entities: 2, findings: 2, notes: 1 });
      // More rows than one insert takes (a zone transfer's names).
      const many = Array.from({ length: 250 }, (_, i) => `h${i}.acme.test`);
      assert.equal(
        (await services.runs.completeTask(run.id, ids[2], [], "a:1", await found(many))).completed,
        true,
      );
      assert.deepEqual(await staged(), { entities: 252, findings: 3, notes: 1 });
      // A completion that fails writes nothing of what the task found, and leaves the task to be done again.
      const broken = await found(["c.acme.test", "d.acme.test"]);
      broken.findings[0].name = null as never;
      await assert.rejects(services.runs.completeTask(run.id, ids[3], tasks(1, "late"), "a:1", broken));
      assert.deepEqual(
        await staged(),
        { entities: 252, findings: 3, notes: 1 },
        "nothing of a failed completion",
      );
      assert.equal(await status(ids[3]), "running");
      assert.deepEqual(
        (await services.runs.unfinishedTaskIds(run.id, { includeRunning: true })).length,
        3,
        "the two follow-ups of the second task and the failed one; not the failed one's follow-up",
      );
      assert.equal(await services.runs.end(run.id, "cancelled", null), true);
    });

    test("a completion of many rows (a zone transfer's) is written in pieces, each its own commit, and done last", async () => {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(run.id, tasks(1, "axfr"), deadline()));
      const [id] = await services.runs.unfinishedTaskIds(run.id);
      await services.runs.beginTask(id, "a:1");
      const names = Array.from({ length: 2_500 }, (_, i) => `h${i}.big.test`);
      const found = await stagingRows(run.id, collectionId, {
        entities: names.map((name) => stagedEntity("DnsRecord", name)),
        findings: [],
        notes: [{ kind: "dns-axfr", message: "a note" }],
      });
      // Given out of key order: the ids come back in the order given.
      const followUps = tasks(2_500, "dns").reverse();
      // Between turns of the loop, what others see of the run's tasks: each piece lands as its own commit.
      const seen = new Set<number>();
      let watching = true;
      const watch = () => {
        void taskRows(run.id).then((count) => {
          seen.add(count);
          if (watching) setImmediate(watch);
        });
      };
      setImmediate(watch);
      const { added, completed } = await services.runs.completeTask(run.id, id, followUps, "a:1", found);
      watching = false;
      assert.equal(completed, true);
      assert.ok(
        [...seen].some((count) => count > 1 && count < 2_501),
        `the follow-ups landed in pieces, others seeing them come (saw ${[...seen].sort((a, b) => a - b).join(", ")})`,
      );
      const keyOf = new Map(
        (
          await services.store.db
            .selectFrom("run_tasks")
            .select(["id", "key"])
            .where("run_id", "=", run.id)
            .execute()
        ).map((row) => [row.id, row.key]),
      );
      assert.deepEqual(
        added.map((taskId) => keyOf.get(taskId)),
        followUps.map((task) => task.key),
      );
      assert.equal(await taskRows(run.id), 2_501);
      const staged = async () =>
        (
          await services.store.db
            .selectFrom("staged_entities")
            .select("name")
            .where("run_id", "=", run.id)
            .execute()
        ).length;
      assert.equal(await staged(), 2_500);
      assert.equal(
        (await services.store.db.selectFrom("run_notes").select("id").where("run_id", "=", run.id).execute())
          .length,
        1,
      );
      // Done again (as after a stop between two pieces): no follow-up twice, the task done once.
      const again = await services.runs.completeTask(run.id, id, followUps, "a:1", found);
      assert.deepEqual(again, { added: [], completed: false });
      assert.equal(await taskRows(run.id), 2_501);
      assert.equal(await services.runs.end(run.id, "cancelled", null), true);
    });

    test("what a task stages with its findings and notes lands whole", async () => {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      await services.entities.stage(run.id, collectionId, {
        entities: [
          {
            kind: "DnsRecord",
            name: "www.acme.test",
            details: { a: 1 },
            scoped: true,
            hidden: false,
            depth: 0,
            aliases: [],
            ancestors: [],
          },
        ],
        findings: [
          {
            name: "check",
            entityKind: "DnsRecord",
            entityName: "www.acme.test",
            prettyName: "A check",
            severity: 3,
            confidence: "confirmed",
            category: "misconfiguration",
            description: "What it is.",
            remediation: "What to do.",
            references: [],
            details: { seen: true },
            scoped: true,
          },
        ],
        notes: ["a note", "another"],
        noteKind: "dns",
      });
      const count = async (table: "staged_entities" | "staged_findings" | "run_notes") =>
        Number(
          (
            await services.store.db
              .selectFrom(table)
              .select((eb) => eb.fn.countAll<number>().as("n"))
              .where("run_id", "=", run.id)
              .executeTakeFirstOrThrow()
          ).n,
        );
      assert.deepEqual(
        [await count("staged_entities"), await count("staged_findings"), await count("run_notes")],
        [1, 1, 2],
      );
      assert.equal(await services.runs.end(run.id, "cancelled", null), true);
    });

    test("a started run is marked until it ends", async () => {
      const run = (await services.runs.create(collectionId, "forced", 1))!;
      assert.equal(await rowsOf("run_working_marks", run.id), 0, "a queued run has no working tables yet");
      assert.equal(await services.runs.workingTablesLost(run.id), false, "nor has it lost any");
      assert.ok(await services.runs.start(run.id, tasks(1, "a"), deadline()));
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
      assert.ok(await services.runs.start(run.id, tasks(1, "b"), deadline()));
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
      assert.ok(await services.runs.start(run.id, tasks(2, "c"), deadline()));
      await stage(run.id, "doomed.acme.test", other.id);
      const kept = (await services.runs.create(collectionId, "forced", 1))!;
      assert.ok(await services.runs.start(kept.id, tasks(1, "e"), deadline()));
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
