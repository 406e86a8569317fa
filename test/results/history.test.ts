/**
 * Results as of any finished run, and what a run changed, on SQLite and PostgreSQL: `?run_id=N` reads
 * the run's results, refused with a sentence for a run that is not finished or not of the collection;
 * `/runs/{id}/diff` lists what appeared and disappeared; storage grows with what changes, not with runs.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { decodeJson } from "../../src/store/json-codec.ts";
import { applicationName, type FixtureCollection, ip, issueOf } from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { apiCollection, assertShape, ENTITY, ISSUE, runIn } from "./helpers.ts";

const HOSTS = 40;
/** Run 2: host 3 is gone, host 40 is new, hosts 0 and 20 (and the new 40) have other titles. */
const run2 = {
  hosts: HOSTS + 1,
  present: (host: number) => host !== 3,
  retitle: (host: number) => (host % 20 === 0 ? " (new look)" : undefined),
};

for (const { dialect, skip } of await dialects()) {
  describe(`result history on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let collection: FixtureCollection;
    let first: number;
    let second: number;

    before(async () => {
      t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600 });
      collection = await apiCollection(t, "history");
      first = await runIn(t, collection, { hosts: HOSTS });
      second = await runIn(t, collection, run2);
      await apiCollection(t, "other");
    });
    after(async () => {
      await t?.close();
    });

    const get = (path: string) => t.request("GET", `/api/collections/history/${path}`);

    test("run_id reads the results as of that run; the default is the latest", async () => {
      const now = (await get("hosts")).body.result;
      const then = (await get(`hosts?run_id=${first}`)).body.result;
      assert.ok(ip(3) in then && !(ip(3) in now), "host 3 was there, then went");
      assert.ok(ip(HOSTS) in now && !(ip(HOSTS) in then), "host 40 is new");
      assert.deepEqual((await get(`hosts?run_id=${second}`)).body.result, now);
      assert.equal(then[ip(1)].first_seen, now[ip(1)].first_seen, "first_seen is the first sighting");

      const recentNow = (await get("recent")).body.result.map((e: { name: string }) => e.name);
      assert.ok(recentNow.includes(ip(HOSTS)) && !recentNow.includes(ip(0)), "recent: first seen by run 2");
      const recentThen = (await get(`recent?run_id=${first}`)).body.result;
      assert.ok(
        recentThen.some((e: { name: string }) => e.name === ip(0)),
        "everything was new in run 1",
      );

      const title = async (run: number) =>
        decodeJson(
          (
            await t.server.services.store.db
              .selectFrom("entities")
              .select("details")
              .where("name", "=", applicationName(0, 80))
              .where("version_run_id", "<=", run)
              .where("last_run_id", ">=", run)
              .executeTakeFirstOrThrow()
          ).details,
        );
      assert.match(await title(first), /"Portal 0"/);
      assert.match(await title(second), /"Portal 0 \(new look\)"/);

      const issuesThen = (await get(`issues?run_id=${first}&format=ndjson`)).text.trim().split("\n");
      assert.ok(issuesThen.every((line) => JSON.parse(line).entity_name !== applicationName(HOSTS, 80)));
      const overview = (await get(`overview?run_id=${first}`)).body.result;
      assert.equal(overview.results_run_id, first);
      assert.equal(overview.counts.hosts, HOSTS);
      assert.equal(overview.last_run.id, second);
    });

    test("a run that is not finished is a 400, a run of another collection a 404, each with a sentence", async () => {
      const now = new Date().toISOString();
      const started = await t.server.services.store.db
        .insertInto("runs")
        .values({
          collection_id: collection.collectionId,
          trigger: "forced",
          status: "failed",
          priority: 1,
          created_at: now,
          updated_at: now,
          finished_at: now,
          error: "test",
          tasks_total: 0,
          tasks_done: 0,
        })
        .returning("id")
        .executeTakeFirstOrThrow();
      const failed = await get(`hosts?run_id=${started.id}`);
      assert.equal(failed.status, 400);
      assert.equal(failed.body.error.code, "bad_request");
      assert.match(
        failed.body.message,
        new RegExp(`Run ${started.id} is failed; only a finished run has results`),
      );
      assert.deepEqual(
        failed.body.error.details.map((d: { field: string }) => d.field),
        ["run_id"],
      );
      const diff = await get(`runs/${started.id}/diff`);
      assert.equal(diff.status, 400);

      const foreign = await t.request("GET", `/api/collections/other/hosts?run_id=${first}`);
      assert.equal(foreign.status, 404);
      assert.match(foreign.body.message, /is not a run of collection "other"/);
      const missing = await get("runs/999999/diff");
      assert.equal(missing.status, 404);
      const malformed = await get("hosts?run_id=first");
      assert.equal(malformed.status, 400);
    });

    test("the diff lists what appeared and disappeared, entities and issues, in their spec shapes", async () => {
      const response = await get(`runs/${second}/diff`);
      assert.equal(response.status, 200, response.text);
      const diff = response.body.result;
      assert.equal(diff.run_id, second);
      assert.equal(diff.previous_run_id, first);
      const names = (items: Array<{ name: string }>) => items.map((e) => e.name).sort();
      assert.deepEqual(
        names(diff.entities.appeared),
        [
          ip(HOSTS),
          `${ip(HOSTS)}:443/tcp`,
          `${ip(HOSTS)}:80/tcp`,
          `h${HOSTS}.corp.example`,
          applicationName(HOSTS, 443),
          applicationName(HOSTS, 80),
        ].sort(),
        "the new host, its name, services and applications; a changed title is not an appearance",
      );
      assert.deepEqual(
        names(diff.entities.disappeared),
        [
          ip(3),
          `${ip(3)}:22/tcp`,
          `${ip(3)}:443/tcp`,
          `${ip(3)}:80/tcp`,
          applicationName(3, 443),
          applicationName(3, 80),
        ].sort(),
      );
      for (const entity of [...diff.entities.appeared, ...diff.entities.disappeared])
        assertShape(entity, ENTITY);
      const issueNames = (items: Array<{ entity_name: string }>) => items.map((i) => i.entity_name).sort();
      const planted = (host: number) =>
        [80, 443].filter((port) => issueOf(host, port)).map((port) => applicationName(host, port));
      assert.deepEqual(issueNames(diff.issues.appeared), planted(HOSTS).sort());
      assert.deepEqual(issueNames(diff.issues.disappeared), planted(3).sort());
      for (const issue of [...diff.issues.appeared, ...diff.issues.disappeared]) assertShape(issue, ISSUE);

      const firstDiff = (await get(`runs/${first}/diff`)).body.result;
      assert.equal(firstDiff.previous_run_id, null);
      assert.equal(firstDiff.entities.disappeared.length, 0);
      const everything = Number((await get(`recent?run_id=${first}&limit=1`)).headers.get("x-total-count"));
      assert.equal(firstDiff.entities.appeared.length, everything, "a first run: everything appeared");

      const overview = (await get("overview")).body.result;
      assert.deepEqual(overview.new_since_previous_run, {
        previous_run_id: first,
        entities: diff.entities.appeared.length,
        issues: diff.issues.appeared.length,
      });
    });

    test("storage grows with what changes: an unchanged run adds no row", async () => {
      const db = t.server.services.store.db;
      const rows = async () =>
        Number(
          (
            await db
              .selectFrom("entities")
              .select((eb) => eb.fn.countAll<number | string>().as("n"))
              .where("collection_id", "=", collection.collectionId)
              .executeTakeFirstOrThrow()
          ).n,
        );
      const before = await rows();
      const third = await runIn(t, collection, run2);
      assert.equal(await rows(), before, "run 3 saw what run 2 saw: versions only got longer");
      const fourth = await runIn(t, collection, { ...run2, retitle: () => undefined });
      const retitled = [0, 20, 40].length * 2;
      assert.equal(await rows(), before + retitled, "six applications changed back: six new versions");
      const diff = (await get(`runs/${fourth}/diff`)).body.result;
      assert.deepEqual([diff.entities.appeared, diff.entities.disappeared], [[], []]);
      const thirdHosts = (await get(`hosts?run_id=${third}`)).body.result;
      assert.deepEqual(Object.keys(thirdHosts).sort(), Object.keys((await get("hosts")).body.result).sort());
    });
  });
}
