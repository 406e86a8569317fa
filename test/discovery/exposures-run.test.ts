/**
 * The exposure checks and the UDP pass inside a real run: seeds are the stand-ins' addresses, the
 * engine routes services to the modules, and the results show UDP ports as `udp` in /hosts and the
 * exposures as stored issues on their services — the locked-down twins with none.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type DiscoveryFixture, discoveryFixture } from "../helpers/discovery.ts";
import { hostsView } from "../helpers/result-views.ts";
import {
  FAKE_EXPOSED,
  FAKE_LOCKED,
  FAKE_UDP,
  FAKES,
  type FakeLab,
  startFakeLab,
  UDP_FAKES,
} from "../lab/exposure-fakes.ts";

describe("exposures and UDP in a run", () => {
  let lab: FakeLab;
  let fixture: DiscoveryFixture;
  before(async () => {
    lab = await startFakeLab();
    fixture = await discoveryFixture(
      "sqlite",
      [FAKE_EXPOSED, FAKE_LOCKED, FAKE_UDP].map((name) => ({ type: "IpAddress" as const, name })),
      {
        scanAllow: ["127.122.0.0/16"],
        ports: FAKES.map((fake) => fake.port).join(","),
        timeoutMs: 1000,
      },
    );
  });
  after(async () => {
    await fixture?.close();
    await lab?.stop();
  });

  test("UDP ports are in /hosts as udp, exposures are issues of their services, twins raise nothing", async () => {
    const { finished } = await fixture.run();
    assert.equal(finished, true);
    const hosts = await hostsView(fixture.entities, fixture.collectionId);
    const udp = hosts[FAKE_UDP].ports
      .filter((port) => port.protocol === "udp")
      .map((port) => Number(port.number));
    assert.deepEqual(
      udp,
      UDP_FAKES.map((fake) => fake.port).sort((a, b) => a - b),
    );

    const findings = await fixture.entities.currentFindings(fixture.collectionId);
    const on = (ip: string) =>
      findings
        .filter((finding) => finding.entityName.startsWith(`${ip}:`) && !finding.name.startsWith("tls_"))
        .map((finding) => `${finding.entityName} ${finding.name}`)
        .sort();
    assert.deepEqual(
      on(FAKE_EXPOSED),
      FAKES.map((fake) => `${FAKE_EXPOSED}:${fake.port}/tcp ${fake.issue}`).sort(),
    );
    assert.deepEqual(on(FAKE_LOCKED), []);
  });
});
