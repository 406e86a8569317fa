/** GET /healthz (no authentication): is the process up, and can it reach what it depends on. */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { sql } from "kysely";
import { Type } from "typebox";
import { buildInfo } from "../core/build-info.ts";
import type { HealthCheck } from "../core/health.ts";

/** The release and commit in the answer (the version of package.json; the commit or "unknown"). */
const BUILD = {
  version: Type.String({ description: "The release the server runs (package.json's version)." }),
  commit: Type.String({ description: "The commit the server was built from, or unknown." }),
};

const Check = Type.Object({ ok: Type.Boolean() });

export const healthRoutes: FastifyPluginAsyncTypebox<{ checks?: Record<string, HealthCheck> }> = async (
  app,
  options,
) => {
  const checks: Record<string, HealthCheck> = {
    database: async () => {
      try {
        await sql`select 1`.execute(app.services.store.db);
        return { ok: true };
      } catch (error) {
        return { ok: false, detail: `database unreachable: ${(error as Error).message}` };
      }
    },
    ...options.checks,
  };
  // Checks failing now: a failure is logged as a warning when it starts, and each poll after it only at
  // debug (a load balancer polling every few seconds through an outage would flood the log), a recovery
  // once at info.
  const failing = new Set<string>();
  app.get(
    "/healthz",
    {
      schema: {
        tags: ["Operations"],
        summary: "Liveness and dependency health (no authentication)",
        // Public: overrides the document's default of needing the key pair.
        security: [],
        description:
          "Whether each dependency answers, without internals (why one does not is in the server log), and the release and commit the server runs.",
        response: {
          200: Type.Object({
            status: Type.Literal("ok"),
            checks: Type.Record(Type.String(), Check),
            ...BUILD,
          }),
          503: Type.Object({
            status: Type.Literal("degraded"),
            checks: Type.Record(Type.String(), Check),
            ...BUILD,
          }),
        },
      },
    },
    async (request, reply) => {
      const results = await Promise.all(
        Object.entries(checks).map(async ([name, check]) => {
          const { ok, detail } = await check();
          if (!ok) {
            const level = failing.has(name) ? "debug" : "warn";
            failing.add(name);
            request.log[level]({ check: name, detail }, `health check ${name} failed`);
          } else if (failing.delete(name))
            request.log.info({ check: name }, `health check ${name} recovered`);
          return [name, { ok }] as const;
        }),
      );
      const healthy = results.every(([, result]) => result.ok);
      return reply
        .status(healthy ? 200 : 503)
        .send({ status: healthy ? "ok" : "degraded", checks: Object.fromEntries(results), ...buildInfo() });
    },
  );
};
