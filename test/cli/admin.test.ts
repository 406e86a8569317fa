/** The `sightline` binary as an operator uses it: serve prints keys, admin commands manage accounts and keys. */
import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

const run = promisify(execFile);
const BIN = join(import.meta.dirname, "../../bin/sightline.js");

function environment(dataDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SIGHTLINE_DATA_DIR: dataDir,
    LOG_LEVEL: "silent",
    PORT: "0",
    HOST: "127.0.0.1",
  };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  delete env.NODE_TEST_CONTEXT; // else the child thinks it is a test runner child and reports to us
  return env;
}

async function sightline(dataDir: string, ...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { env: environment(dataDir) });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

/** Starts `sightline serve` and resolves with its URL and the printed key pair. */
function serve(
  dataDir: string,
): Promise<{ child: ChildProcess; url: string; access: string; secret: string }> {
  const child = spawn(process.execPath, [BIN, "serve"], { env: environment(dataDir) });
  let output = "";
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${output}`)));
    child.stdout.on("data", function started(chunk) {
      output += chunk;
      const url = /listening on (http:\/\/\S+) /.exec(output)?.[1];
      if (!url) return;
      // Not a terminal: the generated keys are in a 0600 file whose path is printed, not on stdout.
      const file = /API keys \(SERVICE_ACCESS_KEY and SERVICE_SECRET_KEY\) were written to (\S+) /.exec(
        output,
      )?.[1];
      const keys = file ? readFileSync(file, "utf8") : output;
      const access = /SERVICE_ACCESS_KEY=(\S+)/.exec(keys)?.[1] ?? "";
      const secret = /SERVICE_SECRET_KEY=(\S+)/.exec(keys)?.[1] ?? "";
      child.stdout.off("data", started);
      child.stdout.resume(); // keep draining what it prints later
      child.removeAllListeners("exit");
      resolve({ child, url, access, secret });
    });
  });
}

describe("sightline CLI", () => {
  let dataDir: string;
  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), "sightline-cli-"));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test("serve bootstraps, prints a working key pair once, and stops cleanly on SIGINT", async () => {
    const first = await serve(dataDir);
    assert.match(first.access, /^SL[0-9A-F]{24}$/);
    const headers = { SERVICE_ACCESS_KEY: first.access, SERVICE_SECRET_KEY: first.secret };
    const response = await fetch(`${first.url}/api/collections`, { headers });
    assert.deepEqual(await response.json(), { success: true, message: "success", result: [] });
    const exited = new Promise<number | null>((resolve) => first.child.once("exit", resolve));
    first.child.kill("SIGINT");
    assert.equal(await exited, 0);

    const second = await serve(dataDir);
    assert.equal(second.access, "", "keys are printed only on the first start");
    const stopped = new Promise((resolve) => second.child.once("exit", resolve));
    second.child.kill("SIGTERM");
    await stopped;
  });

  test("accounts, teams, users and keys", async () => {
    const account = await sightline(dataDir, "accounts", "create", "globex", "--status", "trial", "--json");
    assert.equal(account.code, 0, account.stderr);
    assert.equal(JSON.parse(account.stdout).status, "trial");

    const user = await sightline(dataDir, "users", "create", "alice", "--team", "globex", "--json");
    assert.equal(user.code, 0, user.stderr);
    const alice = JSON.parse(user.stdout);
    assert.match(alice.secret_key, /^[A-Za-z0-9_-]{43}$/);

    const updated = await sightline(
      dataDir,
      "accounts",
      "update",
      "globex",
      "--status",
      "suspended",
      "--json",
    );
    assert.equal(JSON.parse(updated.stdout).status, "suspended");

    const keys = await sightline(dataDir, "keys", "list", "--user", "alice", "--json");
    const listed = JSON.parse(keys.stdout);
    assert.equal(listed.length, 1);
    assert.equal(listed[0].access_key, alice.access_key);
    assert.ok(!keys.stdout.includes(alice.secret_key), "secrets are never listed");

    const revoked = await sightline(dataDir, "keys", "revoke", alice.access_key);
    assert.equal(revoked.code, 0, revoked.stderr);
    const again = await sightline(dataDir, "keys", "revoke", alice.access_key);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no live key/);

    const table = await sightline(dataDir, "accounts", "list");
    assert.match(table.stdout, /^ID\s+NAME\s+STATUS/m);
    assert.match(table.stdout, /globex\s+suspended/);
  });

  test("a key revoked with the CLI is refused by a running server on its next request", async () => {
    const server = await serve(dataDir);
    try {
      const made = await sightline(dataDir, "users", "create", "carol", "--team", "default", "--json");
      assert.equal(made.code, 0, made.stderr);
      const carol = JSON.parse(made.stdout);
      const headers = { SERVICE_ACCESS_KEY: carol.access_key, SERVICE_SECRET_KEY: carol.secret_key };
      const before = await fetch(`${server.url}/api/collections`, { headers });
      assert.equal(before.status, 200);
      const revoked = await sightline(dataDir, "keys", "revoke", carol.access_key);
      assert.equal(revoked.code, 0, revoked.stderr);
      const after = await fetch(`${server.url}/api/collections`, { headers });
      assert.equal(after.status, 401, "no process keeps a key it read a moment ago");
    } finally {
      const exited = new Promise((resolve) => server.child.once("exit", resolve));
      server.child.kill("SIGTERM");
      await exited;
    }
  });

  test("bad input: clear sentences and exit codes", async () => {
    const status = await sightline(dataDir, "accounts", "create", "x", "--status", "gold");
    assert.equal(status.code, 2);
    assert.match(status.stderr, /status must be one of trial, active, suspended, expired/);
    const duplicate = await sightline(dataDir, "accounts", "create", "globex");
    assert.equal(duplicate.code, 1);
    assert.match(duplicate.stderr, /account "globex" already exists/);
    const missing = await sightline(dataDir, "users", "create", "bob", "--team", "nope");
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /team "nope" does not exist/);
    const unknown = await sightline(dataDir, "frobnicate");
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command/);
    const config = await run(process.execPath, [BIN, "migrate"], {
      env: { ...environment(dataDir), DATABASE_URL: "mysql://nope" },
    }).catch((error) => error);
    assert.equal(config.code, 2);
    assert.match(config.stderr, /DATABASE_URL must start with postgres/);
  });
});
