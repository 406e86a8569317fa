/**
 * Collection names are unique per account, so a user of another team in the same account can hit a name
 * held by a collection they cannot see. The 409 they get must not confirm that a collection exists: one
 * sentence, the same for every reason a name cannot be used, on both dialects.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Keys } from "../helpers/server.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

const SENTENCE = "This name cannot be used; choose another.";

for (const { dialect, skip } of await dialects()) {
  describe(`a taken name tells nothing about the collection holding it, on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let stranger: Keys;
    before(async () => {
      t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600 });
      const { accounts } = t.server.services;
      const account = (await accounts.findAccount("default"))!;
      const red = await accounts.createTeam(account.id, "red");
      stranger = await accounts.issueKey((await accounts.createUser(account.id, "mallory", red.id)).id);
      const created = await t.request("POST", "/api/collections", { body: { name: "secret-project" } });
      assert.equal(created.status, 200, created.text);
    });
    after(async () => {
      await t?.close();
    });

    test("a user of another team: 409 with the one sentence, and the collection stays invisible", async () => {
      const taken = await t.request("POST", "/api/collections", {
        keys: stranger,
        body: { name: "secret-project" },
      });
      assert.equal(taken.status, 409, taken.text);
      assert.equal(taken.body.message, SENTENCE);
      assert.equal(taken.body.error.code, "conflict");
      assert.doesNotMatch(taken.text, /exist|collection|team|secret-project/i);
      assert.equal(
        (await t.request("GET", "/api/collections/secret-project", { keys: stranger })).status,
        404,
      );
    });

    test("the owner gets the same sentence: the answer does not depend on who holds the name", async () => {
      const own = await t.request("POST", "/api/collections", { body: { name: "secret-project" } });
      assert.equal(own.status, 409, own.text);
      assert.equal(own.body.message, SENTENCE);
    });
  });
}
