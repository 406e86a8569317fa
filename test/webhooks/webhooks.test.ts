/**
 * Webhooks end to end with real receiving HTTP servers on loopback: registration and its URL checks,
 * signed run.finished / issues.new / run.failed events, retries with back-off and the delivery log, a
 * slow receiver that does not hold up runs, and deliveries that survive a restart.
 */
import assert from "node:assert/strict";
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Webhook as StandardWebhook } from "standardwebhooks";
import type { RunInfo, RunWork, TaskRecord, TaskSpec } from "../../src/core/run-work.ts";
import type { Finding } from "../../src/store/entities.ts";
import type { Services } from "../../src/store/services.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { waitFor } from "../runs/helpers.ts";

interface Received {
  headers: IncomingMessage["headers"];
  body: string;
}

/** A webhook receiver: answers with `status()` (or holds the request while `hold` is set). */
class Receiver {
  readonly received: Received[] = [];
  readonly held: ServerResponse[] = [];
  status: () => number = () => 200;
  hold = false;
  server: Server;
  port = 0;

  constructor() {
    this.server = createServer((request, response) => {
      const parts: Buffer[] = [];
      request.on("data", (part) => parts.push(part));
      request.on("end", () => {
        this.received.push({ headers: request.headers, body: Buffer.concat(parts).toString("utf8") });
        if (this.hold) this.held.push(response);
        else response.writeHead(this.status()).end("ok");
      });
    });
  }

  async listen(port = 0): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(port, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url() {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  of(event: string) {
    return this.received.filter((r) => r.headers["x-sightline-event"] === event);
  }

  async close() {
    for (const response of this.held.splice(0)) response.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** A run's work for these tests: one task that raises the issues set for the next run, or fails. */
class IssueWork implements RunWork {
  issues: Array<{ name: string; severity: number }> = [];
  fail = false;
  readonly #services: Services;
  constructor(services: Services) {
    this.#services = services;
  }
  async plan(): Promise<TaskSpec[]> {
    return [{ key: "scan", kind: "scan", payload: null, depth: 0 }];
  }
  async execute(_task: TaskRecord, run: RunInfo): Promise<TaskSpec[]> {
    if (this.fail) throw new Error("the scanner broke");
    const findings: Finding[] = this.issues.map(({ name, severity }) => ({
      name,
      entityKind: "Domain",
      entityName: "acme.test",
      prettyName: name.replaceAll("_", " "),
      severity,
      confidence: "confirmed",
      category: "dns",
      description: `${name} on acme.test`,
      remediation: "Fix it.",
      references: [],
      details: {},
      scoped: true,
    }));
    await this.#services.entities.stage(run.id, run.collectionId, {
      entities: [
        {
          kind: "Domain",
          name: "acme.test",
          details: {},
          scoped: true,
          hidden: false,
          depth: 0,
          aliases: [],
          ancestors: [],
        },
      ],
      findings,
      notes: [],
    });
    return [];
  }
  async finish(run: RunInfo): Promise<void> {
    await this.#services.entities.finishRun(run.id, run.collectionId);
  }
}

const verify = (secret: string, received: Received) => {
  const timestamp = String(received.headers["x-sightline-timestamp"]);
  const expected = `sha256=${createHmac("sha256", secret).update(`${timestamp}.${received.body}`).digest("hex")}`;
  const given = String(received.headers["x-sightline-signature"]);
  return given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
};

describe("webhooks", () => {
  let t: TestServer;
  let work: IssueWork;
  let good: Receiver;
  let flaky: Receiver;
  let down: Receiver;

  before(async () => {
    t = await startTestServer(
      "sqlite",
      {
        schedulerIntervalSeconds: 3600,
        taskAttempts: 1,
        webhookAllow: ["127.0.0.0/8"],
        webhookRetryMs: 100,
        webhookAttempts: 3,
        webhookTimeoutMs: 60_000,
      },
      {
        runWork: (services) => {
          work = new IssueWork(services);
          return work;
        },
      },
    );
    good = await new Receiver().listen();
    flaky = await new Receiver().listen();
    down = await new Receiver().listen();
    for (const name of ["acme", "slow"]) {
      const created = await t.request("POST", "/api/collections", {
        body: { name, seeds: [{ type: "Domain", name: "acme.test" }] },
      });
      assert.equal(created.status, 200, created.text);
    }
  });
  after(async () => {
    await t?.close();
    await Promise.all([good, flaky, down].map((receiver) => receiver?.close()));
  });

  async function runTo(collection: string, status: string): Promise<number> {
    const forced = await t.request("POST", `/api/collections/${collection}/schedule`);
    const id = Number(forced.body.result.id);
    await waitFor(async () => {
      const run = (await t.request("GET", `/api/collections/${collection}/runs/${id}`)).body.result;
      return run.status === status;
    }, `run ${id} ${status}`);
    return id;
  }

  const register = (collection: string, body: unknown) =>
    t.request("POST", `/api/collections/${collection}/webhooks`, { body });

  test("registration: the secret is shown once; URLs that could reach the server's own network are refused", async () => {
    const created = await register("acme", { url: good.url, severity_threshold: 2 });
    assert.equal(created.status, 200, created.text);
    const hook = created.body.result;
    assert.match(hook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(hook.events, ["run.finished", "run.failed", "issues.new"]);
    assert.equal(hook.severity_threshold, 2);
    const listed = (await t.request("GET", "/api/collections/acme/webhooks")).body.result;
    assert.equal(listed.length, 1);
    assert.equal(listed[0].id, hook.id);
    assert.equal(listed[0].secret, undefined, "never listed again");

    for (const [url, reason] of [
      ["ftp://127.0.0.1/x", /only http:\/\/ and https:\/\//],
      ["http://169.254.169.254/latest/meta-data", /metadata or reserved address/],
      ["http://10.1.2.3/hook", /private/],
      ["http://[fd00:ec2::254]/", /metadata or reserved/],
      ["http://localhost:9/hook", /names the server itself/],
      ["http://user:pw@127.0.0.1/hook", /user name or password/],
      ["not a url", /not an absolute URL/],
    ] as const) {
      const refused = await register("acme", { url });
      assert.equal(refused.status, 400, url);
      assert.match(refused.body.message, reason, url);
      assert.equal(refused.body.error.details[0].field, "url");
    }
    const badEvent = await register("acme", { url: good.url, events: ["run.exploded"] });
    assert.equal(badEvent.status, 400);
    const badThreshold = await register("acme", { url: good.url, severity_threshold: 9 });
    assert.equal(badThreshold.status, 400);
    const hidden = await t.request("GET", "/api/collections/nope/webhooks");
    assert.equal(hidden.status, 404);
  });

  test("a finished run sends signed run.finished and issues.new (only severities within the threshold)", async () => {
    const secret = (await register("acme", { url: flaky.url, events: ["issues.new"], severity_threshold: 3 }))
      .body.result.secret;
    const goodHook = (await t.request("GET", "/api/collections/acme/webhooks")).body.result[0];
    flaky.status = () => (flaky.received.length <= 2 ? 503 : 204);
    work.issues = [
      { name: "open_zone_transfer", severity: 1 },
      { name: "missing_dmarc", severity: 3 },
      { name: "missing_caa", severity: 5 },
    ];
    const runId = await runTo("acme", "finished");

    const finished = await waitFor(() => good.of("run.finished")[0], "run.finished at the good receiver");
    const body = JSON.parse(finished.body);
    assert.equal(body.type, "run.finished");
    assert.equal(body.collection, "acme");
    assert.equal(body.run.id, runId);
    assert.equal(body.run.status, "finished");
    assert.match(body.created_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
    assert.deepEqual(body.new_since_previous_run, { entities: 1, issues: 3 });
    assert.equal(finished.headers["content-type"], "application/json");
    assert.ok(Math.abs(Number(finished.headers["x-sightline-timestamp"]) - Date.now() / 1000) < 60);

    const issues = await waitFor(() => good.of("issues.new")[0], "issues.new at the good receiver");
    const goodSecret = (
      await t.server.services.store.db
        .selectFrom("webhooks")
        .select("secret")
        .where("id", "=", goodHook.id)
        .executeTakeFirstOrThrow()
    ).secret;
    assert.ok(
      verify(goodSecret, finished) && verify(goodSecret, issues),
      "signatures verify with the secret",
    );
    const tampered = { ...issues, body: issues.body.replace("open_zone_transfer", "open_zone_transfeR") };
    assert.ok(!verify(secret, issues), "and not with another webhook's secret");
    // The Standard Webhooks headers verify with that spec's published library, given the secret as shown.
    const standard = (message: Received) => ({
      "webhook-id": String(message.headers["webhook-id"]),
      "webhook-timestamp": String(message.headers["webhook-timestamp"]),
      "webhook-signature": String(message.headers["webhook-signature"]),
    });
    assert.match(String(finished.headers["webhook-signature"]), /^v1,[A-Za-z0-9+/]+=*$/);
    assert.equal(finished.headers["webhook-timestamp"], finished.headers["x-sightline-timestamp"]);
    assert.notEqual(finished.headers["webhook-id"], issues.headers["webhook-id"], "one id per message");
    for (const message of [finished, issues])
      assert.deepEqual(
        new StandardWebhook(goodSecret).verify(message.body, standard(message)),
        JSON.parse(message.body),
      );
    assert.throws(() => new StandardWebhook(secret).verify(issues.body, standard(issues)), /signature/i);
    assert.throws(
      () => new StandardWebhook(goodSecret).verify(tampered.body, standard(issues)),
      /signature/i,
    );
    assert.ok(!verify(goodSecret, tampered), "a changed body does not verify");
    const goodIssues = JSON.parse(issues.body);
    assert.deepEqual(
      goodIssues.issues.map((i: { name: string; severity: string }) => [i.name, i.severity]),
      [["open_zone_transfer", "0.1e1"]],
      "threshold 2: only the critical one",
    );
    assert.equal(goodIssues.count, 1);

    // The flaky receiver answered 503 twice: the third attempt, after back-off, is delivered.
    const flakyIssues = await waitFor(
      () => (flaky.received.length >= 3 ? flaky.received : undefined),
      "three attempts",
    );
    assert.equal(flakyIssues.length, 3);
    assert.ok(
      flakyIssues.every((r) => r.body === flakyIssues[0].body),
      "the same body each time",
    );
    assert.ok(
      flakyIssues.every((r) => verify(secret, r)),
      "re-signed each time",
    );
    assert.ok(
      flakyIssues.every((r) => r.headers["webhook-id"] === flakyIssues[0].headers["webhook-id"]),
      "one webhook-id for every attempt of a message (receivers de-duplicate on it)",
    );
    assert.ok(
      flakyIssues.every((r) =>
        new StandardWebhook(secret).verify(r.body, {
          "webhook-id": String(r.headers["webhook-id"]),
          "webhook-timestamp": String(r.headers["webhook-timestamp"]),
          "webhook-signature": String(r.headers["webhook-signature"]),
        }),
      ),
    );
    assert.deepEqual(
      JSON.parse(flakyIssues[0].body).issues.map((i: { name: string }) => i.name),
      ["open_zone_transfer", "missing_dmarc"],
      "threshold 3",
    );
    const flakyHook = (await t.request("GET", "/api/collections/acme/webhooks")).body.result[1];
    const log = await waitFor(async () => {
      const deliveries = (await t.request("GET", `/api/collections/acme/webhooks/${flakyHook.id}/deliveries`))
        .body.result;
      return deliveries[0]?.status === "delivered" && deliveries;
    }, "the delivery log to say delivered");
    assert.equal(log.length, 1);
    assert.equal(log[0].event, "issues.new");
    assert.equal(log[0].run_id, runId);
    assert.equal(log[0].attempts, 3);
    assert.deepEqual(
      log[0].attempt_log.map((a: { response_status: number }) => a.response_status),
      [503, 503, 204],
    );
    assert.match(log[0].attempt_log[0].error, /HTTP 503/);
    const gaps = log[0].attempt_log.map((a: { attempted_at: string }) => a.attempted_at);
    assert.ok(gaps[0] <= gaps[1] && gaps[1] <= gaps[2], "attempts in order");

    // A second run with the same issues: nothing is new, so no issues.new.
    await runTo("acme", "finished");
    await waitFor(() => good.of("run.finished").length === 2, "the second run.finished");
    assert.deepEqual(JSON.parse(good.of("run.finished")[1].body).new_since_previous_run, {
      entities: 0,
      issues: 0,
    });
    assert.equal(good.of("issues.new").length, 1);
  });

  test("a receiver that keeps failing gets bounded retries, then the delivery is failed", async () => {
    down.status = () => 500;
    const hook = (await register("acme", { url: down.url, events: ["run.failed"] })).body.result;
    work.fail = true;
    const runId = await runTo("acme", "failed");
    work.fail = false;
    const failed = await waitFor(() => good.of("run.failed")[0], "run.failed at the good receiver");
    const body = JSON.parse(failed.body);
    assert.equal(body.run.id, runId);
    assert.match(body.reason, /the scanner broke/);
    const log = await waitFor(async () => {
      const deliveries = (await t.request("GET", `/api/collections/acme/webhooks/${hook.id}/deliveries`)).body
        .result;
      return deliveries[0]?.status === "failed" && deliveries;
    }, "the delivery to fail");
    assert.equal(log[0].attempts, 3, "SIGHTLINE_WEBHOOK_ATTEMPTS");
    assert.equal(down.received.length, 3);
    assert.equal(log[0].next_attempt_at, null);
    const deleted = await t.request("DELETE", `/api/collections/acme/webhooks/${hook.id}`);
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body.result, { id: hook.id, deleted: true });
    const gone = await t.request("GET", `/api/collections/acme/webhooks/${hook.id}/deliveries`);
    assert.equal(gone.status, 404);
  });

  test("a slow receiver does not delay runs; deliveries in flight survive a restart", async () => {
    const slow = await new Receiver().listen();
    slow.hold = true;
    try {
      const hook = (await register("slow", { url: slow.url, events: ["run.finished"] })).body.result;
      const first = await runTo("slow", "finished");
      await waitFor(() => slow.received.length === 1, "the first delivery to reach the slow receiver");
      const second = await runTo("slow", "finished");
      assert.ok(second > first);
      assert.equal(
        slow.held[0].writableEnded,
        false,
        "the second run finished while the first delivery hung",
      );

      // A restart aborts what is in flight; the new process sends it (and anything pending) again.
      slow.hold = false;
      await t.restart((services) => {
        work = new IssueWork(services);
        return work;
      });
      // (The new process's scheduler may start a run of its own; only these two runs are looked at.)
      const log = await waitFor(
        async () => {
          const deliveries = (
            await t.request("GET", `/api/collections/slow/webhooks/${hook.id}/deliveries`)
          ).body.result.filter((d: { run_id: number }) => d.run_id === first || d.run_id === second);
          const done =
            deliveries.length === 2 && deliveries.every((d: { status: string }) => d.status === "delivered");
          return done ? deliveries : undefined;
        },
        "both deliveries delivered after the restart",
        30_000,
      );
      assert.deepEqual(log.map((d: { run_id: number }) => d.run_id).sort(), [first, second].sort());
      const answered = slow
        .of("run.finished")
        .slice(1)
        .map((r) => JSON.parse(r.body).run.id);
      assert.ok(answered.includes(first), "the delivery that hung was sent again by the new process");
    } finally {
      await slow.close();
    }
  });
});
