/**
 * Unused address space: a block where every address is silent (no answer, no refusal), as most of a real
 * block is. Loopback cannot give one (it refuses every closed port at once), so the scan runs in a network
 * namespace of its own (`unshare -rn`, no privileges needed where user namespaces are allowed) that routes
 * 10.251.0.0/16 to a neighbour that does not exist (bench/lib/silent-world.ts). One embedded server with
 * the default settings (top 100 ports, 3 s timeout) with host discovery on and off
 * (SIGHTLINE_HOST_DISCOVERY), beside nmap -sT with its own host discovery, on the same block.
 * SIGHTLINE_BENCH_SILENT_BLOCK picks the block (default 10.251.0.0/26: 64 addresses).
 */
import { fileURLToPath } from "node:url";
import { inSilentNetwork } from "../test/lab/silent-network.ts";

const BLOCK = process.env.SIGHTLINE_BENCH_SILENT_BLOCK ?? "10.251.0.0/26";

const fixed = (value: number) => value.toFixed(1);

export const silentBench = {
  name: "silent",
  async run(): Promise<string> {
    const script = fileURLToPath(new URL("./lib/silent-world.ts", import.meta.url));
    let line: string;
    try {
      line = await inSilentNetwork(script, [BLOCK], {
        timeoutMs: 30 * 60_000,
        nodeOptions: ["--max-semi-space-size=4"],
      });
    } catch (error) {
      return `Not run: a network namespace of its own is not available here (${(error as Error).message.split("\n")[0]}).`;
    }
    const result = JSON.parse(line) as {
      block: string;
      on: { seconds: number; tasks: number };
      off: { seconds: number; tasks: number };
      nmap?: number;
    };
    const addresses = 2 ** (32 - Number(result.block.split("/")[1]));
    const ratio = (seconds: number) => (result.nmap ? fixed(seconds / result.nmap) : "–");
    return [
      `A block of ${addresses} silent addresses (${result.block}, routed nowhere inside a network namespace), the top 100 ports, default settings; nmap -sT -T4 --top-ports 100 with its host discovery on the same block. Host discovery probes an address's 8 most common ports first and leaves it when none answers or refuses.`,
      "",
      "| scan | tasks | run | per address | /nmap |",
      "|---|---:|---:|---:|---:|",
      `| Sightline, host discovery on | ${result.on.tasks} | ${fixed(result.on.seconds)} s | ${(result.on.seconds / addresses).toFixed(2)} s | ${ratio(result.on.seconds)} |`,
      `| Sightline, host discovery off | ${result.off.tasks} | ${fixed(result.off.seconds)} s | ${(result.off.seconds / addresses).toFixed(2)} s | ${ratio(result.off.seconds)} |`,
      `| nmap -sT | – | ${result.nmap === undefined ? "not installed" : `${fixed(result.nmap)} s`} | ${result.nmap === undefined ? "–" : (result.nmap / addresses).toFixed(2)} s | 1 |`,
    ].join("\n");
  },
};

export default silentBench;

if (import.meta.url === `file://${process.argv[1]}`) console.log(await silentBench.run());
