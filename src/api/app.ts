/** Builds the Fastify application: shared plugins first, then one plugin per resource. */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyInstance, LogController } from "fastify";
import type { MetricsExposition } from "../core/metrics.ts";
import { authentication } from "./auth.ts";
import { collectionRoutes } from "./collections.ts";
import { metricsEndpoint } from "./metrics.ts";
import "./context.ts";
import type { HealthCheck } from "../core/health.ts";
import type { Services } from "../store/services.ts";
import { clientError, errorHandling, frameworkError, schemaValidators } from "./errors.ts";
import { exportRoutes } from "./export.ts";
import { healthRoutes } from "./health.ts";
import { jsonBodies } from "./json-body.ts";
import { type LogSettings, loggerOptions, requestId, requestIds, requestLogs } from "./logging.ts";
import { openApi } from "./openapi.ts";
import { resultRoutes } from "./results.ts";
import { ErrorEnvelope } from "./schemas.ts";
import { sourceRoutes } from "./sources.ts";
import { teamRoutes } from "./teams.ts";
import { webRoutes } from "./web.ts";
import { webhookRoutes } from "./webhooks.ts";

export interface AppOptions {
  logger?: boolean | LogSettings;
  /** The process's metrics registry (src/app/metrics.ts), made beforehand so parts started earlier register gauges. */
  metrics: MetricsExposition;
  healthChecks?: Record<string, HealthCheck>;
  /** Resource plugins added by later layers (runs, results), registered under /api/collections. */
  collectionPlugins?: Array<(app: FastifyInstance) => Promise<void>>;
  /** Folder of the built dashboard; default src/web/dist. */
  webRoot?: string;
  /** Cancels a run (the run machinery's), so deleting a collection stops its work first. */
  cancelRun?: (runId: number, reason: string) => Promise<unknown>;
}

export async function buildApp(services: Services, options: AppOptions): Promise<FastifyInstance> {
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
    // Two lines per request at info drowned everything else: requestLogs writes them at debug.
    logController: new LogController({ disableRequestLogging: true }),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorate("services", services);
  app.decorate("cancelRun", options.cancelRun);
  schemaValidators(app);
  app.addSchema(ErrorEnvelope);

  await app.register(errorHandling);
  await app.register(requestIds);
  await app.register(requestLogs);
  await app.register(jsonBodies);
  await app.register(metricsEndpoint, {
    metrics: options.metrics,
    token: services.config.metricsToken,
  });
  await app.register(openApi);
  await app.register(authentication);
  await app.register(healthRoutes, { checks: options.healthChecks });
  await app.register(
    async (api) => {
      await api.register(collectionRoutes);
      await api.register(resultRoutes);
      await api.register(exportRoutes);
      await api.register(webhookRoutes);
      for (const plugin of options.collectionPlugins ?? []) await api.register(plugin);
    },
    { prefix: "/api/collections" },
  );
  await app.register(teamRoutes, { prefix: "/api/teams" });
  await app.register(sourceRoutes, { prefix: "/api/sources" });
  await app.register(webRoutes, { root: options.webRoot });
  return app;
}
