/**
 * A PostgreSQL store's per-task statements go through connections of their own (Store.taskDb) whose
 * sessions keep one plan per named statement, never a sequential scan; the API's and the merge's
 * connections keep PostgreSQL's defaults. A DATABASE_URL's own `options` apply to both.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { type Kysely, sql } from "kysely";
import { openStore } from "../../src/store/database.ts";
import type { Database } from "../../src/store/schema.ts";
import { POSTGRES_URL, serviceSkipReason } from "../helpers/services.ts";

const skip = await serviceSkipReason("PostgreSQL", POSTGRES_URL);

async function sessionSettings(db: Kysely<Database>) {
  const { rows } = await sql<{ name: string; setting: string }>`
    select name, setting from pg_settings
    where name in ('plan_cache_mode', 'enable_seqscan', 'synchronous_commit')`.execute(db);
  return Object.fromEntries(rows.map((row) => [row.name, row.setting]));
}

describe("per-task connections on PostgreSQL", { skip }, () => {
  test("plan a task's statements once and by index; the other connections keep the defaults", async () => {
    const store = openStore({ databaseUrl: POSTGRES_URL, dataDir: "" });
    try {
      assert.deepEqual(await sessionSettings(store.taskDb), {
        enable_seqscan: "off",
        plan_cache_mode: "force_generic_plan",
        synchronous_commit: "off",
      });
      assert.deepEqual(await sessionSettings(store.db), {
        enable_seqscan: "on",
        plan_cache_mode: "auto",
        synchronous_commit: "off",
      });
    } finally {
      await store.close();
    }
  });

  test("keep a DATABASE_URL's own options beside their planner settings", async () => {
    const url = new URL(POSTGRES_URL);
    url.searchParams.set("options", "-c synchronous_commit=on");
    const store = openStore({ databaseUrl: url.toString(), dataDir: "" });
    try {
      assert.deepEqual(await sessionSettings(store.taskDb), {
        enable_seqscan: "off",
        plan_cache_mode: "force_generic_plan",
        synchronous_commit: "on",
      });
      assert.equal((await sessionSettings(store.db)).synchronous_commit, "on");
    } finally {
      await store.close();
    }
  });
});

test("a SQLite store's task statements use its one connection", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "sightline-task-connections-"));
  const store = openStore({ databaseUrl: "", dataDir });
  try {
    assert.equal(store.taskDb, store.db);
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
