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

/**
 * Fastify's "Server listening at …" lines, one per interface on 0.0.0.0: the start banner (one line, the
 * URL to open) says it instead.
 */
const LISTENING = /^Server listening at /;

/** Fastify logger options for the given level and destination. */
export function loggerOptions(settings: LogSettings | boolean | undefined): FastifyServerOptions["logger"] {
  if (!settings) return false;
  const { level = "info", stream } = settings === true ? {} : settings;
  return {
    level,
    ...(stream ? { stream } : {}),
    hooks: {
      logMethod(args, method) {
        if (typeof args[0] === "string" && LISTENING.test(args[0])) return;
        method.apply(this, args);
      },
    },
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

/**
 * Request logs at debug (Fastify's own, at info, are turned off in app.ts): the same two lines, "incoming
 * request" and "request completed", only when LOG_LEVEL=debug asks for them.
 */
export const requestLogs = fp(async (app: FastifyInstance) => {
  // pino's logger says whether debug is on; the silent one (logging off) has no such method.
  const debugging = (log: unknown) =>
    (log as { isLevelEnabled?(level: string): boolean }).isLevelEnabled?.("debug") === true;
  app.addHook("onRequest", async (request) => {
    if (debugging(request.log)) request.log.debug({ req: request }, "incoming request");
  });
  app.addHook("onResponse", async (request, reply) => {
    if (debugging(request.log))
      request.log.debug(
        { res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime },
        "request completed",
      );
  });
});

/** Echoes the request id on every answer, errors and 404s included. */
export const requestIds = fp(async (app: FastifyInstance) => {
  app.addHook("onSend", async (request, reply, payload) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    return payload;
  });
});
