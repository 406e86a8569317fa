/**
 * TCP connect scan: Sightline's ports module next to `nmap -sT` on the same lab hosts and ports in one
 * run (64 hosts × the top-1000 list by default, most ports closed): wall time, CPU time, open ports found
 * by each, what one found that the other did not, and the time ratios. The lab runs in its own process so
 * neither scanner shares an event loop with the servers. Sightline runs with its default limits (and
 * grabs banners); nmap with -T4 (its "aggressive" timing, the usual choice on a fast network) and no
 * banner grabbing.
 *
 * Sightline has two probe paths, and both are measured: the native engine `npm ci` builds where a C
 * compiler is found (src/discovery/net/native), and Node's sockets (src/discovery/net/tcp-connect.ts),
 * which work everywhere. The native engine is kept only while this shows it worth its build step. On
 * loopback every scanner is bound by CPU, and one figure from a shared machine is noisy, so the scanners
 * take turns for a few rounds (BENCH_SCAN_ROUNDS, default 3) and the median of each is compared.
 *
 * Run alone: node bench/ports.ts
 */
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { DEFAULTS } from "../src/core/config.ts";
import { portScan } from "../src/discovery/modules/ports.ts";
import { nativeProbes } from "../src/discovery/net/native-probes.ts";
import { Throttle } from "../src/discovery/net/throttle.ts";
import { parsePortSpec } from "../src/discovery/port-lists.ts";
import { labScope, runModule } from "../test/helpers/discovery.ts";
import { exec, NOT_INSTALLED, startLabProcess, which } from "./lib/peer.ts";

const HOSTS = Number(process.env.BENCH_SCAN_HOSTS ?? 64);
const ROUNDS = Math.max(1, Number(process.env.BENCH_SCAN_ROUNDS ?? 3));

interface Measured<T> {
  value: T;
  seconds: number;
  /** User + system CPU seconds, all threads; undefined where the platform does not say. */
  cpu?: number;
}

/** CPU seconds of this process (all threads) and of its waited-for children (nmap), from /proc. */
function cpuSeconds(): { self: number; children: number } | undefined {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = (i: number) => Number(fields[i]) / 100; // USER_HZ is 100 on Linux
    return { self: ticks(11) + ticks(12), children: ticks(13) + ticks(14) };
  } catch {
    return undefined;
  }
}

async function measured<T>(of: "self" | "children", work: () => Promise<T>): Promise<Measured<T>> {
  const cpuBefore = cpuSeconds();
  const start = performance.now();
  const value = await work();
  const seconds = (performance.now() - start) / 1000;
  const cpuAfter = cpuSeconds();
  const cpu = cpuBefore && cpuAfter ? cpuAfter[of] - cpuBefore[of] : undefined;
  return { value, seconds, cpu };
}

/** The round with the median wall time. */
function median<T>(rounds: Measured<T>[]): Measured<T> {
  return [...rounds].sort((a, b) => a.seconds - b.seconds)[Math.floor(rounds.length / 2)];
}

async function sightlineScan(targets: string[], ports: number[], probeEngine: "auto" | "js") {
  const settings = {
    ports,
    timeoutMs: DEFAULTS.timeoutMs,
    concurrency: DEFAULTS.concurrency,
    perHostConcurrency: DEFAULTS.perHostConcurrency,
    rateLimit: DEFAULTS.rateLimit,
    probeEngine,
  };
  // One throttle and one scope for the whole scan, as a run has.
  const throttle = new Throttle(settings);
  const scope = labScope();
  const outcomes = await Promise.all(
    targets.map((ip) =>
      runModule(portScan, { kind: "IpAddress", name: ip }, { ...settings, throttle, scope }),
    ),
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

const seconds = (value: number | undefined) => (value === undefined ? "n/a" : `${value.toFixed(2)} s`);

export const portsBench = {
  name: "TCP port scan: Sightline vs nmap -sT",
  async run(): Promise<string> {
    const ports = parsePortSpec("top1000");
    const lab = await startLabProcess(HOSTS);
    try {
      const targets = lab.hosts.map((h) => h.ip);
      const truth = new Set(lab.hosts.flatMap((h) => h.ports.map((p) => `${h.ip}:${p}/tcp`)));
      const nmap = await which("nmap");
      const [load] = loadavg(); // before the rounds: other work on the machine, not ours
      const native: Measured<Set<string>>[] = [];
      const sockets: Measured<Set<string>>[] = [];
      const peers: Measured<Set<string>>[] = [];
      const scanners = [
        async () => {
          if (nativeProbes) native.push(await measured("self", () => sightlineScan(targets, ports, "auto")));
          nativeProbes?.stop(); // every round starts the engine's threads, as nmap starts itself
        },
        async () => {
          sockets.push(await measured("self", () => sightlineScan(targets, ports, "js")));
        },
        async () => {
          if (nmap) peers.push(await measured("children", () => nmapScan(nmap, targets, ports)));
        },
      ];
      // Rotate who goes first, so no one always runs on a machine another just warmed.
      for (let round = 0; round < ROUNDS; round++)
        for (let i = 0; i < scanners.length; i++) await scanners[(round + i) % scanners.length]();
      const missed = (rounds: Measured<Set<string>>[]) =>
        Math.max(...rounds.map((r) => [...truth].filter((p) => !r.value.has(p)).length));
      const row = (name: string, rounds: Measured<Set<string>>[]) => {
        const middle = median(rounds);
        return `| ${name} | ${seconds(middle.seconds)} | ${seconds(middle.cpu)} | ${middle.value.size} | ${missed(rounds)} |`;
      };
      const lines = [
        `## ${this.name}`,
        "",
        `${targets.length} lab hosts × ${ports.length} ports (top1000) = ${targets.length * ports.length} probes; ${truth.size} ports are open. ${ROUNDS} rounds, the scanners taking turns; the median round of each is shown.`,
        `Sightline: default limits (concurrency ${DEFAULTS.concurrency}, ${DEFAULTS.perHostConcurrency} per host, timeout ${DEFAULTS.timeoutMs} ms), banners read. nmap: \`-sT -n -Pn -T4\`, one thread.`,
        `All are bound by CPU on loopback (1-minute load average before the rounds: ${load.toFixed(2)} on ${cpus().length} cores).`,
        "",
        "| scanner | wall time | CPU time (user + system) | open ports found | missed (of the lab's, worst round) |",
        "|---|---|---|---|---|",
        ...(nativeProbes ? [row("Sightline, native engine (C, its own threads)", native)] : []),
        row("Sightline, Node's sockets (one thread)", sockets),
      ];
      if (!nativeProbes)
        lines.push(
          "",
          "The native engine was not built on this machine (no C compiler): only Node's sockets were measured.",
        );
      if (!nmap) {
        lines.push("", NOT_INSTALLED("nmap", "apt-get install nmap"));
        return lines.join("\n");
      }
      lines.push(row("nmap -sT", peers));
      const peerTime = median(peers).seconds;
      const ratio = (rounds: Measured<Set<string>>[]) => (peerTime / median(rounds).seconds).toFixed(2);
      const everyRound = [...native, ...sockets];
      const onlyPeer = new Set(
        peers.flatMap((r) => [...r.value]).filter((p) => !everyRound.every((o) => o.value.has(p))),
      );
      lines.push(
        "",
        `Time ratio nmap / Sightline: ${nativeProbes ? `**${ratio(native)}×** with the native engine, ` : ""}**${ratio(sockets)}×** with Node's sockets. Above 1: Sightline is faster.`,
        nativeProbes
          ? `The native engine against Node's sockets: ${(median(sockets).seconds / median(native).seconds).toFixed(2)}× the speed, ${((median(sockets).cpu ?? 0) / (median(native).cpu || 1)).toFixed(2)}× less CPU.`
          : "",
        onlyPeer.size === 0
          ? "Sightline found every port nmap found, in every round, with either engine."
          : `Ports nmap found and Sightline did not (in some round): ${[...onlyPeer].join(", ")}.`,
      );
      return lines.join("\n");
    } finally {
      await lab.stop();
    }
  },
};

export default portsBench;

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await portsBench.run());
