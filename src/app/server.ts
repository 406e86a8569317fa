/** `sightline serve`: the API server with its embedded defaults. */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../api/app.ts";
import type { LogSettings } from "../api/logging.ts";
import { runRoutes } from "../api/runs.ts";
import { type Config, ConfigError } from "../core/config.ts";
import type { RunWork } from "../core/run-work.ts";
import { createRunSystem, type RunSystem } from "../runs/runtime.ts";
import { bootstrapFirstUser } from "../store/bootstrap.ts";
import type { Services } from "../store/services.ts";
import { openServices } from "../store/services.ts";
import { createWebhookSystem } from "../webhooks/system.ts";
import { MetricsRegistry } from "./metrics.ts";
import { loadRunWork } from "./work-loader.ts";

/** The first start's generated keys, in a file of mode 0600 in the data directory; answers its path. */
function writeFirstStartKeys(dataDir: string, lines: string[]): string {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "first-start-keys.txt");
  rmSync(file, { force: true });
  writeFileSync(file, `${lines.join("\n")}\n`, { mode: 0o600, flag: "wx" });
  return file;
}

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  runs: RunSystem;
  url: string;
  close(): Promise<void>;
}

export async function startServer(
  config: Config,
  options: {
    logger?: boolean | LogSettings;
    announce?: (line: string) => void;
    /** Whether a person watches standard output (default: process.stdout.isTTY); only then are generated keys printed. */
    terminal?: boolean;
    /** What runs do; default: SIGHTLINE_RUN_WORK_MODULE or the built-in work (src/runs/default-work.ts). */
    runWork?: (services: Services) => RunWork | Promise<RunWork>;
  } = {},
): Promise<RunningServer> {
  if (config.redisUrl && !config.databaseUrl)
    // Runs on Redis are executed by `sightline worker` processes, which cannot reach a SQLite file here.
    throw new ConfigError(
      "REDIS_URL hands runs to sightline worker processes, and a worker must share the server's database: set DATABASE_URL to its PostgreSQL, or unset REDIS_URL to run discovery in this process",
    );
  // A database that is down at start is waited for, as it is during a run: the process never gives up on it.
  const services = await openServices(config, { waiting: (message) => console.error(message) });
  const announce = options.announce ?? (() => {});
  const first = await bootstrapFirstUser(services.accounts, config);
  if (first) {
    announce(`Created account "${first.account}", team "${first.team}" and admin user "${first.user}".`);
    if (first.generated) {
      const lines = [
        `SERVICE_ACCESS_KEY=${first.key.accessKey}`,
        `SERVICE_SECRET_KEY=${first.key.secretKey}`,
      ];
      // Standard output under systemd, Docker or Kubernetes is a log that is kept: the secret goes there
      // only when a person is watching a terminal; otherwise to a file only this user can read.
      if (options.terminal ?? process.stdout.isTTY) {
        announce("Your API keys (shown once; the secret is stored only as a hash):");
        for (const line of lines) announce(`  ${line}`);
      } else {
        const file = writeFirstStartKeys(config.dataDir, lines);
        announce(
          `Your API keys (SERVICE_ACCESS_KEY and SERVICE_SECRET_KEY) were written to ${file} (mode 0600, readable only by this user): read them with cat (in a container, docker compose exec server cat ${file}), keep them somewhere safe and delete the file.`,
        );
      }
    } else {
      announce("Using the key pair from SIGHTLINE_BOOTSTRAP_ACCESS_KEY / SIGHTLINE_BOOTSTRAP_SECRET_KEY.");
    }
  } else if (config.bootstrapAccessKey && config.bootstrapSecretKey) {
    // Installed before chosen secrets were stored with scrypt: store it again, now that it is shown to match.
    if (await services.accounts.upgradeChosenSecret(config.bootstrapAccessKey, config.bootstrapSecretKey))
      announce("The bootstrap secret is now stored with scrypt.");
  }
  const metrics = new MetricsRegistry();
  const webhooks = createWebhookSystem(services);
  const runs = await createRunSystem(services, {
    role: "server",
    work: await (options.runWork ?? loadRunWork)(services),
    metrics,
    hooks: [webhooks.hook],
  });
  const app = await buildApp(services, {
    metrics,
    logger: options.logger ?? false,
    healthChecks: runs.healthChecks,
    collectionPlugins: [runRoutes(runs.coordinator)],
    cancelRun: (runId, reason) => runs.coordinator.cancel(runId, reason),
  });
  let address: string;
  try {
    address = await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await app.close();
    await services.store.close();
    throw error;
  }
  const log = app.log.child({ component: "runs" });
  await runs.start({
    info: (message) => log.info(message),
    warn: (message) => log.warn(message),
    error: (message) => log.error(message),
  });
  webhooks.start({ warn: (message) => app.log.child({ component: "webhooks" }).warn(message) });
  // The URL to open: on a wildcard host, loopback (Fastify would name some interface of its choosing).
  const { port } = app.server.address() as AddressInfo;
  const wildcard = ["0.0.0.0", "::", "[::]"].includes(config.host);
  const host = wildcard ? "127.0.0.1" : config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = address.startsWith("https:") ? `https://${host}:${port}` : `http://${host}:${port}`;
  announce(
    `Sightline is listening on ${url} — open it in a browser for the dashboard${wildcard ? ` (it listens on every interface: HOST=${config.host})` : ""}. Store: ${services.store.dialect} ${services.store.location}.`,
  );
  return {
    app,
    services,
    runs,
    url,
    async close() {
      await app.close();
      await runs.close();
      await webhooks.close();
      await services.store.close();
    },
  };
}
