/**
 * What `sightline serve` and `sightline worker` print: one banner with the URL to open (no line per
 * interface), no request lines at info, and the worker's log lines in the server's JSON format.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { spawnSightline } from "../helpers/processes.ts";

test("serve prints one banner with the URL to open; requests are logged only at debug", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "sightline-banner-"));
  const server = spawnSightline(["serve"], {
    SIGHTLINE_DATA_DIR: dataDir,
    HOST: "127.123.255.2",
    PORT: "0",
    LOG_LEVEL: "info",
  });
  try {
    const line = await server.waitForLine(/listening on/, 30_000);
    const url = /listening on (http:\/\/\S+) /.exec(line)?.[1];
    assert.match(line, /^Sightline is listening on http:\/\/127\.123\.255\.2:\d+ — open it in a browser/);
    for (let i = 0; i < 3; i++) assert.equal((await fetch(`${url}/healthz`)).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const output = server.output();
    assert.doesNotMatch(output, /Server listening at/, "Fastify's per-interface lines are not printed");
    assert.doesNotMatch(output, /incoming request|request completed/, "no request lines at info");
  } finally {
    await server.stop(5000);
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test("the default HOST is loopback", async () => {
  const { loadConfig } = await import("../../src/core/config.ts");
  assert.equal(loadConfig({}).host, "127.0.0.1");
  assert.equal(loadConfig({ HOST: "0.0.0.0" }).host, "0.0.0.0");
});

test("a worker logs in the server's format: pino JSON lines", async () => {
  const { execFileSync } = await import("node:child_process");
  const worker = new URL("../../src/app/worker.ts", import.meta.url).href;
  const output = execFileSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `import { consoleLog } from ${JSON.stringify(worker)}; consoleLog("info").warn("run 7 failed: why");`,
    ],
    { encoding: "utf8" },
  );
  const line = JSON.parse(output.trim().split("\n").at(-1)!);
  assert.equal(line.level, 40);
  assert.equal(line.msg, "run 7 failed: why");
  assert.match(line.worker, /:\d+$/);
});
