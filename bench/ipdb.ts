/**
 * IP database: the first lookup of a fresh process (what a worker's first netblock task pays) and the
 * memory the data keeps, for the bundled ip-location-db CSV packages (parsed at run time) and for an MMDB
 * file of GeoLite2-ASN's size (400,000 IPv4 and 80,000 IPv6 networks, written here in the MaxMind
 * DB format: GeoLite2 itself cannot be downloaded on this machine) read by mmdb-lib. Each in its own
 * process, with the garbage collected before and after.
 *
 * Run alone: node bench/ipdb.ts
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeMmdb } from "../test/helpers/mmdb-writer.ts";
import type { Scenario } from "./run.ts";

const PROBE = fileURLToPath(new URL("./lib/ipdb-probe.ts", import.meta.url));

interface Probe {
  firstV4Ms: number;
  firstV6Ms: number;
  asnV4: string;
  laterUs: number;
  heapMb: number;
  rssMb: number;
}

const probe = (files: string[]): Probe =>
  JSON.parse(execFileSync(process.execPath, ["--expose-gc", PROBE, ...files], { encoding: "utf8" }));

/** GeoLite2-ASN-sized: IPv4 /20–/24 blocks spread over the unicast space, IPv6 /32–/48 under 2000::/3. */
function syntheticAsnDatabase(): Buffer {
  const networks: Record<
    string,
    { autonomous_system_number: number; autonomous_system_organization: string }
  > = {};
  const record = (i: number) => ({
    autonomous_system_number: 1000 + (i % 60_000),
    autonomous_system_organization: `Example Network ${i % 60_000}`,
  });
  networks["8.8.8.0/24"] = { autonomous_system_number: 15169, autonomous_system_organization: "Google LLC" };
  for (let i = 0; i < 400_000; i++) {
    // Distinct /24s of 11.0.0.0–223.255.255.0 (373 is prime to the count of /24s there), none in 8.0.0.0/8.
    const n = 0x0b000000 + ((i * 373) % (213 * 65536)) * 256;
    networks[`${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.0/24`] = record(i);
  }
  networks["2001:4860::/32"] = {
    autonomous_system_number: 15169,
    autonomous_system_organization: "Google LLC",
  };
  for (let i = 0; i < 80_000; i++)
    networks[`${(0x2a00 + (i >> 8)).toString(16)}:${((i & 255) << 8).toString(16)}::/40`] = record(i);
  return writeMmdb(networks, { databaseType: "GeoLite2-ASN", description: "synthetic, for the benchmark" });
}

export const scenario: Scenario = {
  name: "ipdb",
  async run() {
    const dir = mkdtempSync(join(tmpdir(), "sightline-bench-ipdb-"));
    try {
      const file = join(dir, "asn.mmdb");
      writeFileSync(file, syntheticAsnDatabase());
      const bundled = probe([]);
      const mmdb = probe([file]);
      if (bundled.asnV4 !== "AS15169" || mmdb.asnV4 !== "AS15169")
        throw new Error(`8.8.8.8 was not found as AS15169 (${bundled.asnV4}, ${mmdb.asnV4})`);
      const row = (name: string, p: Probe) =>
        `| ${name} | ${p.firstV4Ms.toFixed(1)} | ${p.firstV6Ms.toFixed(1)} | ${p.laterUs.toFixed(2)} | ${p.heapMb.toFixed(1)} | ${p.rssMb.toFixed(1)} |`;
      return [
        "## IP database: first lookup and memory",
        "",
        `An MMDB file of GeoLite2-ASN's size (${(statSync(file).size / 2 ** 20).toFixed(1)} MB, synthetic) against the bundled ip-location-db CSV packages; each in a fresh process.`,
        "",
        "| data | first IPv4 lookup (ms) | first IPv6 lookup (ms) | later lookups (µs each) | heap kept (MB) | RSS grown (MB) |",
        "|---|---|---|---|---|---|",
        row("bundled CSV (ip-location-db)", bundled),
        row("MMDB (mmdb-lib)", mmdb),
        "",
        `First lookup (IPv4 + IPv6): MMDB takes ${((mmdb.firstV4Ms + mmdb.firstV6Ms) / (bundled.firstV4Ms + bundled.firstV6Ms)).toFixed(3)}× the bundled data's time; heap kept: ${(mmdb.heapMb / bundled.heapMb).toFixed(3)}×. The limit asked: a first lookup in milliseconds, memory in the tens of MB.`,
      ].join("\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await scenario.run());
