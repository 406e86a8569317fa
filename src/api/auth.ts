/**
 * Authentication: every /api request carries SERVICE_ACCESS_KEY and SERVICE_SECRET_KEY. The user behind
 * the pair becomes `request.principal`; a missing, wrong or revoked pair answers 401.
 */
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { unauthorized } from "../core/errors.ts";
import type { Principal } from "../store/accounts.ts";

/** Paths under /api that are public: the API reference itself. */
const PUBLIC = new Set(["/api/openapi.json"]);

export const authentication = fp(async (app: FastifyInstance) => {
  app.decorateRequest("principal", undefined as unknown as Principal);
  app.addHook("onRequest", async (request) => {
    const path = request.url.split("?")[0];
    if (!path.startsWith("/api/") && path !== "/api") return;
    if (PUBLIC.has(path)) return;
    const accessKey = request.headers.service_access_key;
    const secretKey = request.headers.service_secret_key;
    if (typeof accessKey !== "string" || typeof secretKey !== "string" || !accessKey || !secretKey) {
      throw unauthorized("Send your API key pair in the SERVICE_ACCESS_KEY and SERVICE_SECRET_KEY headers.");
    }
    const principal = await app.services.accounts.authenticate(accessKey, secretKey);
    if (!principal) {
      throw unauthorized(
        "The API key pair is not valid or has been revoked; check both keys or ask for a new pair.",
      );
    }
    request.principal = principal;
  });
});
