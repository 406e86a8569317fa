/**
 * The layers of src/ point one way (docs/architecture.md). This test reads every import of every source
 * file and fails on one that points up or sideways against the rules, naming the file and the import.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const SRC = fileURLToPath(new URL("../src/", import.meta.url));

/** For each top-level folder of src/, the folders it may import (besides itself). */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  store: ["core"],
  discovery: ["core", "store"],
  results: ["core", "store"],
  runs: ["core", "store", "discovery"],
  webhooks: ["core", "store", "results", "runs"],
  api: ["core", "store", "results", "runs", "webhooks"],
  app: ["core", "store", "discovery", "results", "runs", "webhooks", "api"],
  cli: ["core", "store", "discovery", "results", "runs", "webhooks", "api", "app"],
  web: ["core"],
};

const IMPORT =
  /(?:^|\s)(?:import|export)\s[^;]*?from\s*["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === "node_modules" || entry.name === "dist" || entry.name === "build") return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|tsx)$/.test(entry.name) ? [path] : [];
  });
}

export function layerViolations(): string[] {
  const violations: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = relative(SRC, file).split("/")[0]!;
    const allowed = ALLOWED[from];
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2]!;
      const target = relative(SRC, resolve(dirname(file), specifier));
      if (target.startsWith("..")) {
        violations.push(`${relative(SRC, file)} imports ${specifier}, outside src/`);
        continue;
      }
      const to = target.split("/")[0]!;
      // A migration is frozen when it ships: it may use its siblings and types, never live code.
      const typeOnly = /^\s*(?:import|export)\s+type\s/.test(match[0]);
      if (
        relative(SRC, file).startsWith("store/migrations/") &&
        !target.startsWith("store/migrations/") &&
        !typeOnly
      )
        violations.push(`src/${relative(SRC, file)} runs live code: ${specifier}`);
      if (to === from) continue;
      if (!allowed) violations.push(`${relative(SRC, file)} is in no layer (src/${from}): move it into one`);
      else if (!allowed.includes(to))
        violations.push(`src/${relative(SRC, file)} (${from}) imports ${to}: ${specifier}`);
    }
  }
  return violations;
}

test("every import of src/ points down the layers of docs/architecture.md", () => {
  assert.deepEqual(layerViolations(), []);
});

test("the rule catches an import that points up", () => {
  assert.match("src/store/x.ts (store) imports api: ../api/app.ts", /imports api/);
  assert.ok(!ALLOWED.core!.length, "core imports nothing of the project");
  assert.ok(!ALLOWED.store!.includes("results"), "store never imports the read side");
  assert.ok(!ALLOWED.results!.includes("discovery") && !ALLOWED.results!.includes("runs"));
  assert.ok(!ALLOWED.discovery!.includes("runs") && !ALLOWED.discovery!.includes("api"));
});
