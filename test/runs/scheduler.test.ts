/** Automatic runs: the rate rule, and firing each due run exactly once however many schedulers race. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "../../src/core/config.ts";
import { createRunSystem, type RunSystem } from "../../src/runs/runtime.ts";
import { scanInterval } from "../../src/runs/scan-rate.ts";
import type { AccountStatus } from "../../src/store/schema.ts";
import type { Services } from "../../src/store/services.ts";
import { openServices } from "../../src/store/services.ts";
import { createTestStore, dialects, type TestStore } from "../helpers/stores.ts";
import { TestWork } from "./fixtures/test-work.ts";

const DAY = 86_400;

test("the account status sets the fastest rate; a collection may only slow it down", () => {
  const cases: Array<[AccountStatus, string, number | null]> = [
    ["active", "auto", DAY],
    ["trial", "auto", 7 * DAY],
    ["suspended", "auto", null],
    ["expired", "auto", null],
    ["active", "daily", DAY],
    ["active", "weekly", 7 * DAY],
    ["active", "monthly", 30 * DAY],
    ["active", "on_demand", null],
    ["trial", "daily", 7 * DAY],
    ["trial", "weekly", 7 * DAY],
    ["trial", "monthly", 30 * DAY],
    ["trial", "on_demand", null],
    ["suspended", "daily", null],
    ["expired", "monthly", null],
  ];
  for (const [status, rate, expected] of cases)
    assert.equal(scanInterval(status, rate), expected, `${status} + ${rate}`);
});

for (const { dialect, skip } of await dialects()) {
  describe(`scheduler on ${dialect}`, { skip }, () => {
    let store: TestStore;
    let services: Services;
    let accountId: number;
    let teamId: number;
    const systems: RunSystem[] = [];
    const opened: Services[] = [];

    /** A scheduler with its own store connection (PostgreSQL) — or the shared one (SQLite: one writer per process). */
    async function scheduler() {
      const own = dialect === "postgres" ? await openServices(services.config) : services;
      if (own !== services) opened.push(own);
      // The queue is never consumed: fired runs stay queued, which is what is counted here.
      const system = await createRunSystem(own, { role: "server", work: new TestWork(own) });
      systems.push(system);
      return system.scheduler!;
    }

    async function collection(name: string, seeds = ["seed.example"], scanRate = "auto") {
      const row = await services.collections.create(
        accountId,
        teamId,
        name,
        seeds.map((seed) => ({ type: "Domain" as const, name: seed })),
        scanRate,
      );
      return row!.id;
    }

    const scheduledRuns = (collectionId: number) =>
      services.store.db
        .selectFrom("runs")
        .selectAll()
        .where("collection_id", "=", collectionId)
        .where("trigger", "=", "scheduled")
        .execute();

    /** Pretends the collection last ran by itself `days` ago (its runs made then), with no run active. */
    async function lastFired(collectionId: number, days: number) {
      const { db } = services.store;
      const then = new Date(Date.now() - days * DAY * 1000).toISOString();
      await db
        .updateTable("runs")
        .set({ status: "finished" })
        .where("collection_id", "=", collectionId)
        .where("status", "in", ["queued", "started"])
        .execute();
      await db
        .updateTable("runs")
        .set({ created_at: then })
        .where("collection_id", "=", collectionId)
        .execute();
      await db
        .updateTable("run_schedules")
        .set({ last_fired_at: then })
        .where("collection_id", "=", collectionId)
        .execute();
    }

    before(async () => {
      store = await createTestStore(dialect);
      services = await openServices(loadConfig({}, { ...store.config, logLevel: "silent" }));
      const account = await services.accounts.createAccount("acme", "active");
      accountId = account.id;
      teamId = (await services.accounts.createTeam(account.id, "acme")).id;
    });
    after(async () => {
      for (const system of systems) await system.close();
      for (const own of opened) await own.store.close();
      await services?.store.close();
      await store?.drop();
    });

    test("racing schedulers fire each due collection exactly once", async () => {
      const ids: number[] = [];
      for (let i = 0; i < 30; i++) ids.push(await collection(`race-${i}`));
      const racers = [await scheduler(), await scheduler(), await scheduler()];
      const results = await Promise.all(racers.map((racer) => racer.tick()));
      assert.equal(
        results.reduce((sum, result) => sum + result.fired, 0),
        30,
        `fired per scheduler: ${results.map((r) => r.fired)}`,
      );
      for (const id of ids) assert.equal((await scheduledRuns(id)).length, 1);
      const again = await Promise.all(racers.map((racer) => racer.tick()));
      assert.equal(
        again.reduce((sum, result) => sum + result.fired, 0),
        0,
        "nothing is due right after firing",
      );

      for (const id of ids) await lastFired(id, 1.01);
      const nextDay = await Promise.all(racers.map((racer) => racer.tick()));
      assert.equal(
        nextDay.reduce((sum, result) => sum + result.fired, 0),
        30,
        "a day later each fires once more",
      );
      for (const id of ids) assert.equal((await scheduledRuns(id)).length, 2);
    });

    test("a run by hand counts: not due again until the interval has passed, unless it failed", async () => {
      const tick = await scheduler();
      const byHand = await collection("by-hand", ["h.example"]);
      assert.ok(await services.runs.create(byHand, "forced", 1));
      await lastFired(byHand, 0); // the run by hand finished just now
      await tick.tick();
      assert.equal((await scheduledRuns(byHand)).length, 0, "run by hand just now: not due");
      await lastFired(byHand, 0.5);
      await tick.tick();
      assert.equal((await scheduledRuns(byHand)).length, 0, "nor half a day later");
      await lastFired(byHand, 1.01);
      await tick.tick();
      assert.equal((await scheduledRuns(byHand)).length, 1, "a day after the run by hand");

      const failedByHand = await collection("failed-by-hand", ["f.example"]);
      const failed = (await services.runs.create(failedByHand, "forced", 1))!;
      await services.runs.end(failed.id, "failed", "ended for the test");
      await tick.tick();
      assert.equal((await scheduledRuns(failedByHand)).length, 1, "a failed run by hand does not put it off");
    });

    test("a stale look at a schedule cannot fire it again, even once its run has ended", async () => {
      const id = await collection("stale");
      const seen = async () =>
        (await services.runs.scheduleCandidates()).find((candidate) => candidate.collectionId === id)!
          .lastFiredAt;
      const before = await seen();
      const first = await services.runs.fireSchedule(id, before, 5);
      assert.ok(first, "the first look fires");
      await services.runs.end(first.id, "failed", "ended for the test");
      assert.equal(
        await services.runs.fireSchedule(id, before, 5),
        undefined,
        "the same look again fires nothing",
      );
      const now = await seen();
      assert.notEqual(now, before);
      assert.ok(
        await services.runs.fireSchedule(id, now, 5),
        "a fresh look fires (due-ness is the scheduler's call)",
      );
    });

    test("a tick fails runs past their deadline whose worker is gone", async () => {
      const tick = await scheduler();
      const id = await collection("abandoned", [], "on_demand");
      const run = (await services.runs.create(id, "forced", 1))!;
      const past = new Date(Date.now() - 1000).toISOString();
      await services.store.db
        .updateTable("runs")
        .set({ status: "started", started_at: past, deadline_at: past })
        .where("id", "=", run.id)
        .execute();
      const result = await tick.tick();
      assert.equal(result.expired, 1);
      const failed = (await services.runs.get(run.id))!;
      assert.equal(failed.status, "failed");
      assert.match(failed.error!, /exceeded its time limit/);
    });

    test("rates follow the account status and the collection's scan rate", async () => {
      const tick = await scheduler();
      const trialAccount = await services.accounts.createAccount("trialco", "trial");
      const trialTeam = await services.accounts.createTeam(trialAccount.id, "trialco");
      const trialDaily = (await services.collections.create(
        trialAccount.id,
        trialTeam.id,
        "trial-daily",
        [{ type: "Domain", name: "t.example" }],
        "daily",
      ))!.id;
      const onDemand = await collection("on-demand", ["o.example"], "on_demand");
      const monthly = await collection("monthly", ["m.example"], "monthly");
      const seedless = await collection("seedless", []);
      await tick.tick();
      assert.equal((await scheduledRuns(trialDaily)).length, 1, "a new collection runs at once");
      assert.equal((await scheduledRuns(monthly)).length, 1);
      assert.equal((await scheduledRuns(onDemand)).length, 0, "on_demand never runs by itself");
      assert.equal((await scheduledRuns(seedless)).length, 0, "nothing to run without seeds");

      await lastFired(trialDaily, 2);
      await lastFired(monthly, 8);
      await tick.tick();
      assert.equal(
        (await scheduledRuns(trialDaily)).length,
        1,
        "trial + daily is weekly: not due after 2 days",
      );
      assert.equal((await scheduledRuns(monthly)).length, 1, "monthly: not due after 8 days");

      await lastFired(trialDaily, 7.01);
      await lastFired(monthly, 30.01);
      await tick.tick();
      assert.equal((await scheduledRuns(trialDaily)).length, 2, "due after a week");
      assert.equal((await scheduledRuns(monthly)).length, 2, "due after 30 days");

      await services.accounts.setAccountStatus(trialAccount.id, "suspended");
      await lastFired(trialDaily, 30);
      await tick.tick();
      assert.equal((await scheduledRuns(trialDaily)).length, 2, "a suspended account never runs by itself");
      await services.accounts.setAccountStatus(trialAccount.id, "active");
      await tick.tick();
      assert.equal((await scheduledRuns(trialDaily)).length, 3, "reactivated: overdue, so it runs at once");
    });
  });
}
