/**
 * Scope as a security boundary. The lab's block is allowed, but a sub-block of it is denied and the rest
 * of loopback stays denied by the built-in list, as do link-local and the cloud metadata address. Seeds,
 * names, a CNAME, redirects, IPv4-mapped and NAT64 spellings all lead into the denied part; a full run
 * records them and never connects: listeners we own there count zero connections, while the allowed
 * host was reached (so the run did run).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Scope } from "../../src/core/scope.ts";
import type { Seed } from "../../src/core/seeds.ts";
import { discoveryModules } from "../../src/discovery/modules.ts";
import { type DiscoveryFixture, discoveryFixture } from "../helpers/discovery.ts";
import { type Lab, startLab } from "../lab/index.ts";
import { withRandomPort } from "../lab/sockets.ts";
import {
  type CountingListener,
  countingListener,
  deniedAddress,
  deniedBlock,
  REDIRECTORS,
  TRAP_ZONE,
  trapWorld,
} from "../lab/traps.ts";

let lab: Lab;
let fixture: DiscoveryFixture;
let port: number;
const traps: CountingListener[] = [];
let allowedRequests = 0;

before(async () => {
  const loopback = await withRandomPort((p) => countingListener("127.0.0.1", p));
  traps.push(loopback);
  port = Number(loopback.where.split(":")[1]);
  lab = await startLab({ world: trapWorld(port, () => allowedRequests++) });
  for (const trapPort of [22, 80, 443, port])
    traps.push(await countingListener(deniedAddress(lab.base), trapPort));

  const name = (label: string): Seed => ({ type: "DnsRecord", name: `${label}.${TRAP_ZONE}` });
  const seeds: Seed[] = [
    { type: "Domain", name: TRAP_ZONE },
    ...["cname", "loopback", "metadata", "mapped", "nat64", "www", ...Object.keys(REDIRECTORS)].map(name),
    { type: "IpAddress", name: deniedAddress(lab.base) },
    { type: "IpAddress", name: "127.0.0.1" },
    { type: "IpAddress", name: "169.254.169.254" },
    { type: "NetBlock", name: `${deniedAddress(lab.base)}/30` },
    { type: "Uri", name: `http://denied.${TRAP_ZONE}/` },
    { type: "Uri", name: `http://127.0.0.1:${port}/` },
    { type: "Uri", name: "http://169.254.169.254/latest/meta-data/" },
    // The redirectors are probed by name (as virtual hosts of the allowed address).
    ...Object.keys(REDIRECTORS).map(
      (label): Seed => ({ type: "Uri", name: `http://${label}.${TRAP_ZONE}/` }),
    ),
  ];
  fixture = await discoveryFixture(
    "sqlite",
    seeds,
    {
      dnsServers: [lab.resolver],
      scanAllow: [`${lab.base}.0.0/16`],
      scanDeny: [deniedBlock(lab.base)],
      ports: `22,80,443,${port}`,
      timeoutMs: 1500,
    },
    discoveryModules(),
  );
});
after(async () => {
  await fixture?.close();
  await lab?.stop();
  for (const trap of traps) await trap.close();
});

test("names, CNAMEs, redirects and seeds leading to denied addresses are recorded, never connected to", async () => {
  const { run, finished } = await fixture.run();
  assert.equal(finished, true);

  assert.ok(allowedRequests > 0, "the allowed web host was probed, so discovery did reach the network");
  for (const trap of traps) assert.equal(trap.accepted, 0, `no connection reached ${trap.where}`);

  const addresses = new Set(
    (await fixture.entities.current(fixture.collectionId, { kinds: ["IpAddress"] })).map((e) => e.name),
  );
  for (const denied of [deniedAddress(lab.base), "127.0.0.1", "169.254.169.254", "64:ff9b::7f00:1"])
    assert.ok(addresses.has(denied), `${denied} is recorded`);

  const notes = await fixture.entities.notes(run.id);
  const refused = (what: string) =>
    notes.some((note) => note.startsWith(`${what} was not`) && note.includes("deny list"));
  for (const address of [deniedAddress(lab.base), "127.0.0.1", "169.254.169.254", "64:ff9b::7f00:1"])
    assert.ok(refused(address), `a note says ${address} was not scanned: ${JSON.stringify(notes)}`);
  assert.ok(refused(`denied.${TRAP_ZONE}:80`), "the Uri seed's denied address was not fetched");

  const applications = await fixture.entities.current(fixture.collectionId, { kinds: ["Uri"] });
  for (const [label, target] of Object.entries(REDIRECTORS)) {
    const application = applications.find((a) => a.name === `http://${label}.${TRAP_ZONE}:80`);
    assert.ok(application, `${label} was probed`);
    const chain = application.details.redirect_chain as string[];
    assert.equal(chain.at(-1), new URL(target(lab.base, port)).href, `${label}'s redirect is recorded`);
  }
});

test("every spelling of a denied address is judged as that address, and denied names as names", () => {
  const defaults = new Scope([], { scanAllow: [], scanDeny: [] });
  for (const denied of [
    "127.0.0.1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "169.254.169.254",
    "::ffff:169.254.169.254",
    "64:ff9b::a9fe:a9fe",
    "10.1.2.3",
    "fe80::1",
    "metadata.google.internal",
    "d111111abcdef8.cloudfront.net",
  ])
    assert.equal(defaults.mayTouch(denied), false, denied);
  for (const allowed of ["93.184.216.34", "64:ff9b::5db8:d822", "2606:2800:220:1::1", "www.example.com"])
    assert.equal(defaults.mayTouch(allowed), true, allowed);

  const lab = new Scope([], { scanAllow: ["127.0.0.0/8"], scanDeny: ["127.0.0.1"] });
  assert.equal(lab.mayTouch("127.0.0.2"), true);
  assert.equal(lab.mayTouch("::ffff:127.0.0.2"), true);
  for (const denied of ["127.0.0.1", "::ffff:127.0.0.1", "64:ff9b::7f00:1"])
    assert.equal(lab.mayTouch(denied), false, denied);
});
