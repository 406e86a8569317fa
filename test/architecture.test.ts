/**
 * The layers of src/ point one way (docs/architecture.md). This test reads every import of every source
 * file and fails on one that points up or sideways against the rules, naming the file and the import.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
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

/** The imports of the tree at `root` (src/ by default) that break the rules. */
export function layerViolations(root = SRC): string[] {
  const violations: string[] = [];
  for (const file of sourceFiles(root)) {
    const from = relative(root, file).split("/")[0]!;
    const allowed = ALLOWED[from];
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2]!;
      const target = relative(root, resolve(dirname(file), specifier));
      if (target.startsWith("..")) {
        violations.push(`${relative(root, file)} imports ${specifier}, outside src/`);
        continue;
      }
      const to = target.split("/")[0]!;
      // A migration is frozen when it ships: it may use its siblings and types, never live code.
      const typeOnly = /^\s*(?:import|export)\s+type\s/.test(match[0]);
      if (
        relative(root, file).startsWith("store/migrations/") &&
        !target.startsWith("store/migrations/") &&
        !typeOnly
      )
        violations.push(`src/${relative(root, file)} runs live code: ${specifier}`);
      if (to === from) continue;
      if (!allowed) violations.push(`${relative(root, file)} is in no layer (src/${from}): move it into one`);
      else if (!allowed.includes(to))
        violations.push(`src/${relative(root, file)} (${from}) imports ${to}: ${specifier}`);
    }
  }
  return violations;
}

test("every import of src/ points down the layers of docs/architecture.md", () => {
  assert.deepEqual(layerViolations(), []);
});

test("the rule catches an import that points up, a type-only one too, and a migration running live code", () => {
  const root = mkdtempSync(join(tmpdir(), "sightline-layers-"));
  try {
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    };
    write("core/kinds.ts", "export const KINDS = [];\n");
    write("api/app.ts", 'import { KINDS } from "../core/kinds.ts";\nexport const app = KINDS;\n');
    write("store/allowed.ts", 'import { KINDS } from "../core/kinds.ts";\nexport const k = KINDS;\n');
    write("store/upward.ts", 'import { app } from "../api/app.ts";\nexport const a = app;\n');
    write("results/typed.ts", 'import type { Run } from "../runs/run.ts";\nexport type R = Run;\n');
    write("runs/run.ts", "export interface Run { id: number }\n");
    write("store/migrations/001-x.ts", 'import { k } from "../allowed.ts";\nexport const m = k;\n');
    write(
      "store/migrations/002-y.ts",
      'import type { Run } from "../../runs/run.ts";\nexport type Y = Run;\n',
    );
    assert.deepEqual(layerViolations(root).sort(), [
      "src/results/typed.ts (results) imports runs: ../runs/run.ts",
      "src/store/migrations/001-x.ts runs live code: ../allowed.ts",
      "src/store/migrations/002-y.ts (store) imports runs: ../../runs/run.ts",
      "src/store/upward.ts (store) imports api: ../api/app.ts",
    ]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
