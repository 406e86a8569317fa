/**
 * The embedded default's server loads no client of a service it does not use: BullMQ, ioredis and pg
 * stay out of its heap (every full collection marks what is loaded, so an unused client costs every pause).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { spawnSightline } from "../helpers/processes.ts";

const REPORT_LOADS = fileURLToPath(new URL("../helpers/report-loads.ts", import.meta.url));

test("serve without DATABASE_URL and REDIS_URL never loads pg, BullMQ or ioredis", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "sightline-loads-"));
  const server = spawnSightline(["serve"], {
    SIGHTLINE_DATA_DIR: dataDir,
    HOST: "127.123.255.3",
    PORT: "0",
    NODE_OPTIONS: `--import ${REPORT_LOADS}`,
  });
  try {
    const line = await server.waitForLine(/listening on/, 30_000);
    const url = /listening on (http:\/\/\S+) /.exec(line)?.[1];
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    const loaded = new Set([...server.output().matchAll(/^loads (\S+)$/gm)].map((match) => match[1]));
    // The report works: packages the server does use are in it.
    assert.ok(loaded.has("kysely") && loaded.has("fastify"), `loads reported: ${[...loaded].join(", ")}`);
    for (const client of ["pg", "bullmq", "ioredis"]) assert.ok(!loaded.has(client), `${client} was loaded`);
  } finally {
    await server.stop(5000);
    rmSync(dataDir, { recursive: true, force: true });
  }
});
