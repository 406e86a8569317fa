/**
 * DNS resolution rate: names resolved per second by Sightline's resolver client (the one every DNS
 * module uses, with its default limits) against the lab's authoritative server, next to dnsperf on the
 * same server and the same names in the same run. dnsperf is a load generator that only sends and
 * counts, so its figure is the server's ceiling; the ratio says how much of it Sightline reaches. The
 * names are a subdomain brute force of the lab's zone (the large wordlist), mostly NXDOMAIN, as in a
 * real brute force. The lab runs in its own process.
 *
 * Run alone: node bench/dns.ts
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULTS } from "../src/core/config.ts";
import { discoveryLimits } from "../src/discovery/module.ts";
import { DnsClient } from "../src/discovery/net/dns-client.ts";
import { Throttle } from "../src/discovery/net/throttle.ts";
import { loadWordlist } from "../src/discovery/wordlists.ts";
import { exec, NOT_INSTALLED, startLabProcess, timed, which } from "./lib/peer.ts";

async function sightlineRate(resolver: string, names: string[]) {
  const settings = {
    dnsServers: [resolver],
    ports: [],
    wordlist: "large",
    timeoutMs: DEFAULTS.timeoutMs,
    concurrency: DEFAULTS.concurrency,
    perHostConcurrency: DEFAULTS.perHostConcurrency,
    rateLimit: 0,
    limits: discoveryLimits(DEFAULTS),
  };
  const dns = new DnsClient({
    settings,
    signal: new AbortController().signal,
    throttle: new Throttle(settings),
  });
  const { value, seconds } = await timed(() => Promise.all(names.map((name) => dns.a(name))));
  const answered = value.filter((o) => o.ok || o.code === "nxdomain" || o.code === "nodata").length;
  return { answered, seconds };
}

async function dnsperfRate(dnsperf: string, resolver: string, names: string[]) {
  const dir = mkdtempSync(join(tmpdir(), "sightline-dnsperf-"));
  try {
    const file = join(dir, "queries.txt");
    writeFileSync(file, names.map((name) => `${name} A\n`).join(""));
    const [host, port] = resolver.split(":");
    const { stdout } = await exec(dnsperf, [
      "-s",
      host,
      "-p",
      port,
      "-d",
      file,
      "-n",
      "1",
      "-q",
      "100",
      "-t",
      "5",
    ]);
    const completed = Number(/Queries completed:\s+(\d+)/.exec(stdout)?.[1] ?? 0);
    const seconds = Number(/Run time \(s\):\s+([\d.]+)/.exec(stdout)?.[1] ?? Number.NaN);
    return { answered: completed, seconds };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const dnsBench = {
  name: "DNS resolution rate: Sightline vs dnsperf",
  async run(): Promise<string> {
    const lab = await startLabProcess();
    try {
      const names = loadWordlist("large").map((word) => `${word}.acme.test`);
      const lines = [
        `## ${this.name}`,
        "",
        `${names.length} A queries (the large brute-force wordlist under acme.test) to the lab's authoritative server ${lab.resolver}.`,
        `Sightline: DnsClient (c-ares) with default limits (${DEFAULTS.perHostConcurrency} queries in flight per server). dnsperf: 100 queries in flight.`,
        "",
        "| client | answered | wall time | names per second |",
        "|---|---|---|---|",
      ];
      const row = (client: string, r: { answered: number; seconds: number }) =>
        `| ${client} | ${r.answered} | ${r.seconds.toFixed(2)} s | ${Math.round(r.answered / r.seconds)} |`;
      const ours = await sightlineRate(lab.resolver, names);
      lines.push(row("Sightline", ours));
      const dnsperf = await which("dnsperf");
      if (!dnsperf) {
        lines.push("", NOT_INSTALLED("dnsperf", "apt-get install dnsperf"));
        return lines.join("\n");
      }
      const peer = await dnsperfRate(dnsperf, lab.resolver, names);
      lines.push(row("dnsperf", peer));
      const ratio = ours.answered / ours.seconds / (peer.answered / peer.seconds);
      lines.push(
        "",
        `Sightline reaches **${(ratio * 100).toFixed(0)}%** of dnsperf's rate on the same server.`,
      );
      return lines.join("\n");
    } finally {
      await lab.stop();
    }
  },
};

export default dnsBench;

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await dnsBench.run());
