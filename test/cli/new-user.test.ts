/** Deleting through the `sightline` binary: a collection only after its name is typed (or --yes), one seed. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { runClientCommand } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

describe("sightline collections delete / delete-seed", () => {
  let t: TestServer;
  let home: string;

  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
    home = mkdtempSync(join(tmpdir(), "sightline-delete-"));
  });
  after(async () => {
    await t?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  const sightline = (args: string[]) => runClientCommand(t, home, args);

  /** The command with `input` on its standard input (what a person types at the prompt). */
  function typed(args: string[], input: string | null): Promise<{ code: number | null; output: string }> {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: home,
        SIGHTLINE_URL: t.url,
        SERVICE_ACCESS_KEY: t.admin.accessKey,
        SERVICE_SECRET_KEY: t.admin.secretKey,
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    if (input !== null) child.stdin.write(input);
    child.stdin.end();
    return new Promise((resolve) => child.once("close", (code) => resolve({ code, output })));
  }

  const exists = async (name: string) => (await t.request("GET", `/api/collections/${name}`)).status === 200;

  test("a collection is deleted only when its name is typed, or with --yes", async () => {
    for (const name of ["one", "two"])
      assert.equal((await sightline(["collections", "create", name, "--seed", "one.example"])).code, 0);

    const nothing = await typed(["collections", "delete", "one"], null);
    assert.equal(nothing.code, 2, nothing.output);
    assert.match(nothing.output, /Type the collection's name to delete it:/);
    assert.match(
      nothing.output,
      /Nothing was typed, so one was kept; type its name when asked, or pass --yes\./,
    );
    const wrong = await typed(["collections", "delete", "one"], "two\n");
    assert.equal(wrong.code, 2);
    assert.match(wrong.output, /"two" is not "one", so one was kept/);
    assert.ok(await exists("one"), "kept after a wrong name");

    const right = await typed(["collections", "delete", "one"], "one\n");
    assert.equal(right.code, 0, right.output);
    assert.match(right.output, /Deleted collection one with its 1 seeds, 0 runs and their results\./);
    assert.ok(!(await exists("one")));

    const scripted = await sightline(["collections", "delete", "two", "--yes"]);
    assert.equal(scripted.code, 0, scripted.output);
    assert.ok(!(await exists("two")));
    const gone = await sightline(["collections", "delete", "two", "--yes"]);
    assert.equal(gone.code, 1);
    assert.match(gone.output, /No collection named "two" is visible to you/);
  });

  test("one seed is deleted by TYPE:NAME or a bare name", async () => {
    await sightline([
      "collections",
      "create",
      "few",
      "--seed",
      "a.example",
      "--seed",
      "Uri:https://b.example/x",
      "--seed",
      "192.0.2.0/24",
    ]);
    const uri = await sightline(["collections", "delete-seed", "few", "Uri:https://b.example/x"]);
    assert.equal(uri.code, 0, uri.output);
    assert.match(uri.output, /Deleted Uri https:\/\/b\.example\/x from few; it has 2 seeds\./);
    const block = await sightline(["collections", "delete-seed", "few", "192.0.2.0/24"]);
    assert.equal(block.code, 0, block.output);
    const missing = await sightline(["collections", "delete-seed", "few", "c.example"]);
    assert.equal(missing.code, 1);
    assert.match(missing.output, /Collection "few" has no Domain seed "c\.example"/);
  });
});
