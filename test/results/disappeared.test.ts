/**
 * A run whose results collapse says so: the overview, `sightline results … overview` and the
 * run.finished webhook count what disappeared since the previous run, with a sentence when most of it is
 * gone (as when a worker without the scan allow list once replaced 24 applications with none).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { RunInfo, RunWork, TaskSpec } from "../../src/core/run-work.ts";
import type { StagedEntity } from "../../src/store/entities.ts";
import type { Services } from "../../src/store/services.ts";
import { runClientCommand } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { waitFor, waitForRun } from "../runs/helpers.ts";

/** Finds `hosts[run]` addresses (default 30): enough for a collapse to be told from churn. */
class ShrinkingWork implements RunWork {
  readonly hosts: number[] = [30, 30, 3];
  #runs = 0;
  readonly #services: Services;
  constructor(services: Services) {
    this.#services = services;
  }
  async plan(): Promise<TaskSpec[]> {
    return [{ key: "all", kind: "all", payload: this.hosts[this.#runs++] ?? 30, depth: 0 }];
  }
  async execute(task: { payload: unknown }, run: RunInfo): Promise<TaskSpec[]> {
    const entities = Array.from(
      { length: task.payload as number },
      (_, i): StagedEntity => ({
        kind: "IpAddress",
        name: `192.0.2.${i + 1}`,
        details: {},
        scoped: true,
        hidden: false,
        depth: 0,
        aliases: [],
        ancestors: [],
      }),
    );
    await this.#services.entities.stage(run.id, run.collectionId, { entities, findings: [], notes: [] });
    return [];
  }
  async finish(run: RunInfo): Promise<void> {
    await this.#services.entities.finishRun(run.id, run.collectionId);
  }
}

describe("what disappeared since the previous run", () => {
  let t: TestServer;
  let receiver: Server;
  let home: string;
  const received: Array<Record<string, unknown>> = [];

  before(async () => {
    receiver = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        received.push(JSON.parse(body));
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.123.0.77", resolve));
    home = mkdtempSync(join(tmpdir(), "sightline-gone-"));
    t = await startTestServer(
      "sqlite",
      { schedulerIntervalSeconds: 3600, webhookAllow: ["127.123.0.0/16"], webhookRetryMs: 100 },
      { runWork: (services) => new ShrinkingWork(services) },
    );
    await t.request("POST", "/api/collections", {
      body: { name: "shrink", scan_rate: "on_demand", seeds: [{ type: "Domain", name: "shrink.example" }] },
    });
    const { port } = receiver.address() as { port: number };
    const hook = await t.request("POST", "/api/collections/shrink/webhooks", {
      body: { url: `http://127.123.0.77:${port}/hook`, events: ["run.finished"] },
    });
    assert.equal(hook.status, 200, hook.text);
  });
  after(async () => {
    await t?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    if (home) rmSync(home, { recursive: true, force: true });
  });

  async function runOnce(): Promise<number> {
    const id = Number((await t.request("POST", "/api/collections/shrink/schedule")).body.result.id);
    assert.equal((await waitForRun(t, "shrink", id, "finished", "failed")).status, "finished");
    return id;
  }

  test("an unchanged run: nothing gone, no note", async () => {
    await runOnce();
    await runOnce();
    const overview = (await t.request("GET", "/api/collections/shrink/overview")).body.result;
    assert.deepEqual(overview.disappeared_since_previous_run, { entities: 0, issues: 0 });
    assert.equal(overview.change_note, null);
    await waitFor(() => received.length === 2, "two run.finished events");
    assert.deepEqual(received[1]!.disappeared_since_previous_run, { entities: 0, issues: 0 });
    assert.equal(received[1]!.change_note, null);
  });

  test("a run that lost most of what the previous one saw counts it and says so", async () => {
    const id = await runOnce();
    const overview = (await t.request("GET", "/api/collections/shrink/overview")).body.result;
    assert.deepEqual(overview.disappeared_since_previous_run, { entities: 27, issues: 0 });
    assert.match(
      overview.change_note,
      new RegExp(`^Run ${id} did not see 27 of the 30 entities run ${id - 1} saw \\(90%\\)\\.`),
    );
    await waitFor(() => received.length === 3, "the third run.finished event");
    assert.deepEqual(received[2]!.disappeared_since_previous_run, { entities: 27, issues: 0 });
    assert.equal(received[2]!.change_note, overview.change_note);

    const cli = await runClientCommand(t, home, ["results", "shrink", "overview"]);
    assert.equal(cli.code, 0, cli.output);
    assert.match(cli.output, new RegExp(`^Gone since run ${id - 1}: 27 entities, 0 issues$`, "m"));
    assert.match(cli.output, /^Note: Run \d+ did not see 27 of the 30 entities/m);
  });
});
