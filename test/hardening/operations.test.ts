/**
 * Operating the service: /metrics in the Prometheus text format (with a registry other parts add to, and
 * an optional token), request ids echoed, and a graceful shutdown that answers the request in flight.
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { MetricsRegistry } from "../../src/app/metrics.ts";
import { sample } from "../helpers/metrics.ts";
import { spawnSightline } from "../helpers/processes.ts";
import { BOOTSTRAP_KEYS, startTestServer, type TestServer } from "../helpers/server.ts";
import { createTestStore } from "../helpers/stores.ts";

describe("metrics registry", () => {
  test("renders counters, gauges and histograms in the text format, escaping label values", async () => {
    const metrics = new MetricsRegistry();
    const tasks = metrics.counter("sightline_tasks_total", "Tasks done,\nby module.", ["module"]);
    tasks.inc({ module: "dns" });
    tasks.inc({ module: "dns" }, 2);
    tasks.inc({ module: 'we"ird\\' });
    metrics.gauge(
      "sightline_runs",
      "Runs by state.",
      () => [
        { labels: { state: "queued" }, value: 2 },
        { labels: { state: "started" }, value: 1 },
      ],
      ["state"],
    );
    metrics.gauge("sightline_queue_depth", "Tasks waiting.", async () => 7);
    const latency = metrics.histogram("sightline_latency_seconds", "Latency.", [0.1, 1], ["route"]);
    latency.observe({ route: "/a" }, 0.05);
    latency.observe({ route: "/a" }, 0.5);
    latency.observe({ route: "/a" }, 5);
    const text = await metrics.render();
    assert.match(text, /^# HELP sightline_tasks_total Tasks done,\\nby module\.$/m);
    assert.match(text, /^# TYPE sightline_tasks_total counter$/m);
    assert.equal(sample(text, 'sightline_tasks_total{module="dns"}'), 3);
    assert.equal(sample(text, 'sightline_tasks_total{module="we\\"ird\\\\"}'), 1);
    assert.equal(sample(text, 'sightline_runs{state="queued"}'), 2);
    assert.equal(sample(text, "sightline_queue_depth"), 7);
    assert.equal(sample(text, 'sightline_latency_seconds_bucket{le="0.1",route="/a"}'), 1);
    assert.equal(sample(text, 'sightline_latency_seconds_bucket{le="1",route="/a"}'), 2);
    assert.equal(sample(text, 'sightline_latency_seconds_bucket{le="+Inf",route="/a"}'), 3);
    assert.equal(sample(text, 'sightline_latency_seconds_count{route="/a"}'), 3);
    assert.equal(sample(text, 'sightline_latency_seconds_sum{route="/a"}'), 5.55);
  });

  test("refuses bad and duplicate names and undeclared labels; a failing gauge has no value in that scrape only", async () => {
    const metrics = new MetricsRegistry();
    assert.throws(() => metrics.counter("bad-name", "x"), /not a valid Prometheus name/);
    metrics.gauge("ok_gauge", "Fine.", () => 1);
    assert.throws(() => metrics.gauge("ok_gauge", "Again.", () => 2), /registered twice/);
    const failures: string[] = [];
    metrics.onCollectError = (name) => failures.push(name);
    metrics.gauge("broken_gauge", "Throws.", () => {
      throw new Error("store down");
    });
    const text = await metrics.render();
    assert.equal(sample(text, "ok_gauge"), 1);
    assert.ok(Number.isNaN(sample(text, "broken_gauge")), "NaN: no value this scrape");
    assert.deepEqual(failures, ["broken_gauge"]);
    const counter = metrics.counter("labelled_total", "Labelled.", ["module"]);
    assert.throws(() => counter.inc({ other: "x" }), /not included in initial labelset/);
  });
});

describe("GET /metrics", () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer("sqlite");
  });
  after(async () => t?.close());

  test("requests by method, route template and status, latency, auth failures, registered gauges", async () => {
    await t.request("GET", "/api/collections");
    await t.request("GET", "/api/collections/a-private-name");
    await t.request("GET", "/api/collections", { keys: null });
    t.server.app.metrics.gauge("sightline_test_queue_depth", "Registered by another part.", () => 4);
    const response = await fetch(`${t.url}/metrics`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    assert.ok(
      (sample(text, 'sightline_http_requests_total{method="GET",route="/api/collections",status="200"}') ??
        0) >= 1,
    );
    assert.equal(
      sample(
        text,
        'sightline_http_requests_total{method="GET",route="/api/collections/:collection_name",status="404"}',
      ),
      1,
    );
    assert.doesNotMatch(text, /a-private-name/, "raw paths (customer names) never become labels");
    assert.ok(
      (sample(text, 'sightline_http_request_duration_seconds_count{method="GET",route="/api/collections"}') ??
        0) >= 2,
    );
    assert.equal(sample(text, 'sightline_auth_failures_total{outcome="unauthorized"}'), 1);
    assert.equal(sample(text, "sightline_test_queue_depth"), 4);
    assert.ok((sample(text, "process_resident_memory_bytes") ?? 0) > 0);
  });
});

describe("GET /metrics with a token", () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer("sqlite", { metricsToken: "scrape-token-123" });
  });
  after(async () => t?.close());

  test("asks for the bearer token, and takes the right one", async () => {
    const none = await t.request("GET", "/metrics", { keys: null });
    assert.equal(none.status, 401);
    assert.equal(none.body.error.code, "unauthorized");
    assert.match(none.body.message, /Bearer/);
    const wrong = await t.request("GET", "/metrics", {
      keys: null,
      headers: { authorization: "Bearer nope" },
    });
    assert.equal(wrong.status, 401);
    const right = await t.request("GET", "/metrics", {
      keys: null,
      headers: { authorization: "Bearer scrape-token-123" },
    });
    assert.equal(right.status, 200);
    assert.match(right.text, /sightline_http_requests_total/);
  });
});

describe("graceful shutdown", () => {
  test("a request in flight when SIGTERM arrives still gets its answer; then the server exits 0", async () => {
    const store = await createTestStore("sqlite");
    const server = spawnSightline(["serve"], {
      SIGHTLINE_DATA_DIR: store.config.dataDir,
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "debug",
      SIGHTLINE_BOOTSTRAP_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
      SIGHTLINE_BOOTSTRAP_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
    });
    try {
      const url = new URL(
        /listening on (http:\/\/\S+)/.exec(await server.waitForLine(/listening on http/))![1],
      );
      const body = JSON.stringify({ name: "slow-upload", seeds: [{ type: "Domain", name: "slow.example" }] });
      const half = Math.floor(body.length / 2);

      // A slow client: headers and half the body now, the rest after the signal.
      const answer = new Promise<{ status: number; text: string; requestId: string }>((resolve, reject) => {
        const request = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            method: "POST",
            path: "/api/collections",
            headers: {
              SERVICE_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
              SERVICE_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
              "content-type": "application/json",
              "content-length": Buffer.byteLength(body),
              "x-request-id": "in-flight-1",
            },
            agent: false,
          },
          (response) => {
            let text = "";
            response.on("data", (chunk) => {
              text += chunk;
            });
            response.on("end", () =>
              resolve({
                status: response.statusCode ?? 0,
                text,
                requestId: String(response.headers["x-request-id"]),
              }),
            );
          },
        );
        request.on("error", reject);
        request.write(body.slice(0, half));
        server
          .waitForLine(/"reqId":"in-flight-1".*incoming request/)
          .then(async () => {
            server.child.kill("SIGTERM");
            await server.waitForLine(/SIGTERM received/);
            request.end(body.slice(half));
          })
          .catch(reject);
      });

      const response = await answer;
      assert.equal(response.status, 200, response.text);
      assert.equal(JSON.parse(response.text).result.name, "slow-upload");
      assert.equal(response.requestId, "in-flight-1");
      assert.equal(await server.exited, 0, server.output());
      // Every log line of the server is structured JSON (the operator's announcements aside).
      const logLines = server
        .output()
        .split("\n")
        .filter((line) => line.startsWith("{"));
      assert.ok(logLines.length > 0);
      for (const line of logLines) JSON.parse(line);
    } finally {
      if (server.child.exitCode === null) server.child.kill("SIGKILL");
      await store.drop();
    }
  });
});
