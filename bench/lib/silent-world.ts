/**
 * Run by bench/silent.ts inside a network namespace of its own, where 10.251.0.0/16 is routed to a
 * neighbour that does not exist: every address there is silent (no answer, no refusal), as the unused
 * addresses of a real block. Scans one block of them with an embedded server — host discovery on, then
 * off — and with nmap -sT (its host discovery on), the top 100 ports each, and prints the times as JSON.
 */
import { exec, which } from "./peer.ts";
import { scanBlock } from "./scan-block.ts";

const BLOCK = process.argv[2] ?? "10.251.0.0/26";

const sightline = (hostDiscovery: "on" | "off") =>
  scanBlock(BLOCK, { scanAllow: ["10.251.0.0/16"], hostDiscovery });

async function nmap(): Promise<number | undefined> {
  const binary = await which("nmap");
  if (!binary) return undefined;
  const started = performance.now();
  await exec(binary, ["-sT", "-n", "-T4", "--top-ports", "100", "--open", "-oG", "-", BLOCK]);
  return (performance.now() - started) / 1000;
}

const on = await sightline("on");
const off = await sightline("off");
console.log(JSON.stringify({ block: BLOCK, on, off, nmap: await nmap() }));
