/**
 * The audit log: collection changes through the API (on both dialects) and administration through the CLI
 * are recorded with who, what, when and from where, and read back with `sightline audit list`.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { hostname } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { AuditLog } from "../../src/store/audit.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { createTestStore, dialects, type TestStore } from "../helpers/stores.ts";

const run = promisify(execFile);
const BIN = join(import.meta.dirname, "../../bin/sightline.js");

for (const { dialect, skip } of await dialects()) {
  describe(`API changes are audited, on ${dialect}`, { skip }, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer(dialect);
    });
    after(async () => t?.close());

    test("create, add seeds, change the scan rate, delete seeds: who, what, when, from where", async () => {
      const started = Date.now();
      const steps: Array<[string, string, unknown]> = [
        ["POST", "/api/collections", { name: "audited", seeds: [{ type: "Domain", name: "a.example" }] }],
        ["POST", "/api/collections/audited", { seeds: [{ type: "Domain", name: "b.example" }] }],
        ["POST", "/api/collections/audited", { scan_rate: "weekly" }],
        ["DELETE", "/api/collections/audited/seeds", undefined],
      ];
      for (const [i, [method, path, body]] of steps.entries()) {
        const response = await t.request(method, path, { body, headers: { "x-request-id": `audit-${i}` } });
        assert.equal(response.status, 200, response.text);
      }
      // Refused requests leave no entry.
      assert.equal((await t.request("POST", "/api/collections", { body: { name: "audited" } })).status, 409);

      const entries = (await new AuditLog(t.server.services.store.db).list()).reverse();
      assert.deepEqual(
        entries.map((e) => [e.action, e.target, e.request_id]),
        [
          ["collection.create", "collection:audited", "audit-0"],
          ["collection.seeds.add", "collection:audited", "audit-1"],
          ["collection.update", "collection:audited", "audit-2"],
          ["collection.seeds.delete", "collection:audited", "audit-3"],
        ],
      );
      const admin = (await t.server.services.accounts.findUser("admin"))!;
      for (const entry of entries) {
        assert.equal(entry.actor, "user:admin");
        assert.equal(entry.user_id, admin.id);
        assert.equal(entry.account_id, admin.account_id);
        assert.equal(entry.source, "127.0.0.1");
        assert.ok(Date.parse(entry.at) >= started - 1000 && Date.parse(entry.at) <= Date.now() + 1000);
      }
      assert.deepEqual(entries[0].details, {
        team_id: admin.default_team_id,
        seeds_added: 1,
        scan_rate: "auto",
      });
      assert.deepEqual(entries[1].details, { seeds_given: 1, seeds_added: 1 });
      assert.deepEqual(entries[2].details, { seeds_given: 0, seeds_added: 0, scan_rate: "weekly" });
      assert.deepEqual(entries[3].details, { seeds_deleted: 2 });
    });
  });
}

describe("sightline audit list", () => {
  let store: TestStore;
  const sightline = async (...args: string[]) => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      SIGHTLINE_DATA_DIR: store.config.dataDir,
      LOG_LEVEL: "silent",
    };
    delete env.DATABASE_URL;
    delete env.NODE_TEST_CONTEXT;
    const { stdout } = await run(process.execPath, [BIN, ...args], { env });
    return stdout;
  };
  before(async () => {
    store = await createTestStore("sqlite");
  });
  after(async () => store?.drop());

  test("administration from the CLI is recorded and listed, newest first, as JSON or a table", async () => {
    await sightline("accounts", "create", "globex", "--status", "trial");
    await sightline("accounts", "update", "globex", "--status", "active");
    const user = JSON.parse(await sightline("users", "create", "alice", "--team", "globex", "--json"));
    await sightline("teams", "create", "red", "--account", "globex");
    await sightline("teams", "add-member", "red", "alice");
    const key = JSON.parse(await sightline("keys", "create", "alice", "--json"));
    await sightline("keys", "revoke", String(key.id));

    const entries = JSON.parse(await sightline("audit", "list", "--json"));
    assert.deepEqual(
      entries.map((e: { action: string; target: string }) => [e.action, e.target]),
      [
        ["key.revoke", `key:${key.access_key}`],
        ["key.create", `key:${key.access_key}`],
        ["team.add-member", entries[2].target],
        ["team.create", entries[3].target],
        ["user.create", "user:alice"],
        ["account.update", "account:globex"],
        ["account.create", "account:globex"],
      ],
    );
    for (const entry of entries) {
      assert.match(entry.actor, /^cli:/);
      assert.equal(entry.source, `cli@${hostname()}`);
      assert.equal(entry.account_id, user.account_id, `${entry.action} is filed under the account`);
    }
    assert.deepEqual(entries[5].details, { status: "active", previous_status: "trial" });
    const serialised = JSON.stringify(entries);
    assert.ok(
      !serialised.includes(user.secret_key) && !serialised.includes(key.secret_key),
      "no secret is audited",
    );

    const keysOnly = JSON.parse(await sightline("audit", "list", "--json", "--action", "key."));
    assert.deepEqual(
      keysOnly.map((e: { action: string }) => e.action),
      ["key.revoke", "key.create"],
    );
    assert.equal(JSON.parse(await sightline("audit", "list", "--json", "--limit", "1")).length, 1);
    const table = await sightline("audit", "list");
    assert.match(table, /^ID\s+AT\s+ACTOR\s+ACTION\s+TARGET\s+SOURCE/);
    assert.match(table, /account\.create\s+account:globex/);
    assert.match(table, /\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/);
  });
});
