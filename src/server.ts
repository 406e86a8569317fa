/** `sightline serve`: the API server with its embedded defaults. */
import type { FastifyInstance } from "fastify";
import { buildApp } from "./api/app.ts";
import type { Services } from "./api/context.ts";
import type { LogSettings } from "./api/logging.ts";
import { MetricsRegistry } from "./api/metrics.ts";
import { runRoutes } from "./api/runs.ts";
import type { Config } from "./config.ts";
import { createRunSystem, type RunSystem } from "./runs/runtime.ts";
import type { RunWork } from "./runs/work.ts";
import { loadRunWork } from "./runs/work-loader.ts";
import { openServices } from "./services.ts";
import { bootstrapFirstUser } from "./store/bootstrap.ts";
import { createWebhookSystem } from "./webhooks/system.ts";

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
    /** What runs do; default: SIGHTLINE_RUN_WORK_MODULE or the built-in work (src/runs/default-work.ts). */
    runWork?: (services: Services) => RunWork | Promise<RunWork>;
  } = {},
): Promise<RunningServer> {
  const services = await openServices(config);
  const announce = options.announce ?? (() => {});
  const first = await bootstrapFirstUser(services.accounts, config);
  if (first) {
    announce(`Created account "${first.account}", team "${first.team}" and admin user "${first.user}".`);
    if (first.generated) {
      announce("Your API keys (shown once; the secret is stored only as a hash):");
      announce(`  SERVICE_ACCESS_KEY=${first.key.accessKey}`);
      announce(`  SERVICE_SECRET_KEY=${first.key.secretKey}`);
    } else {
      announce("Using the key pair from SIGHTLINE_BOOTSTRAP_ACCESS_KEY / SIGHTLINE_BOOTSTRAP_SECRET_KEY.");
    }
  }
  const metrics = new MetricsRegistry();
  const webhooks = createWebhookSystem(services);
  const runs = createRunSystem(services, {
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
  const url = address.replace("0.0.0.0", "127.0.0.1").replace("[::]", "127.0.0.1");
  announce(`Sightline is listening on ${url} (store: ${services.store.dialect} ${services.store.location}).`);
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
