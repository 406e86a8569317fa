/**
 * Structured JSON logs (pino, through Fastify) and request ids. Every line of a request carries its
 * `reqId`; the id comes from the client's `x-request-id` when it is a sane token (so a proxy's id follows
 * the request through), else a fresh UUID, and every answer echoes it. Key material never reaches a log:
 * requests are logged without headers, and the secret header is redacted should anything log them.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { FastifyInstance, FastifyServerOptions } from "fastify";
import fp from "fastify-plugin";

export const REQUEST_ID_HEADER = "x-request-id";
const SANE_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The client's request id when it is a short token without spaces or control characters, else a new one. */
export function requestId(request: IncomingMessage): string {
  const given = request.headers[REQUEST_ID_HEADER];
  return typeof given === "string" && SANE_ID.test(given) ? given : randomUUID();
}

/** What a log line may show of a request: never headers, so never keys. */
export const REDACTED_PATHS = [
  "req.headers.service_secret_key",
  "req.headers.authorization",
  "req.headers.cookie",
  "headers.service_secret_key",
  "headers.authorization",
];

/** Query values whose names suggest a credential (a client putting its keys in the URL) are not logged. */
const CREDENTIAL_PARAMETER = /([?&][^=&#]*(?:key|secret|token|password|auth)[^=&#]*=)[^&#]*/gi;
export const loggableUrl = (url: string) => url.replace(CREDENTIAL_PARAMETER, "$1[redacted]");

export interface LogSettings {
  level?: string;
  /** Where lines go (default: stdout); tests pass a stream to read them. */
  stream?: { write(line: string): void };
}

/** Fastify logger options for the given level and destination. */
export function loggerOptions(settings: LogSettings | boolean | undefined): FastifyServerOptions["logger"] {
  if (!settings) return false;
  const { level = "info", stream } = settings === true ? {} : settings;
  return {
    level,
    ...(stream ? { stream } : {}),
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    serializers: {
      req: (request: { method: string; url: string; ip?: string; headers: Record<string, unknown> }) => ({
        method: request.method,
        url: loggableUrl(request.url),
        remoteAddress: request.ip,
        userAgent: request.headers?.["user-agent"],
      }),
    },
  };
}

/** Echoes the request id on every answer, errors and 404s included. */
export const requestIds = fp(async (app: FastifyInstance) => {
  app.addHook("onSend", async (request, reply, payload) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    return payload;
  });
});
