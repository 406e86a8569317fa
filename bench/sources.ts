/**
 * The passive phase and permutations, measured:
 * 1. The passive phase's cost for one domain: every source (keyless and keyed) asked about `acme.test`
 *    through its module, against the fakes in their documented formats (with their paging) and the lab's
 *    DNS for the candidates. Once at each source's published pace (what a run pays: a source's later pages
 *    wait for its rate, and the phase lasts as long as its slowest source, since source tasks wait beside
 *    the run's task slots), once unpaced (what the work itself costs).
 * 2. Permutation resolutions per second against the lab's authoritative server (each candidate is A,
 *    AAAA and CNAME plus its zone's wildcard check), next to dnsperf sending the same names' A queries to
 *    the same server: dnsperf only sends and counts, so its rate is the server's ceiling.
 *
 * Run alone: node bench/sources.ts
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULTS } from "../src/core/config.ts";
import { Scope } from "../src/core/scope.ts";
import { KEYED_SOURCE_IDS, SOURCE_IDS } from "../src/core/sources.ts";
import { CandidateResolver } from "../src/discovery/candidates.ts";
import { type DiscoverySettings, discoveryLimits, type SourceAccess } from "../src/discovery/module.ts";
import { runModuleOn } from "../src/discovery/module-run.ts";
import { PASSIVE_SOURCE_MODULES } from "../src/discovery/modules/passive-sources.ts";
import { PERMUTATION_WORDS, permute } from "../src/discovery/modules/permutations.ts";
import { DnsClient } from "../src/discovery/net/dns-client.ts";
import { Throttle } from "../src/discovery/net/throttle.ts";
import { keyOf, startSourceFakes } from "../test/helpers/source-fakes.ts";
import { exec, NOT_INSTALLED, startLabProcess, timed, which } from "./lib/peer.ts";

const DOMAIN = "acme.test";

function settingsFor(resolver: string, sources?: SourceAccess): DiscoverySettings {
  return {
    dnsServers: [resolver],
    ports: [],
    wordlist: "small",
    timeoutMs: DEFAULTS.timeoutMs,
    concurrency: DEFAULTS.concurrency,
    perHostConcurrency: DEFAULTS.perHostConcurrency,
    rateLimit: 0,
    limits: discoveryLimits(DEFAULTS),
    sources,
  };
}

/** Every domain source's module on the domain at once, as a run's tasks would be; seconds per source. */
async function passivePhase(
  resolver: string,
  fakes: Awaited<ReturnType<typeof startSourceFakes>>,
  paced: boolean,
) {
  const access: SourceAccess = {
    chosen: [...SOURCE_IDS],
    urls: Object.fromEntries(SOURCE_IDS.map((id) => [id, fakes.url(id)])),
    keys: Object.fromEntries(KEYED_SOURCE_IDS.map((id) => [id, keyOf(id)])),
    timeoutMs: DEFAULTS.sourceTimeoutMs,
    maxBytes: DEFAULTS.sourceMaxBytes,
    retries: DEFAULTS.sourceRetries,
    maxNames: DEFAULTS.sourceMaxNames,
    requestsPerMinute: paced ? 0 : 600_000,
  };
  const settings = settingsFor(resolver, access);
  const scope = new Scope([{ type: "Domain", name: DOMAIN }], { scanAllow: ["127.0.0.0/8"], scanDeny: [] });
  const throttle = new Throttle(settings);
  const modules = PASSIVE_SOURCE_MODULES.filter((module) => module.consumes.includes("Domain"));
  const perSource: Array<{ name: string; seconds: number; requests: number; names: number }> = [];
  const whole = await timed(() =>
    Promise.all(
      modules.map(async (module) => {
        const { value, seconds } = await timed(() =>
          runModuleOn(
            module,
            { kind: "Domain", name: DOMAIN },
            {
              signal: new AbortController().signal,
              runId: paced ? 1 : 2,
              depth: 0,
              throttle,
              settings,
              mayTouch: (address) => scope.mayTouch(address),
              covers: (name) => scope.coversName(name),
            },
          ),
        );
        const status = value.sources?.[0];
        perSource.push({
          name: module.name,
          seconds,
          requests: status?.requests ?? 0,
          names: status?.names ?? 0,
        });
      }),
    ),
  );
  return { seconds: whole.seconds, perSource: perSource.sort((a, b) => b.seconds - a.seconds) };
}

async function dnsperfRate(dnsperf: string, resolver: string, names: string[]) {
  const dir = mkdtempSync(join(tmpdir(), "sightline-dnsperf-"));
  try {
    const file = join(dir, "queries.txt");
    writeFileSync(file, names.map((name) => `${name} A\n`).join(""));
    const [host, port] = resolver.split(":");
    const { stdout } = await exec(dnsperf, [
      "-s",
      host!,
      "-p",
      port!,
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

export const sourcesBench = {
  name: "Passive sources and permutations",
  async run(): Promise<string> {
    const lab = await startLabProcess();
    const fakes = await startSourceFakes("127.0.0.68");
    try {
      const lines = [`## ${this.name}`, ""];
      // Unpaced first: a source's pace is kept per process, so the paced pass would delay it.
      const unpaced = await passivePhase(lab.resolver, fakes, false);
      const paced = await passivePhase(lab.resolver, fakes, true);
      const requests = paced.perSource.reduce((sum, source) => sum + source.requests, 0);
      lines.push(
        `### The passive phase of one domain (${paced.perSource.length} sources, ${requests} requests to the fakes, candidates resolved in the lab's DNS)`,
        "",
        "| pace | wall time of the phase | slowest source |",
        "|---|---|---|",
        `| each source's published limit (what a run pays) | ${paced.seconds.toFixed(2)} s | ${paced.perSource[0]!.name} (${paced.perSource[0]!.seconds.toFixed(2)} s, ${paced.perSource[0]!.requests} requests) |`,
        `| unpaced (the work itself) | ${unpaced.seconds.toFixed(2)} s | ${unpaced.perSource[0]!.name} (${unpaced.perSource[0]!.seconds.toFixed(2)} s) |`,
        "",
        "At the published pace a source's later pages wait for its rate: the phase lasts as long as its slowest paged source, while the run's other tasks go on (source tasks wait beside the task slots).",
        "",
      );

      const known = ["www", "api", "mail", "vpn", "dev", "staging", "backup", "shop", "store", "app"].map(
        (label) => `${label}.${DOMAIN}`,
      );
      const candidates = [...new Set(known.flatMap((name) => permute(name, PERMUTATION_WORDS)))];
      const settings = settingsFor(lab.resolver);
      const dns = new DnsClient({
        settings,
        signal: new AbortController().signal,
        throttle: new Throttle(settings),
      });
      const ours = await timed(() => new CandidateResolver(dns).resolve(candidates));
      const live = ours.value.filter((resolution) => resolution.state === "live").length;
      lines.push(
        `### Permutation resolutions per second (${candidates.length} permutations of ${known.length} lab names, ${live} of them live)`,
        "",
        "| client | names | queries per name | wall time | names per second | queries per second |",
        "|---|---|---|---|---|---|",
        `| Sightline (CandidateResolver: A, AAAA, CNAME + wildcard check) | ${candidates.length} | 3 | ${ours.seconds.toFixed(2)} s | ${Math.round(candidates.length / ours.seconds)} | ${Math.round((3 * candidates.length) / ours.seconds)} |`,
      );
      const dnsperf = await which("dnsperf");
      if (!dnsperf) {
        lines.push("", NOT_INSTALLED("dnsperf", "apt-get install dnsperf"));
        return lines.join("\n");
      }
      const peer = await dnsperfRate(dnsperf, lab.resolver, candidates);
      lines.push(
        `| dnsperf (A only, 100 in flight) | ${peer.answered} | 1 | ${peer.seconds.toFixed(2)} s | ${Math.round(peer.answered / peer.seconds)} | ${Math.round(peer.answered / peer.seconds)} |`,
        "",
        `Counted in queries, Sightline's permutations reach **${((100 * (3 * candidates.length)) / ours.seconds / (peer.answered / peer.seconds)).toFixed(0)}%** of dnsperf's rate on the same server.`,
      );
      return lines.join("\n");
    } finally {
      await fakes.close();
      await lab.stop();
    }
  },
};

export default sourcesBench;

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await sourcesBench.run());
