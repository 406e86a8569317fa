/** The run client commands as a user runs them: real `sightline` processes against a real server. */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { runClientCommand } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { TestWork } from "./fixtures/test-work.ts";
import { createCollection, force, waitForRun } from "./helpers.ts";

describe("sightline run / runs (client commands)", () => {
  let t: TestServer;
  let home: string;

  before(async () => {
    t = await startTestServer(
      "sqlite",
      { taskAttempts: 1, schedulerIntervalSeconds: 3600 },
      { runWork: (services) => new TestWork(services, { fanout: 3, taskMs: 20, fail: ["broken.example"] }) },
    );
    home = mkdtempSync(join(tmpdir(), "sightline-home-"));
    await createCollection(t, "acme", ["a.example", "b.example"]);
  });
  after(async () => {
    await t?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  /** Runs a client command; keys and URL from the environment unless `env` says otherwise. */
  const sightline = (args: string[], env: Record<string, string> = {}) =>
    runClientCommand(t, home, args, env);

  test("run --watch forces a run, shows progress and reports the end", async () => {
    const { code, output } = await sightline(["run", "acme", "--watch", "--interval", "100"]);
    assert.equal(code, 0, output);
    assert.match(output, /run \d+: (queued|started|finished), \d+\/\d+ tasks/);
    assert.match(output, /Run \d+ of acme finished: 8 tasks in \d+s\./);
  });

  test("runs list prints a table, or JSON with --json", async () => {
    const table = await sightline(["runs", "list", "acme"]);
    assert.equal(table.code, 0, table.output);
    assert.match(table.output, /^ID\s+STATUS\s+TRIGGER\s+PRIORITY\s+CREATED_AT/m);
    assert.match(table.output, /finished\s+forced\s+1\s+\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/);
    const json = await sightline(["runs", "list", "acme", "--json"]);
    const runs = JSON.parse(json.output);
    assert.equal(runs[0].status, "finished");
    assert.equal(runs[0].tasks_done, 8);
  });

  test("runs watch without an id follows the latest run; a failed run exits non-zero with its reason", async () => {
    await createCollection(t, "fails", ["broken.example"]);
    const id = await force(t, "fails");
    const { code, output } = await sightline(["runs", "watch", "fails", "--interval", "100"]);
    assert.equal(code, 1, output);
    assert.match(output, new RegExp(`Run ${id} of fails failed: Task "seed:broken.example" failed 1 time`));
  });

  test("runs cancel: the API's sentence when it cannot be cancelled", async () => {
    await createCollection(t, "done", ["d.example"]);
    const id = await force(t, "done");
    await waitForRun(t, "done", id, "finished");
    const { code, output } = await sightline(["runs", "cancel", "done", String(id)]);
    assert.equal(code, 1);
    assert.match(
      output,
      new RegExp(
        `sightline: Run ${id} is already finished; only a queued or started run can be cancelled\\.`,
      ),
    );
  });

  test("API errors print the API's sentence; bad input is refused before asking", async () => {
    const missing = await sightline(["runs", "list", "nope"]);
    assert.equal(missing.code, 1);
    assert.match(missing.output, /sightline: No collection named "nope" is visible to you/);
    const wrongKey = await sightline(["runs", "list", "acme"], { SERVICE_SECRET_KEY: "wrong" });
    assert.equal(wrongKey.code, 1);
    assert.match(wrongKey.output, /not valid or has been revoked/);
    const badId = await sightline(["runs", "cancel", "acme", "x1"]);
    assert.equal(badId.code, 2);
    assert.match(badId.output, /A run id is a whole number/);
  });

  test("connection refused names the URL", async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const { code, output } = await sightline(["runs", "list", "acme", "--url", `http://127.0.0.1:${port}`]);
    assert.equal(code, 1);
    assert.match(
      output,
      new RegExp(`Cannot reach Sightline at http://127\\.0\\.0\\.1:${port}: connection refused`),
    );
  });

  test("keys and URL from the client file; the environment and options win over it", async () => {
    const dir = join(home, ".config", "sightline");
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "client.json"),
      JSON.stringify({ url: t.url, access_key: t.admin.accessKey, secret_key: t.admin.secretKey }),
    );
    const bare = { SIGHTLINE_URL: "", SERVICE_ACCESS_KEY: "", SERVICE_SECRET_KEY: "" };
    const fromFile = await sightline(["runs", "list", "acme", "--json"], bare);
    assert.equal(fromFile.code, 0, fromFile.output);
    const envWins = await sightline(["runs", "list", "acme"], { ...bare, SERVICE_SECRET_KEY: "wrong" });
    assert.equal(envWins.code, 1);
    const optionWins = await sightline(["runs", "list", "acme", "--secret-key", t.admin.secretKey], {
      SERVICE_SECRET_KEY: "wrong",
    });
    assert.equal(optionWins.code, 0, optionWins.output);
    rmSync(join(dir, "client.json"));
    const none = await sightline(["runs", "list", "acme"], bare);
    assert.equal(none.code, 2);
    assert.match(none.output, /No API key pair: pass --access-key and --secret-key/);
  });
});
