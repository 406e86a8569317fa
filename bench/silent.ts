/**
 * Two kinds of silence. Unused address space: a block where every address is silent (no answer, no
 * refusal), as most of a real block is. Loopback cannot give one (it refuses every closed port at once), so the scan runs in a network
 * namespace of its own (`unshare -rn`, no privileges needed where user namespaces are allowed) that routes
 * 10.251.0.0/16 to a neighbour that does not exist (bench/lib/silent-world.ts). One embedded server with
 * the default settings (top 100 ports, 3 s timeout) with host discovery on and off
 * (SIGHTLINE_HOST_DISCOVERY), beside nmap -sT with its own host discovery, on the same block.
 * SIGHTLINE_BENCH_SILENT_BLOCK picks the block (default 10.251.0.0/26: 64 addresses).
 *
 * Mute services: a block of loopback addresses whose web port accepts every connection and never says a
 * word (a tarpit, a SYN proxy, a hung server), scanned on that port, beside nmap -sT -sV.
 * SIGHTLINE_BENCH_SILENT_SERVICES picks how many (default 16: nmap -sV took 243 s for 16 and 751 s for 64).
 */
import { createServer, type Server, type Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { inSilentNetwork } from "../test/lab/silent-network.ts";
import { exec, which } from "./lib/peer.ts";
import { scanBlock } from "./lib/scan-block.ts";

const BLOCK = process.env.SIGHTLINE_BENCH_SILENT_BLOCK ?? "10.251.0.0/26";
const MUTE_SERVICES = Number(process.env.SIGHTLINE_BENCH_SILENT_SERVICES ?? 16);
/** The mute services' block: 127.94.0.0/<as many as asked, rounded up to a block>. */
const MUTE_NET = "127.94.0.0";

/** Web ports that accept and never answer on the first `count` addresses of MUTE_NET, scanned and timed. */
async function muteServices(count: number) {
  const sockets = new Set<Socket>();
  const servers: Server[] = [];
  await Promise.all(
    Array.from(
      { length: count },
      (_, i) =>
        new Promise<void>((resolve, reject) => {
          const server = createServer((socket) => {
            sockets.add(socket);
            socket.on("error", () => {});
          });
          server.once("error", reject);
          server.listen(80, `127.94.${i >> 8}.${i & 255}`, () => resolve());
          servers.push(server);
        }),
    ),
  );
  const block = `${MUTE_NET}/${32 - Math.ceil(Math.log2(count))}`;
  try {
    const sightline = await scanBlock(block, { scanAllow: ["127.94.0.0/16"], ports: "80" });
    const nmap = await which("nmap");
    let nmapSeconds: number | undefined;
    if (nmap) {
      const started = performance.now();
      await exec(nmap, ["-sT", "-sV", "-n", "-T4", "-p80", "-oG", "-", block]);
      nmapSeconds = (performance.now() - started) / 1000;
    }
    return { block, sightline, nmap: nmapSeconds };
  } finally {
    for (const socket of sockets) socket.destroy();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

const fixed = (value: number) => value.toFixed(1);

export const silentBench = {
  name: "silent",
  async run(): Promise<string> {
    const mute = await muteServices(MUTE_SERVICES);
    const muteRatio = mute.nmap ? (mute.sightline.seconds / mute.nmap).toFixed(2) : "–";
    const muteSection = [
      "",
      `${MUTE_SERVICES} mute services (${mute.block} on loopback, port 80 on each address, every connection accepted and never answered), that port only, default settings; nmap -sT -sV -T4 -p80 on the same block. Identification gives each port its probes' first-byte waits; web probing and the exposure checks wait out one timeout, not one per scheme, and beside the task slots.`,
      "",
      "| scan | tasks | run | per service | /nmap |",
      "|---|---:|---:|---:|---:|",
      `| Sightline | ${mute.sightline.tasks} | ${fixed(mute.sightline.seconds)} s | ${(mute.sightline.seconds / MUTE_SERVICES).toFixed(2)} s | ${muteRatio} |`,
      `| nmap -sT -sV | – | ${mute.nmap === undefined ? "not installed" : `${fixed(mute.nmap)} s`} | ${mute.nmap === undefined ? "–" : `${(mute.nmap / MUTE_SERVICES).toFixed(2)} s`} | 1 |`,
    ].join("\n");
    const script = fileURLToPath(new URL("./lib/silent-world.ts", import.meta.url));
    let line: string;
    try {
      line = await inSilentNetwork(script, [BLOCK], {
        timeoutMs: 30 * 60_000,
        nodeOptions: ["--max-semi-space-size=4"],
      });
    } catch (error) {
      return `Unused space not run: a network namespace of its own is not available here (${(error as Error).message.split("\n")[0]}).\n${muteSection}`;
    }
    const result = JSON.parse(line) as {
      block: string;
      on: { seconds: number; tasks: number };
      off: { seconds: number; tasks: number };
      nmap?: number;
      mixed: {
        block: string;
        used: string;
        learnt: { seconds: number; tasks: number };
        whole: { seconds: number; tasks: number };
        nmap?: number;
      };
    };
    const { mixed } = result;
    /** A time against nmap's on the same targets, when nmap ran. */
    const against = (nmap: number | undefined) => (seconds: number) => (nmap ? fixed(seconds / nmap) : "–");
    const mixedRatio = against(mixed.nmap);
    const addresses = 2 ** (32 - Number(result.block.split("/")[1]));
    const ratio = against(result.nmap);
    return [
      `A block of ${addresses} silent addresses (${result.block}, routed nowhere inside a network namespace), the top 100 ports, default settings; nmap -sT -T4 --top-ports 100 with its host discovery on the same block. Host discovery probes an address's 8 most common ports first, waiting 1 s for each (SIGHTLINE_HOST_DISCOVERY_TIMEOUT_MS), and leaves it when none answers or refuses.`,
      "",
      "| scan | tasks | run | per address | /nmap |",
      "|---|---:|---:|---:|---:|",
      `| Sightline, host discovery on | ${result.on.tasks} | ${fixed(result.on.seconds)} s | ${(result.on.seconds / addresses).toFixed(2)} s | ${ratio(result.on.seconds)} |`,
      `| Sightline, host discovery off | ${result.off.tasks} | ${fixed(result.off.seconds)} s | ${(result.off.seconds / addresses).toFixed(2)} s | ${ratio(result.off.seconds)} |`,
      `| nmap -sT | – | ${result.nmap === undefined ? "not installed" : `${fixed(result.nmap)} s`} | ${result.nmap === undefined ? "–" : (result.nmap / addresses).toFixed(2)} s | 1 |`,
      "",
      `The silent block ${mixed.block} seeded after ${mixed.used}, addresses of the same /16 that answer (they refuse every port at once): host discovery learns the network's round trip from them and waits that long (at least SIGHTLINE_HOST_DISCOVERY_MIN_TIMEOUT_MS, 250 ms) for the rest, or, with the floor set to the 1 s ceiling, always 1 s. nmap -sT -T4 --top-ports 100 on the same two blocks.`,
      "",
      "| scan | tasks | run | /nmap |",
      "|---|---:|---:|---:|",
      `| Sightline, learnt wait | ${mixed.learnt.tasks} | ${fixed(mixed.learnt.seconds)} s | ${mixedRatio(mixed.learnt.seconds)} |`,
      `| Sightline, whole wait | ${mixed.whole.tasks} | ${fixed(mixed.whole.seconds)} s | ${mixedRatio(mixed.whole.seconds)} |`,
      `| nmap -sT | – | ${mixed.nmap === undefined ? "not installed" : `${fixed(mixed.nmap)} s`} | 1 |`,
      muteSection,
    ].join("\n");
  },
};

export default silentBench;

if (import.meta.url === `file://${process.argv[1]}`) console.log(await silentBench.run());
