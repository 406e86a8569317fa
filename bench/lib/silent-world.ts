/**
 * Run by bench/silent.ts inside a network namespace of its own, where 10.251.0.0/16 is routed to a
 * neighbour that does not exist: every address there is silent (no answer, no refusal), as the unused
 * addresses of a real block. Scans one block of them with an embedded server — host discovery on, then
 * off — and with nmap -sT (its host discovery on), the top 100 ports each, and prints the times as JSON.
 */
import { startServer } from "../../src/app/server.ts";
import { loadConfig } from "../../src/core/config.ts";
import { createTestStore } from "../../test/helpers/stores.ts";
import { callApi } from "./api.ts";
import { exec, which } from "./peer.ts";

const BLOCK = process.argv[2] ?? "10.251.0.0/26";
const KEYS = { access: "SLBENCHSILENTKEY01", secret: "bench-silent-secret-0123456789abcdef" };

async function sightline(hostDiscovery: "on" | "off"): Promise<{ seconds: number; tasks: number }> {
  const store = await createTestStore("sqlite");
  const server = await startServer(
    loadConfig(process.env, {
      ...store.config,
      port: 0,
      host: "127.0.0.1",
      logLevel: "silent",
      bootstrapAccessKey: KEYS.access,
      bootstrapSecretKey: KEYS.secret,
      dnsServers: ["127.0.0.1"],
      scanAllow: ["10.251.0.0/16"],
      hostDiscovery,
      schedulerIntervalSeconds: 86_400,
    }),
  );
  try {
    const api = (method: string, path: string, body?: unknown) =>
      callApi(server.url, KEYS, method, path, body);
    await api("POST", "/api/collections", { name: "silent", seeds: [{ type: "NetBlock", name: BLOCK }] });
    const started = performance.now();
    const { id } = (await api("POST", "/api/collections/silent/schedule")) as { id: string };
    for (;;) {
      const run = (await api("GET", `/api/collections/silent/runs/${id}`)) as {
        status: string;
        tasks_total: number;
        error?: string;
      };
      if (run.status === "finished")
        return { seconds: (performance.now() - started) / 1000, tasks: run.tasks_total };
      if (!["queued", "started"].includes(run.status))
        throw new Error(`the run ended ${run.status}: ${run.error}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await server.close();
    await store.drop();
  }
}

async function nmap(): Promise<number | undefined> {
  const binary = await which("nmap");
  if (!binary) return undefined;
  const started = performance.now();
  await exec(binary, ["-sT", "-n", "-T4", "--top-ports", "100", "--open", "-oG", "-", BLOCK]);
  return (performance.now() - started) / 1000;
}

const on = await sightline("on");
const off = await sightline("off");
console.log(JSON.stringify({ block: BLOCK, on, off, nmap: await nmap() }));
