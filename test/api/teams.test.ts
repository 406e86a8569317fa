/** The caller's teams over real HTTP, on SQLite and PostgreSQL: what `team_id` may name. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type Keys, startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";

for (const { dialect, skip } of await dialects()) {
  describe(`teams API on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let member: Keys;
    let teams: { blue: number; red: number; elsewhere: number; home: number };

    before(async () => {
      t = await startTestServer(dialect);
      const { accounts } = t.server.services;
      const account = (await accounts.findAccount("default"))!;
      const blue = await accounts.createTeam(account.id, "blue");
      const red = await accounts.createTeam(account.id, "red");
      const elsewhere = await accounts.createTeam(account.id, "elsewhere");
      // A user whose default team is red, also a member of blue; "elsewhere" is not theirs.
      const user = await accounts.createUser(account.id, "dana", red.id);
      await accounts.addMember(blue.id, user.id);
      member = await accounts.issueKey(user.id);
      const admin = (await accounts.findUser("admin"))!;
      teams = { blue: blue.id, red: red.id, elsewhere: elsewhere.id, home: admin.default_team_id! };
    });
    after(async () => t?.close());

    test("lists the caller's teams by id with the default marked, and nobody else's", async () => {
      const response = await t.request("GET", "/api/teams", { keys: member });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.deepEqual(response.body, {
        success: true,
        message: "success",
        result: [
          { id: teams.blue, name: "blue", default: false },
          { id: teams.red, name: "red", default: true },
        ],
      });
      const admin = await t.request("GET", "/api/teams");
      assert.deepEqual(
        admin.body.result.map((team: { id: number; default: boolean }) => [team.id, team.default]),
        [[teams.home, true]],
        "the bootstrap admin sees only its own team",
      );
    });

    test("a listed team is one a collection may be created in; another is refused", async () => {
      const listed = await t.request("GET", "/api/teams", { keys: member });
      const blue = listed.body.result.find((team: { name: string }) => team.name === "blue");
      const created = await t.request("POST", "/api/collections", {
        keys: member,
        body: { name: "in-blue", seeds: [], team_id: blue.id },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal(created.body.result.team_id, blue.id);
      const refused = await t.request("POST", "/api/collections", {
        keys: member,
        body: { name: "in-elsewhere", seeds: [], team_id: teams.elsewhere },
      });
      assert.equal(refused.status, 403);
    });

    test("a default team the user has left is no default: creation goes to a team they are in", async () => {
      const { accounts } = t.server.services;
      const user = (await accounts.findUser("dana"))!;
      await accounts.removeMember(teams.red, user.id);
      try {
        const listed = await t.request("GET", "/api/teams", { keys: member });
        assert.deepEqual(listed.body.result, [{ id: teams.blue, name: "blue", default: true }]);
        const created = await t.request("POST", "/api/collections", {
          keys: member,
          body: { name: "after-leaving" },
        });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        assert.equal(created.body.result.team_id, teams.blue);
      } finally {
        await accounts.addMember(teams.red, user.id);
      }
    });

    test("without keys, or with a wrong pair, the error envelope says so", async () => {
      for (const keys of [null, { accessKey: member.accessKey, secretKey: "wrong-secret" }]) {
        const response = await t.request("GET", "/api/teams", { keys });
        assert.equal(response.status, 401);
        assert.equal(response.body.success, false);
        assert.equal(response.body.result, null);
        assert.equal(response.body.error.code, "unauthorized");
        assert.match(response.body.message, /SERVICE_ACCESS_KEY|key pair/);
      }
    });

    test("the OpenAPI document describes the route with its envelope and errors", async () => {
      const document = await t.request("GET", "/api/openapi.json", { keys: null });
      // Documented as the collections list is, without the trailing slash of a prefixed plugin root.
      const operation = document.body.paths["/api/teams"]?.get;
      assert.ok(operation, "GET /api/teams is documented");
      assert.deepEqual(Object.keys(operation.responses).sort(), [
        "200",
        "400",
        "401",
        "413",
        "415",
        "429",
        "500",
        "503",
      ]);
      const result = operation.responses["200"].content["application/json"].schema.properties.result;
      assert.deepEqual(Object.keys(result.items.properties), ["id", "name", "default"]);
    });
  });
}
