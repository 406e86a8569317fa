/** The OpenAPI 3.1 document, generated from the route schemas, at /api/openapi.json; a reference page at /docs. */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

export const openApi = fp(async (app: FastifyInstance) => {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Sightline API",
        version: "1",
        description:
          "Attack-surface management: collections of seeds, runs that discover what is reachable behind them, and their results. Every answer is the envelope {success, message, result}; errors add {error: {code, details}}. Timestamps are `YYYY-MM-DD HH:MM:SS UTC`; numbers marked decimal-exponent are strings like `0.443e3`.",
      },
      components: {
        securitySchemes: {
          accessKey: { type: "apiKey", in: "header", name: "SERVICE_ACCESS_KEY" },
          secretKey: { type: "apiKey", in: "header", name: "SERVICE_SECRET_KEY" },
        },
      },
      security: [{ accessKey: [], secretKey: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    uiConfig: { docExpansion: "list", deepLinking: true },
  });
  app.get("/api/openapi.json", { schema: { hide: true } }, async () => app.swagger());
});
