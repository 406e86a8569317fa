/**
 * The exposure checks against real servers from Debian's packages, each exposed and locked down
 * (test/lab/exposure-servers.ts): every planted exposure is raised with its proof, nothing is raised
 * on a locked-down twin. Under CI a missing package fails the test; elsewhere it skips.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { exposureChecks } from "../../src/discovery/modules/exposures.ts";
import { udpScan } from "../../src/discovery/modules/udp.ts";
import { runModule } from "../helpers/discovery.ts";
import {
  missingServers,
  PACKAGES,
  type SambaTwins,
  sambaMissing,
  startSambaTwins,
  startTwinLab,
  type TwinLab,
} from "../lab/exposure-servers.ts";

const missing = missingServers();
const skip =
  missing.length > 0 && !process.env.CI
    ? `not installed: ${missing.join(", ")} (apt-get install ${PACKAGES})`
    : false;

describe("exposure checks against real servers, exposed and locked down", { skip }, () => {
  let lab: TwinLab;
  before(async () => {
    assert.deepEqual(missing, [], `Debian packages missing: apt-get install ${PACKAGES}`);
    lab = await startTwinLab();
  });
  after(() => lab?.stop());

  const entity = (server: TwinLab["servers"][number], service: string) => ({
    kind: "NetworkService" as const,
    name: `${server.ip}:${server.port}/${server.protocol}`,
    details: { ip_address: server.ip, port: server.port, protocol: server.protocol, service, banner: "" },
  });

  test("every planted exposure is raised with proof, and nothing on a locked-down twin", async () => {
    const results = await Promise.all(
      lab.servers.map(async (server) => ({
        server,
        outcome: await runModule(exposureChecks, entity(server, server.service), { timeoutMs: 3000 }),
      })),
    );
    for (const { server, outcome } of results) {
      const label = `${server.name} ${server.exposed ? "exposed" : "locked down"} (${server.ip})`;
      assert.deepEqual(outcome.issues.map((issue) => issue.name).sort(), [...server.expected].sort(), label);
      for (const issue of outcome.issues) {
        assert.equal(issue.entity.name, `${server.ip}:${server.port}/${server.protocol}`);
        assert.ok(String(issue.details.sent).length > 0, `${label}: what was sent`);
        assert.ok(String(issue.details.received).length > 0, `${label}: what came back`);
        assert.ok(issue.remediation.length > 20 && issue.references.length > 0, label);
        assert.ok(issue.severity >= 1 && issue.severity <= 5);
      }
    }
  });

  test("a service still named by its port number alone is checked the same way", async () => {
    // What the port scan names these today (src/discovery/services.ts), before identification.
    const byPort: Record<string, string> = {
      redis: "redis",
      memcached: "memcached",
      vsftpd: "ftp",
      postfix: "smtp",
    };
    for (const server of lab.servers.filter((s) => s.exposed && byPort[s.name])) {
      const outcome = await runModule(exposureChecks, entity(server, "unknown"));
      assert.deepEqual(
        outcome.issues.map((issue) => issue.name).sort(),
        [...server.expected].sort(),
        server.name,
      );
    }
  });

  test("the proofs say what the servers answered, and keep no secret", async () => {
    const proofOf = async (name: string) => {
      const server = lab.servers.find((s) => s.name === name && s.exposed)!;
      // The run's default time-out, not the module tests' short one: a busy machine must not fail this.
      const outcome = await runModule(exposureChecks, entity(server, server.service), { timeoutMs: 3000 });
      assert.ok(outcome.issues.length > 0, `${name}: nothing raised`);
      return outcome.issues;
    };
    const [redis] = await proofOf("redis");
    assert.match(String(redis.details.redis_version), /^\d+\.\d+\.\d+$/);
    assert.match(String(redis.details.sent), /^INFO server$/);
    const [ftp] = await proofOf("vsftpd");
    assert.match(String(ftp.details.received), /230 Login successful/);
    const [ldap] = await proofOf("slapd");
    assert.equal(ldap.details.naming_context, "dc=lab,dc=test");
    assert.ok((ldap.details.entries as string[]).includes("uid=alice,ou=people,dc=lab,dc=test"));
    const [rsync] = await proofOf("rsync");
    assert.deepEqual(rsync.details.modules, ["public"]);
    const smtp = await proofOf("postfix");
    const relay = smtp.find((issue) => issue.name === "smtp_open_relay")!;
    assert.match(String(relay.details.received), /RCPT TO:<sightline-probe@example\.net>\n< 250/);
    assert.doesNotMatch(String(relay.details.sent), /DATA/);
    const [snmp] = await proofOf("snmpd");
    assert.equal(snmp.details.community, "public");
    assert.match(String(snmp.details.sys_descr), /Sightline lab snmpd \(exposed\)/);
    const [proxy] = await proofOf("squid");
    assert.match(String(proxy.details.relayed_to), /^http:\/\/127\.122\.6\.1:3128\/sightline-proxy-check-/);
  });

  test("the UDP pass finds snmpd, locked down or not, and memcached's UDP port where it answers", async () => {
    const snmp = lab.servers.filter((s) => s.name === "snmpd");
    for (const server of snmp) {
      const outcome = await runModule(udpScan, { kind: "IpAddress", name: server.ip }, { timeoutMs: 800 });
      const services = outcome.entities.filter((e) => e.kind === "NetworkService");
      assert.deepEqual(
        services.map((s) => [s.name, s.details?.protocol, s.details?.service]),
        [[`${server.ip}:161/udp`, "udp", "snmp"]],
      );
      const banner = String(services[0].details?.banner);
      // Every agent answers SNMPv3 engine discovery, before any credential: net-snmp's engine id.
      assert.match(banner, /SNMPv3 engine 80001f88[0-9a-f]+, enterprise 8072 \(net-snmp\), boots \d+/);
      if (server.exposed) {
        assert.match(banner, /^SNMP GetResponse: Sightline lab snmpd \(exposed\); SNMPv3 engine/);
        assert.equal(services[0].details?.identified_by, "snmp");
      } else {
        assert.doesNotMatch(
          banner,
          /GetResponse/,
          "an agent that does not know the community says nothing to it",
        );
        assert.equal(services[0].details?.identified_by, "snmpv3-discovery");
        const checked = await runModule(exposureChecks, services[0], { timeoutMs: 3000 });
        assert.deepEqual(checked.issues, [], "the locked-down agent raises no exposure");
      }
    }
    const rpcbind = lab.servers.find((s) => s.name === "rpcbind")!;
    const rpc = await runModule(udpScan, { kind: "IpAddress", name: rpcbind.ip }, { timeoutMs: 800 });
    const [portmapper] = rpc.entities.filter((e) => e.kind === "NetworkService");
    assert.equal(portmapper?.name, `${rpcbind.ip}:111/udp`);
    assert.equal(portmapper?.details?.service, "rpcbind");
    assert.match(String(portmapper?.details?.banner), /^RPC portmapper: portmapper v2–4/);
    const memcached = lab.servers.find((s) => s.name === "memcached" && s.exposed)!;
    const outcome = await runModule(udpScan, { kind: "IpAddress", name: memcached.ip }, { timeoutMs: 800 });
    const [service] = outcome.entities.filter((e) => e.kind === "NetworkService");
    assert.equal(service?.name, `${memcached.ip}:11211/udp`);
    assert.match(String(service?.details?.banner), /^VERSION \d/);
    const checked = await runModule(exposureChecks, service!, { timeoutMs: 3000 });
    assert.deepEqual(
      checked.issues.map((issue) => issue.name),
      ["memcached_udp_amplification"],
    );
  });
});

const sambaSkip =
  sambaMissing() && !process.env.CI ? `not installed: ${sambaMissing()} (apt-get install samba)` : false;

describe("SMB null session against Samba, exposed and locked down", { skip: sambaSkip }, () => {
  let twins: SambaTwins;
  before(async () => {
    assert.equal(sambaMissing(), undefined, "Debian package missing: apt-get install samba");
    twins = await startSambaTwins();
  });
  after(() => twins?.stop());

  test("the anonymous IPC$ connection is raised on the exposed twin only", async () => {
    for (const server of twins.servers) {
      const outcome = await runModule(
        exposureChecks,
        {
          kind: "NetworkService",
          name: `${server.ip}:445/tcp`,
          details: { ip_address: server.ip, port: 445, protocol: "tcp", service: "microsoft-ds", banner: "" },
        },
        { allow: [twins.block] },
      );
      assert.deepEqual(
        outcome.issues.map((issue) => issue.name),
        server.expected,
        server.exposed ? "exposed" : "locked down",
      );
      if (server.exposed)
        assert.match(String(outcome.issues[0].details.received), /TREE_CONNECT .*IPC\$: STATUS_SUCCESS/);
    }
  });
});
