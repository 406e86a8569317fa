/**
 * TCP connect scan: Sightline's ports module next to `nmap -sT` on the same lab hosts and ports in one
 * run (64 hosts × the top-1000 list by default): wall time, open ports found by each, what one found
 * that the other did not, and the time ratio. The lab runs in its own process so neither scanner
 * shares an event loop with the servers. Sightline runs with its default limits (and grabs banners);
 * nmap with -T4 (its "aggressive" timing, the usual choice on a fast network) and no banner grabbing.
 *
 * Run alone: node bench/ports.ts [hosts]
 */
import { fileURLToPath } from "node:url";
import { DEFAULTS } from "../src/config.ts";
import { parsePortSpec } from "../src/discovery/port-lists.ts";
import { portScan } from "../src/discovery/ports.ts";
import { Throttle } from "../src/discovery/throttle.ts";
import { runModule } from "../test/helpers/discovery.ts";
import { exec, NOT_INSTALLED, startLabProcess, timed, which } from "./lib/peer.ts";

const HOSTS = Number(process.env.BENCH_SCAN_HOSTS ?? 64);

async function sightlineScan(targets: string[], ports: number[]) {
  const settings = {
    ports,
    timeoutMs: DEFAULTS.timeoutMs,
    concurrency: DEFAULTS.concurrency,
    perHostConcurrency: DEFAULTS.perHostConcurrency,
    rateLimit: DEFAULTS.rateLimit,
  };
  const throttle = new Throttle(settings);
  const outcomes = await Promise.all(
    targets.map((ip) => runModule(portScan, { kind: "IpAddress", name: ip }, { ...settings, throttle })),
  );
  return new Set(
    outcomes.flatMap((o) => o.entities.filter((e) => e.kind === "NetworkService").map((e) => e.name)),
  );
}

async function nmapScan(nmap: string, targets: string[], ports: number[]) {
  const { stdout } = await exec(
    nmap,
    ["-sT", "-n", "-Pn", "-T4", "--open", "-p", ports.join(","), "-oG", "-", ...targets],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  const found = new Set<string>();
  for (const line of stdout.split("\n")) {
    const match = /^Host: (\S+) .*Ports: (.*)$/.exec(line);
    if (!match) continue;
    for (const entry of match[2].split(", ")) {
      const [port, state, protocol] = entry.split("/");
      if (state === "open") found.add(`${match[1]}:${port}/${protocol}`);
    }
  }
  return found;
}

const seconds = (value: number) => `${value.toFixed(2)} s`;

export const portsBench = {
  name: "TCP port scan: Sightline vs nmap -sT",
  async run(): Promise<string> {
    const ports = parsePortSpec("top1000");
    const lab = await startLabProcess(HOSTS);
    try {
      const targets = lab.hosts.map((h) => h.ip);
      const truth = new Set(lab.hosts.flatMap((h) => h.ports.map((p) => `${h.ip}:${p}/tcp`)));
      const lines = [
        `## ${this.name}`,
        "",
        `${targets.length} lab hosts × ${ports.length} ports (top1000) = ${targets.length * ports.length} probes; ${truth.size} ports are open.`,
        `Sightline: default limits (concurrency ${DEFAULTS.concurrency}, ${DEFAULTS.perHostConcurrency} per host, timeout ${DEFAULTS.timeoutMs} ms), banners read. nmap: \`-sT -n -Pn -T4\`.`,
        "",
        "| scanner | wall time | open ports found | missed (of the lab's) |",
        "|---|---|---|---|",
      ];
      const ours = await timed(() => sightlineScan(targets, ports));
      const missed = (found: Set<string>) => [...truth].filter((p) => !found.has(p)).length;
      lines.push(`| Sightline | ${seconds(ours.seconds)} | ${ours.value.size} | ${missed(ours.value)} |`);
      const nmap = await which("nmap");
      if (!nmap) {
        lines.push("", NOT_INSTALLED("nmap", "apt-get install nmap"));
        return lines.join("\n");
      }
      const peer = await timed(() => nmapScan(nmap, targets, ports));
      lines.push(`| nmap -sT | ${seconds(peer.seconds)} | ${peer.value.size} | ${missed(peer.value)} |`);
      const onlyPeer = [...peer.value].filter((p) => !ours.value.has(p));
      lines.push(
        "",
        `Time ratio nmap / Sightline: **${(peer.seconds / ours.seconds).toFixed(2)}×** (above 1: Sightline is faster).`,
        onlyPeer.length === 0
          ? "Sightline found every port nmap found."
          : `Ports nmap found and Sightline did not: ${onlyPeer.join(", ")}.`,
      );
      return lines.join("\n");
    } finally {
      await lab.stop();
    }
  },
};

export default portsBench;

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await portsBench.run());
