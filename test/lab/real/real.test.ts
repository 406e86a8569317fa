/**
 * Service identification against Debian's real servers (test/lab/real/servers.ts), each on a loopback
 * address of its own, through the port scan module as a run uses it: every server is named with its
 * product, and with the version its package holds wherever the server tells it. Some servers also run
 * on ports not theirs (Redis on 7000, nginx on 9999, TLS on 8443 and 4433). Under CI=true a server that
 * cannot start fails the test; elsewhere the test skips, saying which.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createFingerprintModule } from "../../../src/discovery/modules/fingerprint.ts";
import { portScan } from "../../../src/discovery/modules/ports.ts";
import { runModule } from "../../helpers/discovery.ts";
import { type RealLab, type RealServer, requireServers, startRealLab, startRealServer } from "./servers.ts";

const BASE = "127.121.3";

describe("identification of real servers", () => {
  let lab: RealLab;
  const odd: RealServer[] = [];
  let skip: string | undefined;
  before(async () => {
    lab = await startRealLab({ base: BASE });
    skip = requireServers(lab);
    const extra = await Promise.allSettled([
      startRealServer("redis", { address: `${BASE}.40`, port: 7000 }),
      startRealServer("nginx", { address: `${BASE}.41`, port: 9999 }),
      startRealServer("tls", { address: `${BASE}.42`, port: 8443 }),
    ]);
    for (const result of extra)
      if (result.status === "fulfilled") odd.push(result.value);
      else lab.missing.push({ name: "redis", reason: String(result.reason) });
    skip = requireServers(lab);
  });
  after(async () => {
    await lab?.stop();
    await Promise.all(odd.map((server) => server.stop()));
  });

  const scan = async (server: RealServer) => {
    // The server's port among closed neighbours, as a port list has them.
    const ports = [server.port, server.port + 1, 1, 9];
    const outcome = await runModule(
      portScan,
      { kind: "IpAddress", name: server.address },
      { ports, timeoutMs: 3000, limits: { bannerTimeoutMs: 1500 } },
    );
    const services = outcome.entities.filter((entity) => entity.kind === "NetworkService");
    assert.deepEqual(
      services.map((service) => service.details?.port),
      [server.port],
      `only ${server.name}'s port is open`,
    );
    return services[0];
  };

  it("names every lab server with its product, and its version where the server tells it", async (t) => {
    if (skip) return t.skip(skip);
    const rows: string[] = [];
    for (const server of lab.servers.filter((s) => s.truth.transport === "tcp")) {
      const service = await scan(server);
      const details = service.details ?? {};
      rows.push(`${server.name}: ${JSON.stringify(details)}`);
      assert.equal(details.service, server.truth.service, `${server.name}: ${JSON.stringify(details)}`);
      if (server.name !== "tls")
        assert.match(
          String(details.product ?? ""),
          server.truth.product,
          `${server.name}: ${JSON.stringify(details)}`,
        );
      if (server.truth.versionTold)
        assert.equal(details.version, server.truth.version, `${server.name}: ${JSON.stringify(details)}`);
      if (details.cpe) assert.match(String(details.cpe), /^cpe:2\.3:a:/);
      assert.ok(String(details.banner ?? "").length <= 512);
    }
    t.diagnostic(rows.join("\n"));
  });

  it("names servers on ports that are not theirs by what they answer", async (t) => {
    if (skip) return t.skip(skip);
    const byName = (address: string) => odd.find((server) => server.address === address)!;
    const redis = (await scan(byName(`${BASE}.40`))).details ?? {};
    assert.equal(redis.service, "redis");
    assert.equal(redis.version, byName(`${BASE}.40`).truth.version);
    const nginx = (await scan(byName(`${BASE}.41`))).details ?? {};
    assert.equal(nginx.service, "http");
    assert.equal(nginx.product, "nginx");
    const tls = (await scan(byName(`${BASE}.42`))).details ?? {};
    assert.equal(tls.tls, true);
    assert.equal(tls.service, "https");
    const tls4433 = lab.servers.find((server) => server.name === "tls");
    if (tls4433) assert.equal((await scan(tls4433)).details?.tls, true);
  });

  it("turns the identification into products and CPE fingerprints, as web fingerprints are", async (t) => {
    if (skip) return t.skip(skip);
    const redis = lab.servers.find((server) => server.name === "redis")!;
    const service = await scan(redis);
    const outcome = await runModule(createFingerprintModule(), service);
    const emitted = outcome.entities.find((entity) => entity.kind === "NetworkService");
    assert.ok(emitted, "the fingerprint module emits the products");
    assert.deepEqual(
      emitted.details?.products,
      [["Redis", redis.truth.version]],
      "named as the banner rules name it",
    );
    const [fingerprint] = (emitted.details?.fingerprint ?? []) as Array<{ cpe: string; inference: boolean }>;
    assert.equal(fingerprint.cpe, `cpe:2.3:a:redis:redis:${redis.truth.version}:*:*:*:*:*:*:*`);
    assert.equal(fingerprint.inference, true);
  });
});
