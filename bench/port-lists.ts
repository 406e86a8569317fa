/**
 * What a longer default port list costs where it matters: a /20 with host discovery on, its last /24
 * in use and the rest silent (bench/lib/port-lists-world.ts, in a network namespace of its own), scanned
 * over `top100` and `top1000` by an embedded server with the default settings, beside nmap -sT with
 * --top-ports 100 and 1000 on the same block (SIGHTLINE_BENCH_PORT_LISTS_NMAP=off leaves nmap out: its
 * host discovery waits long on silent space). SIGHTLINE_BENCH_PORT_LISTS_BLOCK picks the block (a block
 * holding 10.251.255.0/24, default 10.251.240.0/20).
 */
import { fileURLToPath } from "node:url";
import { inSilentNetwork } from "../test/lab/silent-network.ts";

const BLOCK = process.env.SIGHTLINE_BENCH_PORT_LISTS_BLOCK ?? "10.251.240.0/20";
const fixed = (value: number, digits = 1) => value.toFixed(digits);

export const portListsBench = {
  name: "port-lists",
  async run(): Promise<string> {
    const script = fileURLToPath(new URL("./lib/port-lists-world.ts", import.meta.url));
    let line: string;
    try {
      line = await inSilentNetwork(script, [BLOCK], {
        timeoutMs: 60 * 60_000,
        nodeOptions: ["--max-semi-space-size=4"],
      });
    } catch (error) {
      return `Not run: a network namespace of its own is not available here (${(error as Error).message.split("\n")[0]}).`;
    }
    const result = JSON.parse(line) as {
      block: string;
      used: string;
      top100: { seconds: number; tasks: number };
      top1000: { seconds: number; tasks: number };
      nmap100?: number;
      nmap1000?: number;
    };
    const ratio = result.top1000.seconds / result.top100.seconds;
    const nmapRatio = result.nmap100 && result.nmap1000 ? fixed(result.nmap1000 / result.nmap100, 2) : "–";
    const nmapAbsent =
      process.env.SIGHTLINE_BENCH_PORT_LISTS_NMAP === "off"
        ? "left out (SIGHTLINE_BENCH_PORT_LISTS_NMAP=off)"
        : "not installed";
    const seconds = (value: number | undefined) => (value === undefined ? nmapAbsent : `${fixed(value)} s`);
    return [
      `The block ${result.block} with host discovery on: ${result.used} in use (every address refuses every port at once; HTTP on 80 on one in 4, an SSH greeting on 22 on one in 8), every other address silent (routed nowhere inside a network namespace). One embedded server, default settings but the port list; nmap -sT -T4 with its host discovery and --top-ports 100 or 1000 on the same block. The issue's goal: top1000 costs at most 1.5× top100.`,
      "",
      "| scan | ports | tasks | run | top1000 / top100 |",
      "|---|---:|---:|---:|---:|",
      `| Sightline | top100 (100) | ${result.top100.tasks} | ${fixed(result.top100.seconds)} s | |`,
      `| Sightline | top1000 (1020) | ${result.top1000.tasks} | ${fixed(result.top1000.seconds)} s | ${fixed(ratio, 2)} (≤ 1.5: ${ratio <= 1.5 ? "met" : "missed"}) |`,
      `| nmap -sT | 100 | – | ${seconds(result.nmap100)} | |`,
      `| nmap -sT | 1000 | – | ${seconds(result.nmap1000)} | ${nmapRatio} |`,
    ].join("\n");
  },
};

export default portListsBench;

if (import.meta.url === `file://${process.argv[1]}`) console.log(await portListsBench.run());
