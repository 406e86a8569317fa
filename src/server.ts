/** `sightline serve`: the API server with its embedded defaults. */
import type { FastifyInstance } from "fastify";
import { buildApp } from "./api/app.ts";
import type { Services } from "./api/context.ts";
import type { LogSettings } from "./api/logging.ts";
import type { Config } from "./config.ts";
import { openServices } from "./services.ts";
import { bootstrapFirstUser } from "./store/bootstrap.ts";

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  url: string;
  close(): Promise<void>;
}

export async function startServer(
  config: Config,
  options: { logger?: boolean | LogSettings; announce?: (line: string) => void } = {},
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
  const app = await buildApp(services, {
    logger: options.logger ?? false,
  });
  const address = await app.listen({ port: config.port, host: config.host });
  const url = address.replace("0.0.0.0", "127.0.0.1").replace("[::]", "127.0.0.1");
  announce(`Sightline is listening on ${url} (store: ${services.store.dialect} ${services.store.location}).`);
  return {
    app,
    services,
    url,
    async close() {
      await app.close();
      await services.store.close();
    },
  };
}
