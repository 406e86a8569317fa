/**
 * TCP connect scan: Sightline's ports module next to `nmap -sT` on the same lab hosts and ports in one
 * run (64 hosts × the top-1000 list by default): wall time, CPU time, open ports found by each, what
 * one found that the other did not, and the time ratio. The lab runs in its own process so neither
 * scanner shares an event loop with the servers. Sightline runs with its default limits (and grabs
 * banners); nmap with -T4 (its "aggressive" timing, the usual choice on a fast network) and no banner
 * grabbing.
 *
 * On loopback both are bound by the CPU, mostly the kernel's socket, connect and close (Sightline's
 * probes run in C when `npm ci` built the native engine, src/discovery/native; else on Node's TCP
 * handle, src/discovery/tcp-connect.ts; SIGHTLINE_PROBE_ENGINE=js measures the latter), and one figure
 * from a shared machine is noisy, so the scanners take turns for a few rounds (BENCH_SCAN_ROUNDS, default 3)
 * and the median of each is compared. Sightline's probe threads are let go after each round, so every
 * round pays their start as nmap pays its own; a second Sightline scan in the round, on the threads
 * already running, shows what that start costs — and is what a run's scans see: a run starts the
 * threads when its first task starts (the ports module's `runStarting`), while its names resolve.
 *
 * Run alone: node bench/ports.ts
 */
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { DEFAULTS } from "../src/config.ts";
import { nativeProbes } from "../src/discovery/native-probes.ts";
import { parsePortSpec } from "../src/discovery/port-lists.ts";
import { portScan } from "../src/discovery/ports.ts";
import { probePool } from "../src/discovery/tcp-probe-pool.ts";
import { Throttle } from "../src/discovery/throttle.ts";
import { labScope, runModule } from "../test/helpers/discovery.ts";
import { exec, NOT_INSTALLED, startLabProcess, which } from "./lib/peer.ts";

const HOSTS = Number(process.env.BENCH_SCAN_HOSTS ?? 64);
const ROUNDS = Math.max(1, Number(process.env.BENCH_SCAN_ROUNDS ?? 3));
/** `auto` (the native engine when built) or `js`, as SIGHTLINE_PROBE_ENGINE chooses for a run. */
const PROBE_ENGINE = process.env.SIGHTLINE_PROBE_ENGINE ?? DEFAULTS.probeEngine;

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

async function sightlineScan(targets: string[], ports: number[]) {
  const settings = {
    ports,
    timeoutMs: DEFAULTS.timeoutMs,
    concurrency: DEFAULTS.concurrency,
    perHostConcurrency: DEFAULTS.perHostConcurrency,
    rateLimit: DEFAULTS.rateLimit,
    probeEngine: PROBE_ENGINE,
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
      const ours: Measured<Set<string>>[] = [];
      const warm: Measured<Set<string>>[] = [];
      const peers: Measured<Set<string>>[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // Alternate who goes first, so neither always runs on a machine the other just warmed.
        const sightline = async () => {
          ours.push(await measured("self", () => sightlineScan(targets, ports)));
          // Again on the threads just started, as a server does for 30 s after a scan.
          warm.push(await measured("self", () => sightlineScan(targets, ports)));
          probePool().close();
          nativeProbes?.stop();
        };
        const peer = async () => {
          if (nmap) peers.push(await measured("children", () => nmapScan(nmap, targets, ports)));
        };
        for (const scanner of round % 2 === 0 ? [sightline, peer] : [peer, sightline]) await scanner();
      }
      const missed = (rounds: Measured<Set<string>>[]) =>
        Math.max(...rounds.map((r) => [...truth].filter((p) => !r.value.has(p)).length));
      const row = (name: string, rounds: Measured<Set<string>>[]) => {
        const middle = median(rounds);
        return `| ${name} | ${seconds(middle.seconds)} | ${seconds(middle.cpu)} | ${middle.value.size} | ${missed(rounds)} |`;
      };
      const engine =
        nativeProbes && PROBE_ENGINE !== "js"
          ? "probes by the native engine (src/discovery/native: C, its own threads, one per core, at most 4)"
          : `probes by the JS engine on ${probePool().size} probe threads (one per core, at most 4)`;
      const lines = [
        `## ${this.name}`,
        "",
        `${targets.length} lab hosts × ${ports.length} ports (top1000) = ${targets.length * ports.length} probes; ${truth.size} ports are open. ${ROUNDS} rounds, the scanners taking turns; the median round of each is shown.`,
        `Sightline: default limits (concurrency ${DEFAULTS.concurrency}, ${DEFAULTS.perHostConcurrency} per host, timeout ${DEFAULTS.timeoutMs} ms), banners read, ${engine}. nmap: \`-sT -n -Pn -T4\`, one thread.`,
        `Both are bound by CPU on loopback; Sightline spreads its work over cores, nmap runs on one, so other work on the machine slows Sightline more (1-minute load average before the rounds: ${load.toFixed(2)} on ${cpus().length} cores).`,
        "",
        "| scanner | wall time | CPU time (user + system) | open ports found | missed (of the lab's, worst round) |",
        "|---|---|---|---|---|",
        row("Sightline (probe threads started by the scan)", ours),
        row("Sightline (probe threads already running)", warm),
      ];
      if (!nmap) {
        lines.push("", NOT_INSTALLED("nmap", "apt-get install nmap"));
        return lines.join("\n");
      }
      lines.push(row("nmap -sT", peers));
      const peerTime = median(peers).seconds;
      const onlyPeer = new Set(
        peers.flatMap((r) => [...r.value]).filter((p) => ![...ours, ...warm].every((o) => o.value.has(p))),
      );
      lines.push(
        "",
        `Time ratio nmap / Sightline: **${(peerTime / median(ours).seconds).toFixed(2)}×** with the probe threads started by the scan, **${(peerTime / median(warm).seconds).toFixed(2)}×** with them already running, as a run's scans find them (a run starts them with its first task, while its names resolve). Above 1: Sightline is faster.`,
        onlyPeer.size === 0
          ? "Sightline found every port nmap found, in every round."
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
