/**
 * Faults in the store's path: `sightline serve` is killed with SIGKILL while clients write seeds and create
 * collections, then started again. Every write that was acknowledged (200) is there after the restart, with
 * its audit entry; every write is all-or-nothing (a batch of seeds, a collection with its seeds); on
 * SQLite and PostgreSQL.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { AuditLog } from "../../src/store/audit.ts";
import { openStore } from "../../src/store/database.ts";
import { type Sightline, spawnSightline } from "../helpers/processes.ts";
import { BOOTSTRAP_KEYS } from "../helpers/server.ts";
import { createTestStore, dialects, type TestStore } from "../helpers/stores.ts";

const WRITERS = 12;
const BATCH = 10;
const CREATED_SEEDS = 20;
/** Acknowledged writes to wait for before the kill: enough that many more are in flight. */
const KILL_AFTER = 40;

const headers = {
  SERVICE_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
  SERVICE_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
  "content-type": "application/json",
};

function environment(store: TestStore): Record<string, string> {
  return {
    SIGHTLINE_DATA_DIR: store.config.dataDir,
    ...(store.config.databaseUrl ? { DATABASE_URL: store.config.databaseUrl } : {}),
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    SIGHTLINE_BOOTSTRAP_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
    SIGHTLINE_BOOTSTRAP_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
  };
}

async function serve(store: TestStore): Promise<{ process: Sightline; url: string }> {
  const process = spawnSightline(["serve"], environment(store));
  const line = await process.waitForLine(/listening on http:\/\/\S+/, 30_000);
  return { process, url: /listening on (http:\/\/\S+)/.exec(line)![1] };
}

interface Write {
  requestId: string;
  kind: "seeds" | "create";
  /** Collection written to (created, for "create"). */
  collection: string;
  names: string[];
  acknowledged: boolean;
}

const seedNames = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, k) => `${prefix}-${k}.load.example`);

for (const { dialect, skip } of await dialects()) {
  describe(`SIGKILL during seed writes, on ${dialect}`, { skip }, () => {
    const stores: TestStore[] = [];
    const processes: Sightline[] = [];
    after(async () => {
      for (const process of processes) if (process.child.exitCode === null) process.child.kill("SIGKILL");
      for (const store of stores) await store.drop();
    });

    test("every acknowledged write survives, none is half-done", async () => {
      const store = await createTestStore(dialect);
      stores.push(store);
      const first = await serve(store);
      processes.push(first.process);
      const created = await fetch(`${first.url}/api/collections`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name: "load" }),
      });
      assert.equal(created.status, 200);

      const writes: Write[] = [];
      let acknowledged = 0;
      let killed = false;
      let triggerKill: () => void = () => {};
      const enoughAcknowledged = new Promise<void>((resolve) => {
        triggerKill = resolve;
      });

      const writer = async (w: number) => {
        for (let j = 0; !killed; j++) {
          const create = j % 3 === 2;
          const write: Write = create
            ? {
                requestId: `create-${w}-${j}`,
                kind: "create",
                collection: `c-${w}-${j}`,
                names: seedNames(`c-${w}-${j}`, CREATED_SEEDS),
                acknowledged: false,
              }
            : {
                requestId: `seeds-${w}-${j}`,
                kind: "seeds",
                collection: "load",
                names: seedNames(`s-${w}-${j}`, BATCH),
                acknowledged: false,
              };
          writes.push(write);
          const seeds = write.names.map((name) => ({ type: "Domain", name }));
          try {
            const response = await fetch(
              write.kind === "create" ? `${first.url}/api/collections` : `${first.url}/api/collections/load`,
              {
                method: "POST",
                headers: { ...headers, "x-request-id": write.requestId },
                body: JSON.stringify(write.kind === "create" ? { name: write.collection, seeds } : { seeds }),
              },
            );
            if (response.status === 200) {
              await response.json();
              write.acknowledged = true;
              if (++acknowledged >= KILL_AFTER) triggerKill();
            } else {
              assert.fail(`${write.requestId} answered ${response.status}: ${await response.text()}`);
            }
          } catch (error) {
            if (!killed) throw error;
            return; // the server is gone: this write's fate is unknown to the client
          }
        }
      };
      const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
      await enoughAcknowledged;
      killed = true;
      first.process.child.kill("SIGKILL");
      assert.equal(await first.process.exited, "SIGKILL");
      await Promise.all(writers);
      const unacknowledged = writes.filter((w) => !w.acknowledged);
      assert.ok(acknowledged >= KILL_AFTER, `${acknowledged} writes acknowledged before the kill`);
      assert.ok(unacknowledged.length > 0, "some writes were in flight when the server died");

      // Restart on the same store and read back through the API.
      const second = await serve(store);
      processes.push(second.process);
      // biome-ignore lint/suspicious/noExplicitAny: the API's JSON, read in the test
      const get = async (path: string): Promise<any> => {
        const response = await fetch(`${second.url}${path}`, { headers });
        assert.equal(response.status, 200, path);
        return ((await response.json()) as { result: unknown }).result;
      };
      const loadSeeds = new Set(
        ((await get("/api/collections/load")).seeds as Array<{ name: string }>).map((s) => s.name),
      );
      const collections = new Set((await get("/api/collections")) as string[]);

      for (const write of writes) {
        let present: number;
        if (write.kind === "seeds") {
          present = write.names.filter((name) => loadSeeds.has(name)).length;
        } else if (collections.has(write.collection)) {
          const seeds = (await get(`/api/collections/${write.collection}`)).seeds as Array<{ name: string }>;
          present = seeds.length;
          assert.deepEqual(seeds.map((s) => s.name).sort(), [...write.names].sort(), write.requestId);
        } else {
          present = 0;
        }
        if (write.acknowledged)
          assert.equal(present, write.names.length, `${write.requestId} was acknowledged`);
        else assert.ok(present === 0 || present === write.names.length, `${write.requestId} is half-written`);
      }
      assert.equal(await second.process.stop(), 0, "the restarted server stops cleanly");

      // Each change and its audit entry committed together.
      const inspect = openStore(store.config);
      try {
        const audited = new Set(
          (await new AuditLog(inspect.db).list({ action: "collection.", limit: 100_000 })).map(
            (e) => e.request_id,
          ),
        );
        for (const write of writes) {
          const applied =
            write.kind === "seeds"
              ? write.names.every((name) => loadSeeds.has(name))
              : collections.has(write.collection);
          assert.equal(audited.has(write.requestId), applied, `${write.requestId}: audit entry iff applied`);
        }
      } finally {
        await inspect.close();
      }
    });
  });
}
