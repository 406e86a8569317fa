/**
 * Service identification: Sightline's port scan (which names every open port by what it answers) next
 * to Debian's `nmap -sT -sV` on the real-server lab (test/lab/real/servers.ts: Redis, memcached,
 * MariaDB, PostgreSQL, Mosquitto, vsftpd, OpenLDAP, OpenSSH, Dovecot IMAP and POP3, NSD, nginx, Squid,
 * rsync, a TLS server, and Redis, nginx and TLS again on ports not theirs), in one run, on the same
 * addresses and ports. For each scanner: services identified (the right protocol), with the right
 * version (where the server tells it), false identifications (a wrong protocol or version named), and
 * wall time; then the ratios. The ground truth is each server's Debian package, not either scanner.
 *
 * Run alone: node bench/services.ts (root, or a user that may start the servers, is needed).
 */
import { fileURLToPath } from "node:url";
import { DEFAULTS } from "../src/core/config.ts";
import type { FoundEntity } from "../src/core/entities.ts";
import { portScan } from "../src/discovery/modules/ports.ts";
import { Throttle } from "../src/discovery/net/throttle.ts";
import { labScope, runModule } from "../test/helpers/discovery.ts";
import { type RealServer, startRealLab, startRealServer } from "../test/lab/real/servers.ts";
import { exec, NOT_INSTALLED, timed, which } from "./lib/peer.ts";
import type { Scenario } from "./run.ts";

const BASE = "127.121.5";

interface Named {
  service: string;
  product: string;
  version: string;
}

/** nmap's names for what the lab's ground truth calls otherwise (TLS is "ssl/<protocol>"). */
const sameService = (truth: string, named: string) => {
  const plain = named.replace(/^ssl\//, "");
  if (truth === "https")
    return named === "https" || named === "ssl/http" || named === "ssl/https" || named === "ssl";
  return plain === truth || (truth === "http-proxy" && plain === "squid-http");
};

async function nmapScan(nmap: string, targets: string[], ports: number[]): Promise<Map<string, Named>> {
  const { stdout } = await exec(
    nmap,
    ["-sT", "-sV", "-n", "-Pn", "--open", "-p", ports.join(","), "-oX", "-", ...targets],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  const found = new Map<string, Named>();
  for (const host of stdout.split("<host ").slice(1)) {
    const address = /<address addr="([^"]+)"/.exec(host)?.[1];
    if (!address) continue;
    for (const port of host.matchAll(/<port protocol="tcp" portid="(\d+)">(.*?)<\/port>/gs)) {
      if (!/<state state="open"/.test(port[2])) continue;
      const attribute = (name: string) =>
        new RegExp(`<service [^>]*\\b${name}="([^"]*)"`).exec(port[2])?.[1] ?? "";
      const tunnel = attribute("tunnel");
      const service = attribute("name");
      // nmap's mqtt-subscribe (a version script) puts the broker's $SYS version in the service name.
      const mosquitto = /^mosquitto version (\S+)$/.exec(service);
      found.set(`${address}:${port[1]}`, {
        service: mosquitto ? "mqtt" : tunnel === "ssl" && service !== "https" ? `ssl/${service}` : service,
        product: mosquitto ? "Mosquitto" : attribute("product"),
        version: mosquitto ? mosquitto[1] : attribute("version"),
      });
    }
  }
  return found;
}

async function sightlineScan(targets: string[], ports: number[]): Promise<Map<string, Named>> {
  const settings = { ...DEFAULTS, ports, rateLimit: 0 };
  const throttle = new Throttle({
    concurrency: settings.concurrency,
    perHostConcurrency: settings.perHostConcurrency,
    rateLimit: 0,
  });
  const scope = labScope();
  const outcomes = await Promise.all(
    targets.map((address) =>
      runModule(
        portScan,
        { kind: "IpAddress", name: address },
        {
          ports,
          timeoutMs: DEFAULTS.timeoutMs,
          throttle,
          scope,
        },
      ),
    ),
  );
  const found = new Map<string, Named>();
  for (const entity of outcomes.flatMap((outcome) => outcome.entities) as FoundEntity[]) {
    if (entity.kind !== "NetworkService") continue;
    const details = entity.details ?? {};
    found.set(`${details.ip_address}:${details.port}`, {
      service: String(details.service ?? ""),
      product: String(details.product ?? ""),
      version: String(details.version ?? ""),
    });
  }
  return found;
}

interface Score {
  identified: number;
  versioned: number;
  wrong: string[];
  missedVersion: string[];
}

function score(servers: RealServer[], found: Map<string, Named>): Score {
  const result: Score = { identified: 0, versioned: 0, wrong: [], missedVersion: [] };
  for (const server of servers) {
    const named = found.get(`${server.address}:${server.port}`);
    const label = `${server.name} on ${server.port}`;
    if (!named || named.service === "" || named.service === "unknown") continue;
    if (!sameService(server.truth.service, named.service)) {
      result.wrong.push(`${label} named ${named.service}`);
      continue;
    }
    result.identified++;
    if (!server.truth.versionTold) continue;
    if (named.version.includes(server.truth.version)) result.versioned++;
    else if (named.version !== "")
      result.wrong.push(`${label} version ${named.version} (is ${server.truth.version})`);
    else result.missedVersion.push(label);
  }
  return result;
}

export const scenario: Scenario = {
  name: "services",
  async run() {
    const nmap = await which("nmap");
    const lab = await startRealLab({ base: BASE });
    const odd = await Promise.allSettled([
      startRealServer("redis", { address: `${BASE}.40`, port: 7000 }),
      startRealServer("nginx", { address: `${BASE}.41`, port: 9999 }),
      startRealServer("tls", { address: `${BASE}.42`, port: 8443 }),
    ]);
    const servers = [
      ...lab.servers,
      ...odd.flatMap((result) => (result.status === "fulfilled" ? [result.value] : [])),
    ].filter((server) => server.truth.transport === "tcp");
    try {
      const targets = servers.map((server) => server.address);
      // Every target is scanned on every lab port: most are closed there, as on a real host.
      const ports = [...new Set(servers.map((server) => server.port))].sort((a, b) => a - b);
      const ours = await timed(() => sightlineScan(targets, ports));
      const theirs = nmap ? await timed(() => nmapScan(nmap, targets, ports)) : undefined;
      const withVersion = servers.filter((server) => server.truth.versionTold).length;
      const a = score(servers, ours.value);
      const b = theirs ? score(servers, theirs.value) : undefined;
      const ratio = (x: number, y: number) => (y === 0 ? "n/a" : (x / y).toFixed(2));
      const rows = servers.map((server) => {
        const key = `${server.address}:${server.port}`;
        const show = (named: Named | undefined) =>
          named
            ? `${named.service}${named.product ? ` · ${named.product}` : ""}${named.version ? ` ${named.version}` : ""}`
            : "—";
        return `| ${server.name} | ${server.port} | ${server.truth.service} ${server.truth.versionTold ? server.truth.version : "(not told)"} | ${show(ours.value.get(key))} | ${theirs ? show(theirs.value.get(key)) : "n/a"} |`;
      });
      const lines = [
        "## Service identification: Sightline vs nmap -sT -sV",
        "",
        `${servers.length} real Debian servers (test/lab/real), each on its own loopback address, ${ports.length} ports scanned on each address; ${withVersion} of them tell their version on the wire. Ground truth: the Debian package. Sightline: the ports module with its default limits (identification included). nmap: \`-sT -sV -n -Pn\` (default version intensity 7).${lab.missing.length > 0 ? ` Not started: ${lab.missing.map((m) => m.name).join(", ")}.` : ""}`,
        "",
        "| | Sightline | nmap -sV | Sightline / nmap |",
        "| --- | --- | --- | --- |",
        `| services identified (right protocol) | ${a.identified} of ${servers.length} | ${b ? `${b.identified} of ${servers.length}` : "n/a"} | ${b ? ratio(a.identified, b.identified) : "n/a"} |`,
        `| with the right version (of ${withVersion} that tell it) | ${a.versioned} | ${b ? b.versioned : "n/a"} | ${b ? ratio(a.versioned, b.versioned) : "n/a"} |`,
        `| false identifications | ${a.wrong.length} | ${b ? b.wrong.length : "n/a"} | |`,
        `| wall time | ${ours.seconds.toFixed(2)} s | ${theirs ? `${theirs.seconds.toFixed(2)} s` : "n/a"} | ${theirs ? ratio(ours.seconds, theirs.seconds) : "n/a"} |`,
        "",
        ...(a.wrong.length > 0 ? [`Sightline's false identifications: ${a.wrong.join("; ")}.`, ""] : []),
        ...(b && b.wrong.length > 0 ? [`nmap's false identifications: ${b.wrong.join("; ")}.`, ""] : []),
        ...(a.missedVersion.length > 0
          ? [`Versions Sightline did not read: ${a.missedVersion.join("; ")}.`, ""]
          : []),
        ...(b && b.missedVersion.length > 0
          ? [`Versions nmap did not read: ${b.missedVersion.join("; ")}.`, ""]
          : []),
        ...(nmap ? [] : [NOT_INSTALLED("nmap", "apt-get install nmap"), ""]),
        "| server | port | truth | Sightline | nmap -sV |",
        "| --- | --- | --- | --- | --- |",
        ...rows,
      ];
      return lines.join("\n");
    } finally {
      await lab.stop();
      await Promise.all(
        odd.map((result) => (result.status === "fulfilled" ? result.value.stop() : undefined)),
      );
    }
  },
};

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await scenario.run());
