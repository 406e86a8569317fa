/**
 * Run by bench/silent.ts inside a network namespace of its own, where 10.251.0.0/16 is routed to a
 * neighbour that does not exist: every address there is silent (no answer, no refusal), as the unused
 * addresses of a real block. Scans one block of them with an embedded server — host discovery on, then
 * off — and with nmap -sT (its host discovery on), the top 100 ports each, and prints the times as JSON.
 * Then a larger silent block seeded after a few addresses of the same /16 that answer (ANSWERING_NET:
 * they refuse every port at once, as the addresses in use of a real block answer): host discovery learns
 * their round trip, and is timed with it and with its whole wait (the floor set to the ceiling).
 */
import { ANSWERING_NET, startSilentResolver } from "../../test/lab/silent-network.ts";
import { exec, which } from "./peer.ts";
import { scanBlock } from "./scan-block.ts";

const BLOCK = process.argv[2] ?? "10.251.0.0/26";
/** The larger silent block, and the answering addresses seeded before it. */
const MIXED_BLOCK = process.argv[3] ?? "10.251.1.0/24";
const USED = `${ANSWERING_NET.split("/")[0]}/28`;

const sightline = (hostDiscovery: "on" | "off") =>
  scanBlock(BLOCK, { scanAllow: ["10.251.0.0/16"], hostDiscovery });

async function nmap(...blocks: string[]): Promise<number | undefined> {
  const binary = await which("nmap");
  if (!binary) return undefined;
  const started = performance.now();
  await exec(binary, ["-sT", "-n", "-T4", "--top-ports", "100", "--open", "-oG", "-", ...blocks]);
  return (performance.now() - started) / 1000;
}

const resolver = await startSilentResolver();
const on = await sightline("on");
const off = await sightline("off");
const nmapSeconds = await nmap(BLOCK);
const mixed = (floor: number | undefined) =>
  scanBlock([USED, MIXED_BLOCK], {
    scanAllow: ["10.251.0.0/16"],
    hostDiscovery: "on",
    ...(floor === undefined ? {} : { hostDiscoveryMinTimeoutMs: floor }),
  });
const learnt = await mixed(undefined);
const whole = await mixed(1000);
console.log(
  JSON.stringify({
    block: BLOCK,
    on,
    off,
    nmap: nmapSeconds,
    mixed: { block: MIXED_BLOCK, used: USED, learnt, whole, nmap: await nmap(USED, MIXED_BLOCK) },
  }),
);
await resolver.close();
