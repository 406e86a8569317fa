/**
 * The lab in a process of its own, so a benchmark's scanner and the servers it scans do not share an
 * event loop (a peer tool like nmap never does). Prints one JSON line — the resolver and every host with
 * its open ports, and the web applications with their truth — then serves until its standard input closes.
 *
 * `node bench/lib/lab-process.ts [hosts]`: with a number, a world of that many hosts (SSH everywhere, web,
 * TLS, mail, MySQL and Redis spread over them) in zone bench.test; without, the default lab world.
 */
import type { HostSpec, LabWorld, ServiceSpec } from "../../test/lab/index.ts";
import { startLab } from "../../test/lab/index.ts";

export function scanWorld(count: number) {
  return (base: string): LabWorld => ({
    nameservers: [],
    bruteforceWords: [],
    zones: [{ name: "bench.test", records: [] }],
    hosts: Array.from({ length: count }, (_, i): HostSpec => {
      const services: ServiceSpec[] = [{ kind: "ssh", port: 22 }];
      if (i % 2 === 0) services.push({ kind: "http", port: 80, server: "nginx", title: `host ${i}` });
      if (i % 3 === 0)
        services.push({
          kind: "https",
          port: 443,
          server: "nginx",
          title: `host ${i}`,
          certificate: { commonName: `host-${i}.bench.test`, key: "ecdsa-p256", issuer: "lab-ca" },
        });
      if (i % 4 === 1) services.push({ kind: "smtp", port: 25, hostname: `host-${i}.bench.test` });
      if (i % 5 === 2) services.push({ kind: "mysql", port: 3306, version: "8.0.36" });
      if (i % 7 === 3) services.push({ kind: "redis", port: 6379, version: "7.2.4" });
      if (i % 6 === 4) services.push({ kind: "http", port: 8080, server: "Jetty", title: `host ${i}` });
      return {
        ip: `${base}.${10 + Math.floor(i / 200)}.${(i % 200) + 1}`,
        names: [`host-${i}.bench.test`],
        services,
      };
    }),
  });
}

const count = Number(process.argv[2] ?? 0);
const lab = await startLab(count > 0 ? { world: scanWorld(count) } : {});
const truth = lab.truth;
process.stdout.write(
  `${JSON.stringify({
    resolver: lab.resolver,
    names: truth.names.map((n) => n.name),
    hosts: truth.hosts.map((h) => ({ ip: h.ip, ports: h.ports })),
    applications: truth.applications,
  })}\n`,
);
process.stdin.resume();
process.stdin.on("end", async () => {
  await lab.stop();
  process.exit(0);
});
