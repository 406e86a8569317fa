#!/usr/bin/env node
// The `sightline` command. npm puts node_modules/.bin first on PATH, so this runs on the pinned Node 24
// where npm has a build for the platform, else on the machine's Node, which must be new enough: checked
// here, in plain JavaScript, before any TypeScript is loaded (an old Node could not even read it).
import { requireNode } from "./check-node.js";

// --max-semi-space-size=4 (given here, in package.json's scripts and in the Dockerfile; NODE_OPTIONS takes
// it too): V8 sizes the young generation from the machine's memory, 64 MB of new space on a 24 GB machine,
// and a server's short-lived garbage then fills all of it between collections, hundreds of MB more RSS
// at a large run for the same speed. V8 reads it only at start, and a plain `#!/usr/bin/env node` is the
// only shebang every `env` runs (BusyBox's has no -S), so a process started without it becomes, in
// place (same PID, same signals), one started with it.
const YOUNG_GENERATION = "--max-semi-space-size=4";
requireNode();
const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)].some((flag) =>
  flag.startsWith("--max-semi-space-size"),
);
if (!given && typeof process.execve === "function")
  process.execve(
    process.execPath,
    [process.execPath, YOUNG_GENERATION, ...process.execArgv, ...process.argv.slice(1)],
    process.env,
  );
await import("../src/cli/main.ts");
