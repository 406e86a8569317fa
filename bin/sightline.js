#!/usr/bin/env -S node --max-semi-space-size=4
// The `sightline` command. npm puts node_modules/.bin first on PATH, so this runs on the pinned Node 24
// where npm has a build for the platform, else on the machine's Node, which must be new enough: checked
// here, in plain JavaScript, before any TypeScript is loaded (an old Node could not even read it).
import { requireNode } from "./check-node.js";

// --max-semi-space-size=4 (here, in package.json's scripts and in the Dockerfile; NODE_OPTIONS takes it
// too): V8 sizes the young generation from the machine's memory, 64 MB of new space on a 24 GB machine,
// and a server's short-lived garbage then fills all of it between collections. 4 MB semi-spaces took a
// /20 run's peak RSS from 803 to 571 MB at the same speed (with the discovery thread's own limit,
// src/discovery/module-thread.ts; docs/scale.md). It cannot be set from here: V8 reads it at start.
requireNode();
await import("../src/cli/main.ts");
