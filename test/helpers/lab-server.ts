/**
 * A real server whose runs discover the lab: the lab, a test server resolving through the lab's DNS and
 * allowed onto loopback, a collection "lab" seeded with the lab's domains, and a user of another team
 * (who must not see it).
 */
import assert from "node:assert/strict";
import { type Lab, startLab } from "../lab/index.ts";
import { type Keys, startTestServer, type TestServer } from "./server.ts";

/** The lab's own domains (cloudapp.test is a provider's zone, outside the organisation). */
export const LAB_DOMAINS = ["acme.test", "open.test", "wild.test", "globex.test"];

export interface LabServer {
  lab: Lab;
  t: TestServer;
  stranger: Keys;
  close(): Promise<void>;
}

export async function startLabServer(
  dialect: "sqlite" | "postgres",
  options: { base?: string } = {},
): Promise<LabServer> {
  const lab = await startLab(options.base ? { base: options.base } : {});
  const t = await startTestServer(dialect, {
    dnsServers: [lab.resolver],
    scanAllow: ["127.0.0.0/8"],
    // Only the lab's own ports: a server on this machine's wildcard address answers on every lab host.
    ports: lab.ports,
    timeoutMs: 1000,
    schedulerIntervalSeconds: 3600,
  });
  const { accounts } = t.server.services;
  const account = (await accounts.findAccount("default"))!;
  const team = await accounts.createTeam(account.id, "red");
  const stranger = await accounts.issueKey((await accounts.createUser(account.id, "mallory", team.id)).id);
  const created = await t.request("POST", "/api/collections", {
    body: { name: "lab", seeds: LAB_DOMAINS.map((name) => ({ type: "Domain", name })) },
  });
  assert.equal(created.status, 200, created.text);
  return {
    lab,
    t,
    stranger,
    async close() {
      // The lab stops whatever the server's close says: its listeners would keep the test's process alive.
      try {
        await t.close();
      } finally {
        await lab.stop();
      }
    },
  };
}
