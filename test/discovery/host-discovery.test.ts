/**
 * Host discovery in the port scan (SIGHTLINE_HOST_DISCOVERY): an address that neither answers nor refuses
 * the first round of its most common ports is left after that round, as nmap does before a scan; one that
 * refuses them is scanned whole. Silent addresses are real here: a network namespace of the test's own
 * (`unshare -rn`, no privileges needed where user namespaces are allowed) routes 10.251.0.0/16 to a
 * neighbour that does not exist, so connections there are never answered, as in an unused block.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { discoveryRound, portScan } from "../../src/discovery/modules/ports.ts";
import { runModule } from "../helpers/discovery.ts";
import { inSilentNetwork, silentNetworkUnavailable } from "../lab/silent-network.ts";

const SCRIPT = fileURLToPath(new URL("./fixtures/silent-scan.ts", import.meta.url));

async function namespaceSkipReason(): Promise<string | undefined> {
  const reason = await silentNetworkUnavailable();
  if (reason && process.env.CI) throw new Error(`${reason}, and CI requires it`);
  return reason;
}

test("the first round: the list's most common ports, else its first ones; none for a short list", () => {
  assert.deepEqual(discoveryRound([22, 80, 443, 8080]), []);
  assert.deepEqual(discoveryRound([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 443, 80]), [80, 443, 1, 2, 3, 4, 5, 6]);
  const top = [
    21, 22, 23, 25, 53, 80, 110, 111, 135, 139, 143, 443, 445, 993, 995, 1723, 3306, 3389, 5900, 8080,
  ];
  assert.deepEqual(discoveryRound(top), [80, 443, 22, 3389, 445, 25, 21, 8080]);
});

test("an address that answers nothing is left after the first round; one that refuses is scanned whole", {
  skip: await namespaceSkipReason(),
}, async () => {
  const results = JSON.parse(await inSilentNetwork(SCRIPT, [], { timeoutMs: 60_000 }));
  // 12 ports, 8 of them in the first round (80, 443, 22 and the first others).
  assert.deepEqual(results.silent.scan, { ports_scanned: 8, open: [], filtered: 8, host_down: true });
  assert.deepEqual(results.silent.services, []);
  // 127.0.0.1 refuses the first round and has 1009 open: scanned whole, the port found.
  assert.deepEqual(results.live.scan, { ports_scanned: 12, open: [1009], filtered: 0 });
  assert.deepEqual(results.live.services, ["127.0.0.1:1009/tcp"]);
  // Without host discovery every port of the silent address waits out the timeout.
  assert.deepEqual(results.silentWithoutDiscovery.scan, { ports_scanned: 12, open: [], filtered: 12 });
});

test("host discovery learns a network's round trip from the addresses of it that answer", {
  skip: await namespaceSkipReason(),
}, async () => {
  const { learnt } = JSON.parse(await inSilentNetwork(SCRIPT, [], { timeoutMs: 60_000 }));
  // Before any address of 10.251/16 answered, an unused one of it was given the whole 500 ms.
  assert.equal(learnt.before, 500);
  // Two addresses of it refused every port within a fraction of a millisecond: the wait is learnt, down
  // to the 100 ms floor (the thread's own delays may keep it a little above), for that /16 alone.
  for (const teacher of learnt.teachers)
    assert.deepEqual(teacher.scan, { ports_scanned: 12, open: [], filtered: 0 });
  assert.ok(learnt.after >= 100 && learnt.after < 500, `learnt ${learnt.after} ms`);
  assert.equal(learnt.otherNetwork, 500);
  // An unused address of the same /16 is still judged unused, after the learnt wait.
  assert.deepEqual(learnt.silent.scan, { ports_scanned: 8, open: [], filtered: 8, host_down: true });
});

/**
 * A port that stays silent past host discovery's short wait and answers within the whole timeout: its
 * listener (in a child process) has a backlog of one (Node takes 0 for its default), filled before the
 * scan, and the child blocks for BLOCKED_MS, so the kernel drops the port's SYNs until then; a SYN sent again after that is accepted.
 */
const BLOCKED_MS = 800;
const BUSY_LISTENER = `
  const { createServer } = require("node:net");
  const server = createServer((socket) => socket.destroy());
  server.listen({ host: process.argv[1], port: 0, backlog: 1 }, () => {
    process.stdout.write(server.address().port + "\\n");
    process.stdin.once("data", () => {
      process.stdout.write("blocked\\n");
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${BLOCKED_MS});
      process.stdin.once("end", () => process.exit(0));
      process.stdin.resume();
    });
  });
`;

test("an address in use has the ports its first round left unanswered asked again with the whole timeout", async () => {
  const host = "127.91.2.1";
  const child = spawn(process.execPath, ["-e", BUSY_LISTENER, host], { stdio: ["pipe", "pipe", "inherit"] });
  try {
    const [line] = (await once(child.stdout, "data")) as [Buffer];
    const slow = Number(line.toString().trim());
    // Block the child, then fill its accept queue: it accepts nothing until BLOCKED_MS have passed.
    child.stdin.write("block\n");
    await once(child.stdout, "data");
    const fillers = [connect(slow, host), connect(slow, host)];
    await Promise.all(fillers.map((filler) => once(filler, "connect")));
    // Nine ports, the slow one in the first round; the others refuse at once, so the address is in use.
    const ports = [slow, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008];
    assert.deepEqual(discoveryRound(ports).slice(0, 1), [slow]);
    const outcome = await runModule(
      portScan,
      { kind: "IpAddress", name: host },
      { ports, timeoutMs: 4000, hostDiscoveryTimeoutMs: 200, allow: ["127.91.2.0/24"] },
    );
    for (const filler of fillers) filler.destroy();
    const summary = outcome.entities.find((entity) => entity.kind === "IpAddress" && entity.details?.scan);
    // The first round's 200 ms ended before the child unblocked; the second round's connection got through.
    assert.deepEqual(summary?.details?.scan, { ports_scanned: 9, open: [slow], filtered: 0 });
  } finally {
    child.stdin.end();
    child.kill();
  }
});
