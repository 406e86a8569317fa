/**
 * `sightline --version` prints the version of package.json, which CHANGELOG.md has a section for, and the
 * commit (from the checkout, or the build's SIGHTLINE_BUILD_COMMIT).
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { checkoutCommit } from "../../src/core/build-info.ts";

const ROOT = join(import.meta.dirname, "../..");
const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));

test("sightline --version and -V print package.json's version and the commit", async () => {
  const commit = checkoutCommit(ROOT);
  for (const flag of ["--version", "-V"]) {
    const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, "bin/sightline.js"), flag]);
    assert.equal(stdout.trim(), `${version} (commit ${commit ? commit.slice(0, 12) : "unknown"})`);
  }
  // An image has no .git: its build names the commit.
  const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, "bin/sightline.js"), "-V"], {
    env: { ...process.env, SIGHTLINE_BUILD_COMMIT: "0123456789abcdef0123456789abcdef01234567" },
  });
  assert.equal(stdout.trim(), `${version} (commit 0123456789ab)`);
});

test("the commit is read from a checkout's .git as git itself names it: a branch, a detached HEAD, packed refs, a worktree", () => {
  const dir = mkdtempSync(join(tmpdir(), "sightline-build-"));
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid", ...args], {
      encoding: "utf8",
    }).trim();
  try {
    git("init", "-q", "-b", "main");
    writeFileSync(join(dir, "a.txt"), "a");
    git("add", "a.txt");
    git("commit", "-q", "-m", "one");
    assert.equal(checkoutCommit(dir), git("rev-parse", "HEAD"));
    git("pack-refs", "--all");
    assert.equal(checkoutCommit(dir), git("rev-parse", "HEAD"), "from packed-refs");
    git("checkout", "-q", "--detach");
    assert.equal(checkoutCommit(dir), git("rev-parse", "HEAD"), "detached");
    const tree = join(dir, "tree");
    git("worktree", "add", "-q", "-b", "other", tree);
    writeFileSync(join(tree, "b.txt"), "b");
    execFileSync("git", [
      "-C",
      tree,
      "-c",
      "user.name=t",
      "-c",
      "user.email=t@example.invalid",
      "add",
      "b.txt",
    ]);
    execFileSync("git", [
      "-C",
      tree,
      "-c",
      "user.name=t",
      "-c",
      "user.email=t@example.invalid",
      "commit",
      "-q",
      "-m",
      "two",
    ]);
    assert.equal(
      checkoutCommit(tree),
      execFileSync("git", ["-C", tree, "rev-parse", "HEAD"], { encoding: "utf8" }).trim(),
    );
    assert.equal(checkoutCommit(join(dir, "nowhere")), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the licence, security policy, contributing guide and changelog are there; the changelog has the version", () => {
  assert.match(readFileSync(join(ROOT, "LICENSE"), "utf8"), /^MIT License/);
  assert.equal(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).license, "MIT");
  for (const file of ["SECURITY.md", "CONTRIBUTING.md"])
    assert.ok(readFileSync(join(ROOT, file), "utf8").length > 500);
  assert.match(
    readFileSync(join(ROOT, "CHANGELOG.md"), "utf8"),
    new RegExp(`^## ${version.replaceAll(".", "\\.")} - \\d{4}-\\d{2}-\\d{2}$`, "m"),
  );
});
