/**
 * Host discovery in the port scan (SIGHTLINE_HOST_DISCOVERY): an address that neither answers nor refuses
 * the first round of its most common ports is left after that round, as nmap does before a scan; one that
 * refuses them is scanned whole. Silent addresses are real here: a network namespace of the test's own
 * (`unshare -rn`, no privileges needed where user namespaces are allowed) routes 10.251.0.0/16 to a
 * neighbour that does not exist, so connections there are never answered, as in an unused block.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { discoveryRound } from "../../src/discovery/modules/ports.ts";
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
