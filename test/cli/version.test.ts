/** `sightline --version` prints the version of package.json, which CHANGELOG.md has a section for. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

const ROOT = join(import.meta.dirname, "../..");
const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));

test("sightline --version and -V print package.json's version", async () => {
  for (const flag of ["--version", "-V"]) {
    const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, "bin/sightline.js"), flag]);
    assert.equal(stdout.trim(), version);
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
