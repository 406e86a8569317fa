/** Builds the Fastify application: shared plugins first, then one plugin per resource. */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyInstance } from "fastify";
import { authentication } from "./auth.ts";
import { collectionRoutes } from "./collections.ts";
import type { Services } from "./context.ts";
import { errorHandling, schemaValidators } from "./errors.ts";
import { type HealthCheck, healthRoutes } from "./health.ts";
import { openApi } from "./openapi.ts";
import { ErrorEnvelope } from "./schemas.ts";
import { webRoutes } from "./web.ts";

export interface AppOptions {
  logger?: boolean | object;
  healthChecks?: Record<string, HealthCheck>;
  /** Resource plugins added by later layers (runs, results), registered under /api/collections. */
  collectionPlugins?: Array<(app: FastifyInstance) => Promise<void>>;
  /** Folder of the built dashboard; default src/web/dist. */
  webRoot?: string;
}

export async function buildApp(services: Services, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: services.config.bodyLimit,
    requestIdHeader: "x-request-id",
    ajv: { customOptions: { removeAdditional: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorate("services", services);
  schemaValidators(app);
  app.addSchema(ErrorEnvelope);

  // An empty JSON body means "no body" (POST /schedule is sent with none), not a parse error.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    if (typeof body === "string" && body.trim() === "") return done(null, undefined);
    parseJson(request, body.toString(), done);
  });

  await app.register(errorHandling);
  await app.register(openApi);
  await app.register(authentication);
  await app.register(healthRoutes, { checks: options.healthChecks });
  await app.register(
    async (api) => {
      await api.register(collectionRoutes);
      for (const plugin of options.collectionPlugins ?? []) await api.register(plugin);
    },
    { prefix: "/api/collections" },
  );
  await app.register(webRoutes, { root: options.webRoot });
  return app;
}
