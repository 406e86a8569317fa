/**
 * `npm run lab`: the lab on its own, for trying Sightline by hand or from another process. Prints the
 * commands of the tour, each working as printed, then serves until Ctrl-C.
 */
import { startLab } from "./index.ts";

const lab = await startLab(process.env.LAB_BASE ? { base: process.env.LAB_BASE } : {});
const lines = [
  `Lab up on ${lab.base}.0.0/16 with ${lab.truth.hosts.length} hosts (domains acme.test, globex.test and friends).`,
  "",
  "1. In another terminal, stop any Sightline already running there, then start one against the lab:",
  `   SIGHTLINE_DNS_SERVERS=${lab.resolver} SIGHTLINE_SCAN_ALLOW=127.0.0.0/8 SIGHTLINE_PORTS=${lab.ports} npm start`,
  "   (loopback is denied to discovery by default; only the lab's own ports are scanned, so other servers",
  "   on this machine stay out of the results)",
  "2. In a third terminal, export the two keys that server printed on its first start:",
  "   export SERVICE_ACCESS_KEY=… SERVICE_SECRET_KEY=…",
  "3. Seed a collection with the lab's domains (globex.test holds its web applications) and run it:",
  "   npm run -s sightline -- collections create lab --seed Domain:acme.test --seed Domain:globex.test --scan-rate on_demand",
  "   npm run -s sightline -- run lab --watch",
  "   npm run -s sightline -- results lab hosts",
];
for (const line of lines) console.log(line);
const stop = async () => {
  await lab.stop();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
