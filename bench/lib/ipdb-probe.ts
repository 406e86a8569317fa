/**
 * One fresh process's first IP database lookups, for bench/ipdb.ts: `node --expose-gc bench/lib/ipdb-probe.ts
 * [file.mmdb …]` (no file: the bundled data) prints JSON with the time of the first IPv4 and IPv6 lookups,
 * the time of later ones, and the heap and resident memory they left.
 */
import { lookupNetwork, useIpDatabases } from "../../src/discovery/ip-database.ts";

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const files = process.argv.slice(2);
gc();
const before = { heap: process.memoryUsage().heapUsed, rss: process.memoryUsage.rss() };
useIpDatabases({ ipDatabase: files, dataDir: "/nonexistent" });
const time = (address: string) => {
  const start = process.hrtime.bigint();
  const found = lookupNetwork(address);
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, asn: found?.asn ?? "" };
};
const firstV4 = time("8.8.8.8");
const firstV6 = time("2001:4860:4860::8888");
const start = process.hrtime.bigint();
const ROUNDS = 100_000;
for (let i = 0; i < ROUNDS; i++)
  lookupNetwork(`${((i * 7919) % 223) + 1}.${i % 256}.${(i >> 8) % 256}.${i % 200}`);
const laterUs = Number(process.hrtime.bigint() - start) / 1e3 / ROUNDS;
gc();
const after = { heap: process.memoryUsage().heapUsed, rss: process.memoryUsage.rss() };
console.log(
  JSON.stringify({
    firstV4Ms: firstV4.ms,
    firstV6Ms: firstV6.ms,
    asnV4: firstV4.asn,
    laterUs,
    heapMb: (after.heap - before.heap) / 2 ** 20,
    rssMb: (after.rss - before.rss) / 2 ** 20,
  }),
);
