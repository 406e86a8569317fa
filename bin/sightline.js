#!/usr/bin/env node
// The `sightline` command. npm puts node_modules/.bin first on PATH, so this runs on the pinned Node 24.
import "../src/cli/main.ts";
