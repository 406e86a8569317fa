/**
 * A PostgreSQL store's commits do not wait for their WAL flush (the durability SQLite's
 * synchronous = NORMAL has), unless DATABASE_URL sets its own `options`.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { sql } from "kysely";
import { openStore } from "../../src/store/database.ts";
import { POSTGRES_URL, serviceSkipReason } from "../helpers/services.ts";

const skip = await serviceSkipReason("PostgreSQL", POSTGRES_URL);

async function synchronousCommit(databaseUrl: string): Promise<string> {
  const store = openStore({ databaseUrl, dataDir: "" });
  try {
    const { rows } = await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(store.db);
    return rows[0].synchronous_commit;
  } finally {
    await store.close();
  }
}

describe("commits on PostgreSQL", { skip }, () => {
  test("do not wait for the disk by default", async () => {
    assert.equal(await synchronousCommit(POSTGRES_URL), "off");
  });

  test("follow a DATABASE_URL that sets its own options", async () => {
    const url = new URL(POSTGRES_URL);
    url.searchParams.set("options", "-c synchronous_commit=on");
    assert.equal(await synchronousCommit(url.toString()), "on");
  });
});
