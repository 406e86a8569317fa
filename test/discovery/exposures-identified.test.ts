/**
 * A cross-check on the service identification lab's real servers (test/lab/real/servers.ts, written
 * for identification with its own exposed and locked-down configurations): the exposure checks raise
 * what each exposed server exposes and nothing on its locked-down form — on configurations not written
 * for these checks. Servers that could not start are left out (the identification tests report them).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { exposureChecks } from "../../src/discovery/modules/exposures.ts";
import { runModule } from "../helpers/discovery.ts";
import { type RealLab, type RealServerName, startRealLab } from "../lab/real/servers.ts";

/** What each exposed server must raise; reachability issues (databases) are raised locked or not. */
const EXPOSED: Partial<Record<RealServerName, string[]>> = {
  redis: ["redis_unauthenticated"],
  memcached: ["memcached_unauthenticated"],
  mariadb: ["database_exposed_mysql"],
  postgresql: ["database_exposed_postgresql"],
  mosquitto: ["mqtt_anonymous_access"],
  vsftpd: ["ftp_anonymous_login"],
  // Anonymous binds allowed, but its directory is empty (no entry under dc=lab,dc=test): nothing is
  // read, so nothing is proven — the slapd twins of test/lab/exposure-servers.ts hold entries.
  openldap: [],
  squid: ["open_http_proxy"],
  rsync: ["rsync_modules_listed"],
};
const LOCKED: Partial<Record<RealServerName, string[]>> = {
  mariadb: ["database_exposed_mysql"],
  postgresql: ["database_exposed_postgresql"],
};
/** memcached has no authentication: its locked-down form is the same server (decided by address elsewhere). */
const NO_LOCKED_FORM = new Set<RealServerName>(["memcached"]);

describe("exposure checks on the identification lab's real servers", () => {
  let exposed: RealLab;
  let locked: RealLab;
  before(async () => {
    [exposed, locked] = await Promise.all([
      startRealLab({ base: "127.122.40" }),
      startRealLab({ base: "127.122.41", locked: true }),
    ]);
  });
  after(async () => {
    await exposed?.stop();
    await locked?.stop();
  });

  test("each exposed server raises its exposures; each locked-down one raises none", async () => {
    const raised = async (server: RealLab["servers"][number]) => {
      const outcome = await runModule(
        exposureChecks,
        {
          kind: "NetworkService",
          name: `${server.address}:${server.port}/${server.truth.transport}`,
          details: {
            ip_address: server.address,
            port: server.port,
            protocol: server.truth.transport,
            service: server.truth.service,
            banner: "",
          },
        },
        { timeoutMs: 3000 },
      );
      return outcome.issues.map((issue) => issue.name).sort();
    };
    assert.ok(exposed.servers.length > 0, "no server of the identification lab started");
    for (const server of exposed.servers)
      assert.deepEqual(await raised(server), EXPOSED[server.name] ?? [], `${server.name} exposed`);
    for (const server of locked.servers.filter((s) => !NO_LOCKED_FORM.has(s.name)))
      assert.deepEqual(await raised(server), LOCKED[server.name] ?? [], `${server.name} locked down`);
  });
});
