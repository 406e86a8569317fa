/**
 * `npm run lab`: the lab on its own, for trying Sightline by hand or from another process. Prints the
 * settings a server needs to discover it, then serves until Ctrl-C.
 */
import { startLab } from "./index.ts";

const lab = await startLab(process.env.LAB_BASE ? { base: process.env.LAB_BASE } : {});
console.log(
  `Lab up on ${lab.base}.0.0/16 with ${lab.truth.hosts.length} hosts; seed a collection with acme.test (and globex.test for its web applications).`,
);
console.log("Start Sightline against it with:");
console.log(`  SIGHTLINE_DNS_SERVERS=${lab.resolver} SIGHTLINE_SCAN_ALLOW=127.0.0.0/8 npm start`);
const stop = async () => {
  await lab.stop();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
