/**
 * Web probing benchmark: applications probed per second by Sightline next to WhatWeb on the same
 * URLs in the same run, with the products each one named, and the request rate wrk reaches on one of
 * the servers as the ceiling. Targets are the lab's web servers when the lab is available, otherwise
 * a set of local servers with planted products started here (said so in the report).
 *
 * Run alone: node bench/web.ts
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { probeWebTarget } from "../src/discovery/http.ts";
import { openStore } from "../src/store/database.ts";
import { migrateToLatest } from "../src/store/migrate.ts";
import { VulnerabilityRepository } from "../src/vulns/repository.ts";

const run = promisify(execFile);

interface Target {
  url: string;
  host: string;
  port: number;
}

/** Planted web applications: a server header, a generator and a script each, like the lab's hosts. */
const PLANTED: Array<{ headers: Record<string, string>; body: string }> = [
  {
    headers: { server: "Apache/2.4.49 (Unix)", "x-powered-by": "PHP/7.3.10" },
    body: '<title>Intranet</title><meta name="generator" content="WordPress 5.8.2">',
  },
  {
    headers: { server: "nginx/1.18.0" },
    body: '<title>Shop</title><script src="/js/jquery-3.4.1.min.js"></script>',
  },
  { headers: { server: "Microsoft-IIS/10.0", "x-powered-by": "ASP.NET" }, body: "<title>Portal</title>" },
  { headers: { server: "Apache/2.4.57 (Debian)" }, body: "<title>Index of /</title><h1>Index of /</h1>" },
  { headers: { server: "nginx" }, body: "<title>Welcome to nginx!</title>" },
  { headers: { server: "lighttpd/1.4.59" }, body: "<title>Status</title>" },
  {
    headers: { server: "Apache/2.4.50 (Unix)" },
    body: '<title>Docs</title><script src="/static/bootstrap-4.6.0.min.js"></script>',
  },
  { headers: { server: "openresty/1.19.3.1" }, body: "<title>API gateway</title>" },
];

async function startPlanted(): Promise<{ targets: Target[]; servers: Server[] }> {
  const servers: Server[] = [];
  const targets: Target[] = [];
  for (const app of PLANTED) {
    const server = createServer((request, response) => {
      if (request.url !== "/") return response.writeHead(404, app.headers).end("not found");
      response.writeHead(200, { "content-type": "text/html", ...app.headers });
      response.end(`<!doctype html><html><head>${app.body}</head><body>hello</body></html>`);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    servers.push(server);
    targets.push({ url: `http://127.0.0.1:${port}/`, host: "127.0.0.1", port });
  }
  return { targets, servers };
}

async function which(tool: string): Promise<boolean> {
  try {
    await run("sh", ["-c", `command -v ${tool}`]);
    return true;
  } catch {
    return false;
  }
}

async function sightlineRate(targets: Target[], rounds: number, concurrency: number) {
  const dataDir = mkdtempSync(join(tmpdir(), "sightline-bench-"));
  const store = openStore({ databaseUrl: "", dataDir });
  await migrateToLatest(store);
  const cves = new VulnerabilityRepository(store.db);
  const products = new Map<string, string[]>();
  const jobs = Array.from({ length: rounds }, () => targets).flat();
  const signal = new AbortController().signal;
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < jobs.length) {
        const target = jobs[next++];
        const outcome = await probeWebTarget(
          { host: target.host, address: target.host, port: target.port, scheme: "http" },
          { signal, mayTouch: () => true, cves },
        );
        const names =
          (outcome?.entity.details?.products as string[][] | undefined)?.map((p) => p.join(" ").trim()) ?? [];
        products.set(target.url, names);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
  return { rate: jobs.length / seconds, seconds, probes: jobs.length, products };
}

async function whatwebRate(targets: Target[], rounds: number, concurrency: number) {
  const dir = mkdtempSync(join(tmpdir(), "whatweb-bench-"));
  const log = join(dir, "log.json");
  const urls = Array.from({ length: rounds }, () => targets.map((target) => target.url)).flat();
  const started = performance.now();
  await run(
    "whatweb",
    ["--no-errors", "-q", "-a", "1", "-t", String(concurrency), `--log-json=${log}`, ...urls],
    {
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const seconds = (performance.now() - started) / 1000;
  const products = new Map<string, string[]>();
  const text = readFileSync(log, "utf8").trim();
  const entries = JSON.parse(
    text.startsWith("[") ? text.replace(/,\s*\{\}\s*\]$/, "]") : `[${text}]`,
  ) as Array<{
    target: string;
    plugins: Record<string, { version?: string[]; string?: string[] }>;
  }>;
  for (const entry of entries) {
    if (!entry?.target) continue;
    products.set(
      entry.target,
      Object.entries(entry.plugins)
        .filter(
          ([name]) =>
            !["IP", "Country", "Title", "HTTPServer", "Script", "MetaGenerator", "UncommonHeaders"].includes(
              name,
            ),
        )
        .map(([name, plugin]) => `${name} ${plugin.version?.[0] ?? ""}`.trim()),
    );
  }
  rmSync(dir, { recursive: true, force: true });
  return { rate: urls.length / seconds, seconds, probes: urls.length, products };
}

async function wrkRate(url: string): Promise<number> {
  const { stdout } = await run("wrk", ["-t2", "-c16", "-d3s", url]);
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? Number.NaN);
}

async function labTargets(): Promise<{ targets: Target[]; stop(): Promise<void> } | undefined> {
  try {
    const labModule = "../test/lab/index.ts";
    // biome-ignore lint/suspicious/noExplicitAny: the lab is optional here and typed where it lives
    const { startLab } = (await import(labModule)) as any;
    const lab = await startLab();
    const services = (lab.truth.services ?? []) as Array<{
      ip: string;
      port: number;
      service: string;
      tls?: boolean;
    }>;
    const targets = services
      .filter((service) => service.service === "http" && !service.tls)
      .map((service) => ({
        url: `http://${service.ip}:${service.port}/`,
        host: service.ip,
        port: service.port,
      }));
    if (targets.length === 0) {
      await lab.stop();
      return undefined;
    }
    return { targets, stop: () => lab.stop() };
  } catch {
    return undefined;
  }
}

export const webBench = {
  name: "web",
  async run(): Promise<string> {
    const lab = await labTargets();
    const planted = lab ? undefined : await startPlanted();
    const targets = lab?.targets ?? planted?.targets ?? [];
    const source = lab
      ? `the lab's ${targets.length} plain-HTTP web servers`
      : `${targets.length} local web servers with planted products (the lab was not available)`;
    const rounds = 25;
    const concurrency = 16;
    const lines: string[] = [
      "## Web probing",
      "",
      `Targets: ${source}; each probed ${rounds} times, ${concurrency} at a time.`,
      "",
    ];
    try {
      const sightline = await sightlineRate(targets, rounds, concurrency);
      const hasWhatweb = await which("whatweb");
      const hasWrk = await which("wrk");
      const whatweb = hasWhatweb ? await whatwebRate(targets, rounds, concurrency) : undefined;
      const ceiling = hasWrk ? await wrkRate(targets[0].url) : undefined;
      lines.push(
        "| Tool | Applications probed | Seconds | Applications/s | Ratio to Sightline |",
        "|---|---|---|---|---|",
      );
      lines.push(
        `| Sightline (probe, favicon, .git check, fingerprint, CVEs) | ${sightline.probes} | ${sightline.seconds.toFixed(2)} | ${sightline.rate.toFixed(1)} | 1.00 |`,
      );
      if (whatweb)
        lines.push(
          `| WhatWeb (-a 1, ${concurrency} threads) | ${whatweb.probes} | ${whatweb.seconds.toFixed(2)} | ${whatweb.rate.toFixed(1)} | ${(whatweb.rate / sightline.rate).toFixed(2)} |`,
        );
      else lines.push("| WhatWeb | — | — | — | missing: `apt-get install whatweb` |");
      lines.push("");
      if (ceiling !== undefined)
        lines.push(
          `Ceiling: wrk reaches ${ceiling.toFixed(0)} requests/s on ${targets[0].url} (2 threads, 16 connections); Sightline makes about 3 requests per application (page, favicon, /.git/HEAD), so ${(sightline.rate * 3).toFixed(0)} requests/s, ${((sightline.rate * 3) / ceiling).toFixed(2)} of the ceiling.`,
        );
      else lines.push("Ceiling: wrk is missing (`apt-get install wrk`); no request-rate limit was measured.");
      lines.push("", "| URL | Sightline products | WhatWeb products |", "|---|---|---|");
      for (const target of targets) {
        const ours = sightline.products.get(target.url)?.join(", ") || "—";
        const theirs = whatweb ? whatweb.products.get(target.url)?.join(", ") || "—" : "(WhatWeb missing)";
        lines.push(`| ${target.url} | ${ours} | ${theirs} |`);
      }
    } finally {
      await lab?.stop();
      for (const server of planted?.servers ?? []) {
        server.closeAllConnections();
        server.close();
      }
    }
    return `${lines.join("\n")}\n`;
  },
};

export default webBench;

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await webBench.run());
