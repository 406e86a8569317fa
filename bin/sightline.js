#!/usr/bin/env node
// The `sightline` command. npm puts node_modules/.bin first on PATH, so this runs on the pinned Node 24
// where npm has a build for the platform, else on the machine's Node, which must be new enough: checked
// here, in plain JavaScript, before any TypeScript is loaded (an old Node could not even read it).
import { requireNode } from "./check-node.js";

requireNode();
await import("../src/cli/main.ts");
