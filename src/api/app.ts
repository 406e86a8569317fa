/** Builds the Fastify application: shared plugins first, then one plugin per resource. */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyInstance } from "fastify";
import { authentication } from "./auth.ts";
import { collectionRoutes } from "./collections.ts";
import type { Services } from "./context.ts";
import { clientError, errorHandling, frameworkError, schemaValidators } from "./errors.ts";
import { type HealthCheck, healthRoutes } from "./health.ts";
import { jsonBodies } from "./json-body.ts";
import { type LogSettings, loggerOptions, requestId, requestIds } from "./logging.ts";
import { MetricsRegistry, metricsEndpoint } from "./metrics.ts";
import { openApi } from "./openapi.ts";
import { resultRoutes } from "./results.ts";
import { ErrorEnvelope } from "./schemas.ts";
import { teamRoutes } from "./teams.ts";
import { webRoutes } from "./web.ts";
import { webhookRoutes } from "./webhooks.ts";

export interface AppOptions {
  logger?: boolean | LogSettings;
  /** A registry made beforehand, so parts started before the app can register gauges; default: a new one. */
  metrics?: MetricsRegistry;
  healthChecks?: Record<string, HealthCheck>;
  /** Resource plugins added by later layers (runs, results), registered under /api/collections. */
  collectionPlugins?: Array<(app: FastifyInstance) => Promise<void>>;
  /** Folder of the built dashboard; default src/web/dist. */
  webRoot?: string;
}

export async function buildApp(services: Services, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(options.logger),
    bodyLimit: services.config.bodyLimit,
    genReqId: requestId,
    trustProxy: services.config.trustProxy.length > 0 ? services.config.trustProxy : false,
    // A request must arrive whole within two minutes: a client trickling bytes cannot hold a connection
    // (or a graceful shutdown) forever.
    requestTimeout: 120_000,
    // During shutdown, requests on open connections are still answered (with Connection: close)
    // rather than refused with a body outside the envelope.
    return503OnClosing: false,
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    ajv: { customOptions: { removeAdditional: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorate("services", services);
  schemaValidators(app);
  app.addSchema(ErrorEnvelope);

  await app.register(errorHandling);
  await app.register(requestIds);
  await app.register(jsonBodies);
  await app.register(metricsEndpoint, {
    metrics: options.metrics ?? new MetricsRegistry(),
    token: services.config.metricsToken,
  });
  await app.register(openApi);
  await app.register(authentication);
  await app.register(healthRoutes, { checks: options.healthChecks });
  await app.register(
    async (api) => {
      await api.register(collectionRoutes);
      await api.register(resultRoutes);
      await api.register(webhookRoutes);
      for (const plugin of options.collectionPlugins ?? []) await api.register(plugin);
    },
    { prefix: "/api/collections" },
  );
  await app.register(teamRoutes, { prefix: "/api/teams" });
  await app.register(webRoutes, { root: options.webRoot });
  return app;
}
