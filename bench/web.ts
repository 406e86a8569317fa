/**
 * Web probing benchmark on the lab's web applications (the lab in a process of its own): applications
 * probed per second by Sightline next to WhatWeb on the same URLs in the same run, the products each one
 * names scored against the lab's truth, and the request rate wrk reaches on one of the servers as the
 * limit. Each application is reached by address (the URL a peer can be given: the lab's names resolve
 * only through the lab's own DNS server).
 *
 * Run alone: node bench/web.ts
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { probeWebTarget } from "../src/discovery/modules/http.ts";
import { openStore } from "../src/store/database.ts";
import { migrateToLatest } from "../src/store/migrate.ts";
import { VulnerabilityRepository } from "../src/store/vulns.ts";
import type { ApplicationTruth } from "../test/lab/index.ts";
import { exec, NOT_INSTALLED, startLabProcess, timed, which } from "./lib/peer.ts";

const ROUNDS = 10;
const CONCURRENCY = 16;

interface Target {
  url: string;
  truth: ApplicationTruth;
}

/** A product as a tool named it. */
interface Named {
  name: string;
  version: string;
}

interface ToolRun {
  seconds: number;
  probes: number;
  products: Map<string, Named[]>;
}

async function sightline(targets: Target[]): Promise<ToolRun & { warmUp: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), "sightline-bench-"));
  const store = openStore({ databaseUrl: "", dataDir });
  try {
    await migrateToLatest(store); // loads the shipped vulnerability database
    const cves = new VulnerabilityRepository(store.db);
    const products = new Map<string, Named[]>();
    const jobs = Array.from({ length: ROUNDS }, () => targets).flat();
    const signal = new AbortController().signal;
    // Once per process: compile the technology rules and open the database (WhatWeb loads its plugins
    // at start too, inside its timing; this is reported apart).
    const [first] = targets;
    const { seconds: warmUp } = await timed(() =>
      probeWebTarget(
        { host: first.truth.ip, address: first.truth.ip, port: first.truth.port, scheme: first.truth.scheme },
        { signal, mayTouch: () => true, cves },
      ),
    );
    let next = 0;
    const { seconds } = await timed(() =>
      Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < jobs.length) {
            const { url, truth } = jobs[next++];
            const outcome = await probeWebTarget(
              { host: truth.ip, address: truth.ip, port: truth.port, scheme: truth.scheme },
              { signal, mayTouch: () => true, cves },
            );
            const pairs = (outcome?.entity.details?.products ?? []) as string[][];
            products.set(
              url,
              pairs.map(([name, version]) => ({ name, version })),
            );
          }
        }),
      ),
    );
    return { seconds, probes: jobs.length, products, warmUp };
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** WhatWeb's plugins that name a product Sightline's rules also name, by Sightline's name for it. */
const WHATWEB_NAMES: Record<string, string> = {
  Apache: "Apache HTTP Server",
  nginx: "Nginx",
  "Microsoft-IIS": "IIS",
  JQuery: "jQuery",
  ASP_NET: "Microsoft ASP.NET",
  "Strict-Transport-Security": "HSTS",
  "Ubuntu Linux": "Ubuntu",
  "Debian Linux": "Debian",
  Unix: "UNIX",
};
/** Plugins that report something other than a product (the page, the request, the address). */
const NOT_PRODUCTS = new Set([
  "IP",
  "Country",
  "Title",
  "HTML5",
  "Script",
  "MetaGenerator",
  "UncommonHeaders",
  "X-Powered-By",
  "Cookies",
  "HttpOnly",
  "PasswordField",
  "X-Frame-Options",
  "Index-Of",
  "RedirectLocation",
  "Email",
  "HTTPServer",
]);

interface WhatWebEntry {
  target: string;
  plugins: Record<string, { version?: string[]; string?: string[]; os?: string[] }>;
}

/** The products of one WhatWeb result: its product plugins, and the server and OS of its HTTPServer plugin. */
function whatwebProducts(entry: WhatWebEntry): Named[] {
  const named: Named[] = [];
  for (const [plugin, found] of Object.entries(entry.plugins)) {
    if (plugin === "HTTPServer") {
      for (const os of found.os ?? []) named.push({ name: WHATWEB_NAMES[os] ?? os, version: "" });
      // A server with no plugin of its own is named only here ("Kestrel", "Caddy").
      const [server = "", version = ""] = (found.string?.[0] ?? "").split(" ")[0].split("/");
      const name = WHATWEB_NAMES[server] ?? server;
      if (server && !Object.keys(entry.plugins).some((p) => (WHATWEB_NAMES[p] ?? p) === name))
        named.push({ name, version });
      continue;
    }
    if (NOT_PRODUCTS.has(plugin)) continue;
    named.push({ name: WHATWEB_NAMES[plugin] ?? plugin, version: found.version?.[0] ?? "" });
  }
  return named;
}

async function whatweb(targets: Target[]): Promise<ToolRun> {
  const dir = mkdtempSync(join(tmpdir(), "whatweb-bench-"));
  try {
    const log = join(dir, "log.json");
    const urls = Array.from({ length: ROUNDS }, () => targets.map((target) => target.url)).flat();
    const { seconds } = await timed(() =>
      exec(
        "whatweb",
        ["--no-errors", "-q", "-a", "1", "-t", String(CONCURRENCY), `--log-json=${log}`, ...urls],
        { maxBuffer: 64 * 1024 * 1024 },
      ),
    );
    const text = readFileSync(log, "utf8").trim();
    const entries = JSON.parse(
      text.startsWith("[") ? text.replace(/,\s*\{\}\s*\]$/, "]") : `[${text}]`,
    ) as WhatWebEntry[];
    const products = new Map<string, Named[]>();
    for (const entry of entries) if (entry?.target) products.set(entry.target, whatwebProducts(entry));
    return { seconds, probes: urls.length, products };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Requests per second wrk reaches on one URL: what the server and loopback allow. */
async function wrk(url: string): Promise<number> {
  const { stdout } = await exec("wrk", ["-t2", `-c${CONCURRENCY}`, "-d3s", url]);
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? Number.NaN);
}

/** The truth's products a tool named, with the version when the truth has one. */
const correct = (truth: ApplicationTruth, named: Named[]) =>
  truth.products.filter((product) =>
    named.some((n) => n.name === product.name && (product.version === "" || n.version === product.version)),
  );

const list = (named: Named[] | undefined, truth: ApplicationTruth) =>
  (named ?? [])
    .map((n) => {
      const label = `${n.name} ${n.version}`.trim();
      return correct(truth, [n]).length > 0 ? `**${label}**` : label;
    })
    .join(", ") || "—";

export const webBench = {
  name: "web",
  async run(): Promise<string> {
    const lab = await startLabProcess();
    try {
      const targets = lab.applications
        .filter((app) => app.host === app.ip)
        .map((truth) => ({ url: `${truth.scheme}://${truth.ip}:${truth.port}/`, truth }));
      const ours = await sightline(targets);
      const theirs = (await which("whatweb")) ? await whatweb(targets) : undefined;
      const plain = targets.find((target) => target.truth.scheme === "http")!;
      const limit = (await which("wrk")) ? await wrk(plain.url) : undefined;

      const rate = (run: ToolRun) => run.probes / run.seconds;
      const truthProducts = targets.reduce((sum, target) => sum + target.truth.products.length, 0);
      const score = (run: ToolRun) =>
        targets.reduce((sum, t) => sum + correct(t.truth, run.products.get(t.url) ?? []).length, 0);
      const lines = [
        "## Web probing",
        "",
        `Targets: the lab's ${targets.length} web applications reached by address (HTTP and HTTPS; the lab runs in its own process), each probed ${ROUNDS} times, ${CONCURRENCY} at a time, by each tool in turn. Products are scored against the lab's truth (${truthProducts} planted products; a version counts when the truth has one).`,
        "",
        "| Tool | Applications probed | Seconds | Applications/s | Ratio to Sightline | Correct products |",
        "|---|---|---|---|---|---|",
        `| Sightline (page, favicon and /.git/HEAD; fingerprints, CVEs, checks) | ${ours.probes} | ${ours.seconds.toFixed(2)} | ${rate(ours).toFixed(1)} | 1.00 | ${score(ours)} of ${truthProducts} |`,
        theirs
          ? `| WhatWeb \`-a 1 -t ${CONCURRENCY}\` (one request per application) | ${theirs.probes} | ${theirs.seconds.toFixed(2)} | ${rate(theirs).toFixed(1)} | ${(rate(theirs) / rate(ours)).toFixed(2)} | ${score(theirs)} of ${truthProducts} |`
          : `| WhatWeb | — | — | — | — | ${NOT_INSTALLED("WhatWeb", "apt-get install whatweb")} |`,
        "",
        `Sightline's first probe in the process, which compiles the technology rules, took ${(ours.warmUp * 1000).toFixed(0)} ms and is not in its timing; WhatWeb's start-up (about a second: Ruby and its plugins) is in its.`,
        "",
        limit !== undefined
          ? `Limit: wrk reaches ${limit.toFixed(0)} requests/s on ${plain.url} (2 threads, ${CONCURRENCY} connections). Sightline makes about 3 requests per application, so about ${(rate(ours) * 3).toFixed(0)} requests/s: ${((rate(ours) * 3) / limit).toFixed(3)} of that limit; profiled, the rest of its time goes to connection set-up (each application gets its own pool, TLS included), HTML parsing, fingerprinting (about 5,400 technology rules) and the vulnerability lookups.`
          : NOT_INSTALLED("wrk", "apt-get install wrk"),
        "",
        "Products each tool named (bold: planted, right name and version):",
        "",
        "| URL | Planted | Sightline | WhatWeb |",
        "|---|---|---|---|",
        ...targets.map(
          ({ url, truth }) =>
            `| ${url} | ${truth.products.map((p) => `${p.name} ${p.version}`.trim()).join(", ") || "—"} | ${list(ours.products.get(url), truth)} | ${theirs ? list(theirs.products.get(url), truth) : "(not installed)"} |`,
        ),
      ];
      return `${lines.join("\n")}\n`;
    } finally {
      await lab.stop();
    }
  },
};

export default webBench;

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await webBench.run());
