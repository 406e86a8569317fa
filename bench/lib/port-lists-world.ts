/**
 * Run by bench/port-lists.ts inside a network namespace of its own (test/lab/silent-network.ts): a /20
 * whose last /24 is in use — every address refuses every port at once, one in 4 serves HTTP on 80 and
 * one in 8 greets as SSH on 22 — and whose other 15 /24s are silent, as the unused space of a real
 * block. Scans it with an embedded server, host discovery on, over the `top100` and `top1000` port
 * lists, and with nmap -sT -T4 --top-ports 100 and 1000 (its host discovery on; not with
 * SIGHTLINE_BENCH_PORT_LISTS_NMAP=off); prints the times as JSON.
 */
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server } from "node:net";
import { ANSWERING_NET, startSilentResolver } from "../../test/lab/silent-network.ts";
import { exec, which } from "./peer.ts";
import { scanBlock } from "./scan-block.ts";

const BLOCK = process.argv[2] ?? "10.251.240.0/20";
const used = ANSWERING_NET.split("/")[0].split(".").slice(0, 3).join(".");

const servers: Server[] = [];
const listen = (server: Server, port: number, host: string) =>
  new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
    servers.push(server);
  });
for (let i = 0; i < 256; i += 4) {
  const host = `${used}.${i}`;
  await listen(
    createHttpServer((_request, response) =>
      response.writeHead(200, { server: "nginx" }).end("<title>x</title>"),
    ),
    80,
    host,
  );
  if (i % 8 === 0)
    await listen(
      createServer((socket) => {
        socket.on("error", () => {}); // a scanner resets what it has read
        socket.end("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n");
      }),
      22,
      host,
    );
}

async function nmap(top: number): Promise<number | undefined> {
  const binary = await which("nmap");
  if (!binary) return undefined;
  const started = performance.now();
  await exec(binary, ["-sT", "-n", "-T4", "--top-ports", String(top), "--open", "-oG", "-", BLOCK]);
  return (performance.now() - started) / 1000;
}

const resolver = await startSilentResolver();
const scan = async (ports: string) => {
  const result = await scanBlock(BLOCK, { scanAllow: ["10.251.0.0/16"], hostDiscovery: "on", ports });
  console.error(`${ports}: ${result.seconds.toFixed(1)} s, ${result.tasks} tasks`);
  return result;
};
const top100 = await scan("top100");
const top1000 = await scan("top1000");
// nmap's host discovery waits long on silent space (over 18 minutes for a /20 here): it can be left out.
const withNmap = process.env.SIGHTLINE_BENCH_PORT_LISTS_NMAP !== "off";
const nmap100 = withNmap ? await nmap(100) : undefined;
const nmap1000 = withNmap ? await nmap(1000) : undefined;
console.log(JSON.stringify({ block: BLOCK, used: `${used}.0/24`, top100, top1000, nmap100, nmap1000 }));
for (const server of servers) server.close();
await resolver.close();
