/** What routes reach through `app.services` and `request.principal`, decorated once at start. */
import type { Principal } from "../store/accounts.ts";
import type { Services } from "../store/services.ts";

declare module "fastify" {
  interface FastifyInstance {
    services: Services;
    /** Cancels a run in progress, when this process runs them (absent in an app built without runs). */
    cancelRun: ((runId: number, reason: string) => Promise<unknown>) | undefined;
  }
  interface FastifyRequest {
    principal: Principal;
  }
}
