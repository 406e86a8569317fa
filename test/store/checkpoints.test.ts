/**
 * SQLite's write-ahead log is copied back into the database by the checkpoint thread, not by the commits
 * on the event loop: the writer's automatic checkpoints are off once the thread has the database, and
 * the log still does not grow from one large transaction to the next (the thread copied the first back,
 * so the second reuses the log from its start).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { sql } from "kysely";
import { openStore } from "../../src/store/database.ts";

async function waitFor(check: () => Promise<boolean>, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test("SQLite's log is checkpointed by the checkpoint thread, off the event loop", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "sightline-checkpoints-"));
  const store = openStore({ databaseUrl: "", dataDir });
  try {
    const { db } = store;
    const autocheckpoint = async () => {
      const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db);
      return Number(rows[0]?.wal_autocheckpoint);
    };
    assert.ok(await waitFor(async () => (await autocheckpoint()) === 0), "the writer no longer checkpoints");

    await sql`create table filler (id integer primary key, text text)`.execute(db);
    const large = () =>
      db.transaction().execute(async (trx) => {
        for (let i = 0; i < 20; i++)
          await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < 500)
            insert into filler (text) select ${"x".repeat(1000)} from n`.execute(trx);
      });
    const log = () => statSync(join(dataDir, "sightline.db-wal")).size;
    await large();
    const afterFirst = log();
    assert.ok(afterFirst > 8_000_000, `the first transaction logged ${afterFirst} bytes`);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // a few of the thread's rounds
    await large();
    const afterSecond = log();
    assert.ok(
      afterSecond < afterFirst * 1.5,
      `the log grew from ${afterFirst} to ${afterSecond} bytes: nobody copied the first transaction back`,
    );
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
