/**
 * One run through the real server against every hostile target at once: it finishes (within a limit
 * that only proves nothing hangs), the process's memory stays bounded, the caps say so in the run's
 * notes, and what the targets are is still recorded.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { MiB, measure } from "../helpers/bounds.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { HOSTILE_NAMES, HOSTILE_ZONE, type HostileLab, SMALL_CAPS, startHostileLab } from "../lab/hostile.ts";
import { waitFor } from "../runs/helpers.ts";

const DEPTH = 3;

let lab: HostileLab;
let t: TestServer;
before(async () => {
  lab = await startHostileLab();
  t = await startTestServer("sqlite", {
    dnsServers: [lab.resolver],
    scanAllow: [lab.block],
    // The web, TLS and banner targets, and the services the exposure checks meet (SNMP is found over UDP).
    ports: "21,22,80,389,443,1883,6379,8080,11211",
    depth: DEPTH,
    // Many targets wait out a time bound at once; more tasks in flight keep the run short.
    taskConcurrency: 32,
    // Long enough for every lab answer to arrive on a busy machine; the trickling servers are cut at it.
    timeoutMs: 1500,
    ...SMALL_CAPS,
  });
});
after(async () => {
  await t?.close();
  await lab?.stop();
});

test("a run over every hostile target finishes with bounded memory and says where it cut", async () => {
  const seeds = [
    { type: "Domain", name: HOSTILE_ZONE },
    ...Object.values(lab.targets).map((target) => ({ type: "DnsRecord", name: target.name })),
    ...Object.values(HOSTILE_NAMES).map((name) => ({ type: "DnsRecord", name })),
  ];
  const created = await t.request("POST", "/api/collections", { body: { name: "hostile", seeds } });
  assert.equal(created.status, 200, created.text);

  const { value: run, peakGrowth } = await measure(async () => {
    const forced = await t.request("POST", "/api/collections/hostile/schedule");
    const id = Number(forced.body.result.id);
    return waitFor(
      async () => {
        const { body } = await t.request("GET", `/api/collections/hostile/runs/${id}`);
        return ["finished", "failed", "cancelled"].includes(body.result.status) ? body.result : undefined;
      },
      "the hostile run to end",
      90_000,
      200,
    );
  });
  assert.equal(run.status, "finished", run.error);
  // Looser than the single-target bound: a whole run also holds the store, the queue and the API.
  assert.ok(peakGrowth < 192 * MiB, `memory grew by ${(peakGrowth / MiB).toFixed(1)} MiB`);

  const notes = await t.server.services.entities.notes(run.id);
  for (const cap of ["SIGHTLINE_DNS_MAX_RECORDS", "SIGHTLINE_AXFR_MAX_RECORDS", "SIGHTLINE_TLS_MAX_NAMES"])
    assert.ok(
      notes.some((note) => note.includes(cap)),
      `a note names ${cap}: ${JSON.stringify(notes)}`,
    );

  const hosts = (await t.request("GET", "/api/collections/hostile/hosts")).body.result;
  for (const target of Object.values(lab.targets)) {
    const ports = (hosts[target.ip]?.ports ?? []).map((port: { number: string }) => Number(port.number));
    assert.ok(ports.includes(target.port), `${target.name} is recorded with port ${target.port}`);
  }

  const domains = (await t.request("GET", "/api/collections/hostile/domains")).body.result as Array<{
    name: string;
  }>;
  const chain = domains
    .map((domain) => /^chain-(\d+)\.hostile\.test$/.exec(domain.name)?.[1])
    .filter((step) => step !== undefined)
    .map(Number);
  assert.ok(chain.length > 0, "the CNAME chain was followed");
  assert.ok(Math.max(...chain) <= DEPTH, `the chain stops at the depth limit: ${chain}`);
});
