import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openStore } from "../../src/store/database.ts";
import { migrateToLatest } from "../../src/store/migrate.ts";

test("the SQLite data directory is made 0700 and the database 0600, its WAL files too", async () => {
  const parent = mkdtempSync(join(tmpdir(), "sightline-perms-"));
  const dataDir = join(parent, "data");
  const store = openStore({ databaseUrl: "", dataDir });
  try {
    await migrateToLatest(store);
    const mode = (path: string) => statSync(path).mode & 0o777;
    assert.equal(mode(dataDir).toString(8), "700");
    for (const name of ["sightline.db", "sightline.db-wal", "sightline.db-shm"])
      assert.equal(mode(join(dataDir, name)).toString(8), "600", name);
  } finally {
    await store.close();
    rmSync(parent, { recursive: true, force: true });
  }
});
