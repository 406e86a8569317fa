/** GET /healthz (no authentication): is the process up, and can it reach what it depends on. */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { sql } from "kysely";
import { Type } from "typebox";

const Check = Type.Object({ ok: Type.Boolean(), detail: Type.Optional(Type.String()) });

/** Extra dependency checks (the queue adds Redis); each answers quickly and never throws. */
export type HealthCheck = () => Promise<{ ok: boolean; detail?: string }>;

export const healthRoutes: FastifyPluginAsyncTypebox<{ checks?: Record<string, HealthCheck> }> = async (
  app,
  options,
) => {
  const checks: Record<string, HealthCheck> = {
    database: async () => {
      try {
        await sql`select 1`.execute(app.services.store.db);
        return { ok: true, detail: app.services.store.dialect };
      } catch (error) {
        return { ok: false, detail: `database unreachable: ${(error as Error).message}` };
      }
    },
    ...options.checks,
  };
  app.get(
    "/healthz",
    {
      schema: {
        tags: ["Operations"],
        summary: "Liveness and dependency health (no authentication)",
        response: {
          200: Type.Object({ status: Type.Literal("ok"), checks: Type.Record(Type.String(), Check) }),
          503: Type.Object({ status: Type.Literal("degraded"), checks: Type.Record(Type.String(), Check) }),
        },
      },
    },
    async (_request, reply) => {
      const results = Object.fromEntries(
        await Promise.all(
          Object.entries(checks).map(async ([name, check]) => [name, await check()] as const),
        ),
      );
      const healthy = Object.values(results).every((r) => r.ok);
      return reply.status(healthy ? 200 : 503).send({ status: healthy ? "ok" : "degraded", checks: results });
    },
  );
};
