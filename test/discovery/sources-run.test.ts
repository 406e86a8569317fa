/**
 * Passive sources in a whole run against the lab: a collection seeded with `acme.test` whose two extra
 * names exist in the lab's DNS but are named only by the fake certificate log (crt.sh) and the fake
 * passive DNS (OTX). The run finds them, resolves them in the lab's DNS, scans them (their host's
 * port), keeps a name the log knows and DNS does not as historical, records an out-of-scope name
 * unscoped, and its status shows the source that failed (Anubis answering 500) beside those that worked.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { runSettingsFrom } from "../../src/core/run-settings.ts";
import { describeRunSources, sourcesHeadline } from "../../src/results/runs.ts";
import { RunSourcesRepository } from "../../src/store/run-sources.ts";
import { type DiscoveryFixture, discoveryFixture } from "../helpers/discovery.ts";
import { keyOf, type SourceFakes, startSourceFakes } from "../helpers/source-fakes.ts";
import { dialects } from "../helpers/stores.ts";
import { defaultWorld, startLab } from "../lab/index.ts";
import type { Lab, LabWorld } from "../lab/types.ts";

const CT_ONLY = "ct-k4q.acme.test";
const PDNS_ONLY = "pdns-z9w.acme.test";
const GONE = "retired-h2.acme.test";

/** The default world and one host whose two names nothing in DNS points at (no PTR, no wordlist word). */
function passiveWorld(base: string): LabWorld {
  const world = defaultWorld(base);
  return {
    ...world,
    hosts: [
      ...world.hosts,
      {
        ip: `${base}.6.10`,
        names: [CT_ONLY, PDNS_ONLY],
        ptr: null,
        services: [{ kind: "http", port: 80, server: "nginx/1.24.0", title: "Passive only" }],
      },
    ],
  };
}

for (const { dialect, skip } of await dialects()) {
  describe(`passive sources in a run on the lab, ${dialect}`, { skip }, () => {
    let lab: Lab;
    let fakes: SourceFakes;
    let fixture: DiscoveryFixture;

    before(async () => {
      lab = await startLab({ world: passiveWorld });
      fakes = await startSourceFakes(dialect === "sqlite" ? "127.0.0.63" : "127.0.0.64");
      fakes.broken.add("anubis");
      fixture = await discoveryFixture(dialect, [{ type: "Domain", name: "acme.test" }], {
        dnsServers: [lab.resolver],
        scanAllow: ["127.0.0.0/8"],
        ports: "80",
        udp: "off",
        exposureChecks: "off",
        timeoutMs: 1000,
        sources: ["crtsh", "otx", "anubis"],
        sourceCrtshUrl: fakes.url("crtsh"),
        sourceOtxUrl: fakes.url("otx"),
        sourceOtxKey: keyOf("otx"),
        sourceAnubisUrl: fakes.url("anubis"),
        sourceRequestsPerMinute: 6000,
        sourceRetries: 1,
        sourceTimeoutMs: 2000,
      });
    });
    after(async () => {
      await fixture?.close();
      await fakes?.close();
      await lab?.stop();
    });

    test("names only a certificate log and passive DNS know are found, resolved, scanned; the failed source shows", async () => {
      // The certificate log knows CT_ONLY and a retired name; passive DNS knows PDNS_ONLY.
      fakes.extra.set("crtsh acme.test", [CT_ONLY, GONE]);
      fakes.extra.set("otx acme.test", [PDNS_ONLY]);
      const { run, finished } = await fixture.run();
      assert.equal(finished, true);

      const names = await fixture.entities.current(fixture.collectionId, { kinds: ["DnsRecord", "Domain"] });
      const byName = new Map(names.map((entity) => [entity.name, entity]));
      for (const name of [CT_ONLY, PDNS_ONLY]) {
        const entity = byName.get(name);
        assert.ok(entity, `${name} was found`);
        assert.equal(entity.scoped, true);
      }
      assert.deepEqual(byName.get(CT_ONLY)!.details.sources, ["crtsh"]);

      // Resolved in the lab's DNS and scanned: the host's address, its port 80, its web page.
      const address = `${lab.truth.hosts.find((host) => host.names.includes(CT_ONLY))!.ip}`;
      const hosts = await fixture.entities.current(fixture.collectionId, {
        kinds: ["IpAddress", "NetworkService"],
      });
      assert.ok(
        hosts.some((entity) => entity.kind === "IpAddress" && entity.name === address),
        "its address",
      );
      assert.ok(
        hosts.some((entity) => entity.kind === "NetworkService" && entity.name === `${address}:80/tcp`),
        "its port was scanned",
      );

      // A name the log knows and DNS does not is history, not a host; one outside the scope is unscoped.
      assert.equal(byName.has(GONE), false, "no entity for a name that does not resolve");
      const seed = byName.get("acme.test")!;
      const historical = seed.details.historical_names as Array<{
        name: string;
        source: string;
        seen_at: string;
      }>;
      const retired = historical.find((entry) => entry.name === GONE);
      assert.ok(retired, "kept as a historical name");
      assert.equal(retired.source, "crtsh");
      assert.match(retired.seen_at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
      const outside = byName.get("cdn.partner.example");
      assert.ok(outside, "an out-of-scope name is recorded");
      assert.equal(outside.scoped, false);
      assert.equal(
        hosts.some((entity) => entity.name.startsWith("cdn.partner.example")),
        false,
        "and never explored",
      );

      // The run's status: crt.sh and OTX answered with names, Anubis failed with its HTTP status.
      const statuses = await new RunSourcesRepository(fixture.store.db).forRun(run.id);
      const described = describeRunSources(runSettingsFrom(fixture.config), statuses);
      const of = (id: string) => described.sources.find((source) => source.source === id)!;
      assert.equal(of("crtsh").status, "answered");
      assert.ok(of("crtsh").names >= 3 && of("crtsh").in_scope >= 2 && of("crtsh").historical >= 1);
      assert.ok(of("crtsh").new >= 1, "names no other module found count as new");
      assert.equal(of("otx").status, "answered");
      assert.equal(of("anubis").status, "failed");
      assert.equal(of("anubis").failure, "http 500 after 2 tries");
      assert.equal(of("virustotal").queried, false);
      assert.match(of("virustotal").reason!, /not chosen/);
      assert.equal(described.all_failed, false);
      assert.equal(sourcesHeadline(run.id, described).note, null);

      // The run's notes say the same, a line per source.
      const notes = await fixture.entities.notes(run.id);
      assert.ok(
        notes.some((note) => note.startsWith("anubis: FAILED (http 500 after 2 tries)")),
        notes.join("\n"),
      );
    });

    test("a run whose every source fails says so", async () => {
      fakes.broken.add("crtsh");
      fakes.broken.add("otx");
      try {
        const { run, finished } = await fixture.run();
        assert.equal(finished, true, "the run goes on without its sources");
        const statuses = await new RunSourcesRepository(fixture.store.db).forRun(run.id);
        const described = describeRunSources(runSettingsFrom(fixture.config), statuses);
        assert.equal(described.all_failed, true);
        assert.match(sourcesHeadline(run.id, described).note!, /Every passive source run \d+ asked failed/);
      } finally {
        fakes.broken.delete("crtsh");
        fakes.broken.delete("otx");
      }
    });
  });
}
