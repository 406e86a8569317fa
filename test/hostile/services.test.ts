/**
 * The exposure checks and the UDP pass against hostile services (test/lab/hostile.ts): garbage, an
 * endless answer, a greeting trickled byte by byte, silence, an immediate close, TLS where plain text
 * was expected, a UDP flood and a "proxy" that answers 200 to everything. Each ends within its bounds
 * with a correct record — unidentified is a valid answer — and no exposure raised.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { exposureChecks } from "../../src/discovery/modules/exposures.ts";
import { udpScan } from "../../src/discovery/modules/udp.ts";
import { MiB, measure } from "../helpers/bounds.ts";
import { runModule } from "../helpers/discovery.ts";
import { type HostileHost, type HostileLab, SMALL_CAPS, startHostileLab } from "../lab/hostile.ts";

const TIMEOUT_MS = 1000;
/** Not a speed claim: a check that hangs never gets here. */
const TIME_LIMIT_MS = 15_000;
const MEMORY_BOUND = 64 * MiB;

describe("exposure checks and the UDP pass against hostile services", () => {
  let lab: HostileLab;
  before(async () => {
    lab = await startHostileLab();
  });
  after(() => lab?.stop());

  /** The hostile services, with the name identification (or the port) gives them. */
  const SERVICES: Array<[HostileHost, string]> = [
    ["garbage-redis", "redis"],
    ["endless-stats", "memcached"],
    ["trickle-ftp", "ftp"],
    ["silent-mqtt", "mqtt"],
    ["closing-ldap", "ldap"],
    ["tls-redis", "redis"],
    ["yes-proxy", "http-proxy"],
    ["yes-proxy", "http"],
  ];

  for (const [host, name] of SERVICES)
    test(`${host} (as ${name}): bounded, and nothing raised`, async () => {
      const target = lab.targets[host];
      const result = await measure(() =>
        runModule(
          exposureChecks,
          {
            kind: "NetworkService",
            name: `${target.ip}:${target.port}/tcp`,
            details: { ip_address: target.ip, port: target.port, protocol: "tcp", service: name, banner: "" },
          },
          { timeoutMs: TIMEOUT_MS, limits: SMALL_CAPS, allow: [lab.block] },
        ),
      );
      assert.deepEqual(
        result.value.issues.map((issue) => issue.name),
        [],
        `${host}: ${JSON.stringify(result.value.issues[0]?.details ?? {})}`,
      );
      assert.ok(
        result.peakGrowth < MEMORY_BOUND,
        `${host}: memory grew ${(result.peakGrowth / MiB).toFixed(1)} MiB`,
      );
      assert.ok(result.elapsedMs < TIME_LIMIT_MS, `${host}: took ${Math.round(result.elapsedMs)} ms`);
    });

  test("a UDP agent that floods replies is read within the caps: one unidentified service, no exposure", async () => {
    const target = lab.targets["snmp-flood"];
    const result = await measure(() =>
      runModule(
        udpScan,
        { kind: "IpAddress", name: target.ip },
        { timeoutMs: TIMEOUT_MS, limits: SMALL_CAPS, allow: [lab.block] },
      ),
    );
    const services = result.value.entities.filter((entity) => entity.kind === "NetworkService");
    assert.deepEqual(
      services.map((service) => [service.name, service.details?.protocol, service.details?.service]),
      [[`${target.ip}:161/udp`, "udp", "unknown"]],
      "it answered, so it is reported; its answer is not SNMP, so it is not named so",
    );
    assert.ok(String(services[0].details?.banner).length <= 4 * SMALL_CAPS.bannerMaxBytes);
    assert.ok(result.peakGrowth < MEMORY_BOUND);
    const checked = await runModule(exposureChecks, services[0], {
      timeoutMs: TIMEOUT_MS,
      allow: [lab.block],
    });
    assert.deepEqual(checked.issues, [], "no SNMP community is proven by garbage");
    const asSnmp = await runModule(
      exposureChecks,
      { ...services[0], details: { ...services[0].details, service: "snmp" } },
      { timeoutMs: TIMEOUT_MS, allow: [lab.block] },
    );
    assert.deepEqual(asSnmp.issues, [], "nor when the port is taken for SNMP");
  });
});
