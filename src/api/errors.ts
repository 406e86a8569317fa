/**
 * Every failure leaves as the error envelope: typed ApiErrors with their status, validation failures
 * as 400 with one detail per field, Fastify's own errors mapped to sentences, anything else a bare 500.
 */

import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { Ajv, type ErrorObject } from "ajv";
import addFormats from "ajv-formats";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { ApiError, type ErrorDetail } from "../core/errors.ts";
import { REQUEST_ID_HEADER } from "./logging.ts";

function send(reply: FastifyReply, status: number, code: string, message: string, details?: ErrorDetail[]) {
  const error = details && details.length > 0 ? { code, details } : { code };
  return reply.status(status).type("application/json").send({ success: false, message, result: null, error });
}

function fieldOf(error: ErrorObject, part: string): string {
  const path = error.instancePath.split("/").filter(Boolean).join(".");
  // A missing or an unknown field is named by the field itself, not by the object holding it.
  const named =
    error.keyword === "required"
      ? (error.params as { missingProperty: string }).missingProperty
      : error.keyword === "additionalProperties"
        ? (error.params as { additionalProperty: string }).additionalProperty
        : "";
  return [path, named].filter(Boolean).join(".") || part;
}

/** What each schema pattern asks for, in words, as `patternMeaning` registered it. */
const PATTERN_MEANINGS = new Map<string, string>();

/**
 * A schema pattern with what it means in a sentence: a value that does not match is told that, not the
 * regular expression.
 */
export function patternMeaning(pattern: string, meaning: string): string {
  PATTERN_MEANINGS.set(pattern, meaning);
  return pattern;
}

function describe(error: ErrorObject): string {
  switch (error.keyword) {
    case "required":
      return "is required";
    case "type": {
      const { type } = error.params as { type: string };
      return type === "integer"
        ? "must be a whole number"
        : `must be ${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
    }
    case "wholeNumber":
      return (error.params as { tooLarge: boolean }).tooLarge
        ? `must be a whole number no larger than ${Number.MAX_SAFE_INTEGER}`
        : "must be a whole number written in digits (no sign, decimals, exponent or spaces)";
    case "minimum":
      return `must be at least ${(error.params as { limit: number }).limit}`;
    case "maximum":
      return `must be at most ${(error.params as { limit: number }).limit}`;
    case "minLength": {
      const { limit } = error.params as { limit: number };
      return limit === 1 ? "must not be empty" : `must be at least ${limit} characters long`;
    }
    case "maxLength":
      return `must be at most ${(error.params as { limit: number }).limit} characters long`;
    case "pattern": {
      const { pattern } = error.params as { pattern: string };
      return PATTERN_MEANINGS.get(pattern) ?? `must match ${pattern}`;
    }
    case "enum": {
      const allowed = (error.params as { allowedValues: unknown[] }).allowedValues ?? [];
      return allowed.length === 1
        ? `must be ${allowed[0]} or left out`
        : `must be one of ${allowed.join(", ")}`;
    }
    case "format": {
      const { format } = error.params as { format: string };
      return format === "uri"
        ? "is not an absolute URL (e.g. https://example.com/)"
        : `is not in the ${format} format`;
    }
    case "additionalProperties":
      return "is not a known field";
    default:
      return error.message ?? "is invalid";
  }
}

/** The integer properties of a path or query schema (those parts are flat objects). */
function integerFields(schema: unknown): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.entries(properties)
    .filter(([, property]) => property.type === "integer")
    .map(([name]) => name);
}

/**
 * Whole numbers in a path or query string must be written as decimal digits within the safe integers:
 * Ajv's coercion alone would take "1e309" (Infinity), "0x10", " 1", "1.0" or "1e20", and an id like
 * those once reached the database and answered 500.
 */
function spellingErrors(fields: string[], data: unknown): ErrorObject[] {
  return fields.flatMap((field): ErrorObject[] => {
    const raw = (data as Record<string, unknown> | null)?.[field];
    if (typeof raw !== "string" || (/^\d+$/.test(raw) && Number.isSafeInteger(Number(raw)))) return [];
    return [
      {
        instancePath: `/${field}`,
        schemaPath: "#/wholeNumber",
        keyword: "wholeNumber",
        params: { tooLarge: /^\d+$/.test(raw) },
        message: "must be a whole number",
      },
    ];
  });
}

/** Body schemas are strict (a string never becomes an array); query and path values are coerced from text. */
export function schemaValidators(app: FastifyInstance) {
  const strict = new Ajv({ allErrors: true, coerceTypes: false, useDefaults: true, strict: false });
  const coercing = new Ajv({ allErrors: true, coerceTypes: true, useDefaults: true, strict: false });
  addFormats.default(strict);
  addFormats.default(coercing);
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart === "body") return strict.compile(schema as object);
    const validate = coercing.compile(schema as object);
    const integers = integerFields(schema);
    if (integers.length === 0) return validate;
    const checked = (data: unknown) => {
      const misspelled = spellingErrors(integers, data);
      // Every bad parameter is named: the misspelled numbers, then what else the schema finds.
      const valid = validate(data) && misspelled.length === 0;
      const errors = [...misspelled, ...(validate.errors ?? [])];
      checked.errors = errors.length > 0 ? errors : undefined;
      return valid;
    };
    checked.errors = undefined as ErrorObject[] | undefined;
    return checked;
  });
}

/** A message as a sentence: capitalised, ending with one full stop. */
function sentence(text: string): string {
  const trimmed = text.trim().replace(/[.\s]+$/, "");
  return `${trimmed.charAt(0).toUpperCase()}${trimmed.slice(1)}.`;
}

/** What a person calls each part of a request that failed validation. */
const PART_NAMES: Record<string, string> = {
  params: "request path",
  querystring: "query string",
  body: "request body",
  headers: "request headers",
};

/** Codes and sentences for the 4xx errors Fastify raises itself, by status. */
const CLIENT_ERRORS: Record<number, [string, string]> = {
  404: ["not_found", "There is no such endpoint; see /api/openapi.json for the API."],
  405: ["method_not_allowed", "This endpoint does not accept that method; see /api/openapi.json."],
  408: ["request_timeout", "The request took too long to arrive; send it again."],
  411: ["length_required", "Send a Content-Length with the body."],
  413: ["payload_too_large", "The request body is too large; send fewer seeds per request."],
  414: ["uri_too_long", "The request path is too long."],
  415: ["unsupported_media_type", "Send the body as JSON with Content-Type: application/json."],
  431: ["headers_too_large", "The request headers are too large."],
};

/**
 * Failures of the database connection (refused, reset, timed out, the server shutting down, a locked
 * SQLite file): the request may succeed later, so they answer 503, not 500.
 */
export function isStoreUnavailable(error: unknown): boolean {
  if (!error || typeof error !== "object") return false;
  const { code, errcode, message, errors } = error as {
    code?: unknown;
    errcode?: unknown;
    message?: unknown;
    errors?: unknown;
  };
  if (Array.isArray(errors) && errors.some(isStoreUnavailable)) return true; // AggregateError of a dual-stack connect
  if (typeof code === "string") {
    if (/^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|ENOTFOUND)$/.test(code))
      return true;
    // PostgreSQL: class 08 connection exceptions, 53300 too many connections, 57P01-03 shutting down / starting.
    if (/^(08\d{3}|08P01|53300|57P0[123])$/.test(code)) return true;
    if (code === "ERR_SQLITE_ERROR" && (errcode === 5 || errcode === 6)) return true; // SQLITE_BUSY, SQLITE_LOCKED
  }
  return (
    typeof message === "string" &&
    /Connection terminated|connection error|timeout exceeded when trying to connect|Connection refused/i.test(
      message,
    )
  );
}

/** Errors Fastify raises before routing (a malformed percent-escape in the path) leave in the envelope too. */
export function frameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const message =
    error.code === "FST_ERR_BAD_URL"
      ? "The request path is not a valid URL; percent-encode it correctly."
      : error.code === "FST_ERR_MAX_PARAM_LENGTH"
        ? "A part of the request path is longer than 100 characters; no collection name is that long."
        : "The request could not be routed; check its path and headers.";
  reply.header(REQUEST_ID_HEADER, request.id);
  return send(reply, 400, "bad_request", message);
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (headers too large, malformed, too slow):
 * answered on the raw socket, still in the envelope, then the connection is closed.
 */
export function clientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const [status, code, message] =
    error.code === "HPE_HEADER_OVERFLOW"
      ? [431, "headers_too_large", "The request headers or path are too large; send less."]
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "request_timeout", "The request took too long to arrive; send it again."]
        : [400, "bad_request", "The request is not valid HTTP."];
  const body = JSON.stringify({ success: false, message, result: null, error: { code } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** Routes by path pattern, to tell an unknown method of a known path (405) from an unknown path (404). */
class MethodsByPath {
  readonly #routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];

  add(url: string, methods: string | string[]): void {
    // Catch-alls (the dashboard's GET /*) answer every path: they would make every method look known.
    if (url.includes("*")) return;
    const source = url
      .replace(/\/+$/, "")
      .split("/")
      .map((part) => (part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("/");
    const pattern = new RegExp(`^${source}/?$`);
    let entry = this.#routes.find((route) => route.pattern.source === pattern.source);
    if (!entry) {
      entry = { pattern, methods: new Set() };
      this.#routes.push(entry);
    }
    for (const method of Array.isArray(methods) ? methods : [methods]) entry.methods.add(method);
    if (entry.methods.has("GET")) entry.methods.add("HEAD");
  }

  /** The methods a path answers, or undefined for a path no route has. */
  allowed(path: string): string[] | undefined {
    const methods = new Set<string>();
    for (const route of this.#routes)
      if (route.pattern.test(path)) for (const m of route.methods) methods.add(m);
    return methods.size > 0 ? [...methods].sort() : undefined;
  }
}

export const errorHandling = fp(async (app: FastifyInstance) => {
  const known = new MethodsByPath();
  app.addHook("onRoute", (route) => known.add(route.url, route.method));
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0];
    const allowed = known.allowed(path);
    if (allowed && !allowed.includes(request.method)) {
      reply.header("allow", allowed.join(", "));
      return send(
        reply,
        405,
        "method_not_allowed",
        `${path} does not answer ${request.method}; it answers ${allowed.join(", ")}.`,
      );
    }
    return send(reply, 404, "not_found", `There is no ${request.method} ${path} endpoint.`);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) return send(reply, error.status, error.code, error.message, error.details);
    if (error.validation) {
      const part = error.validationContext ?? "body";
      const details = error.validation.map((v) => ({
        field: fieldOf(v as ErrorObject, part),
        message: describe(v as ErrorObject),
      }));
      // Union mismatches repeat a field once per branch; keep the first word on each.
      const unique = details.filter((d, i) => details.findIndex((o) => o.field === d.field) === i);
      const summary = unique.map((d) => `${d.field} ${d.message}`).join("; ");
      const where = PART_NAMES[part] ?? `request ${part}`;
      return send(reply, 400, "bad_request", `The ${where} is invalid: ${summary}.`, unique);
    }
    switch (error.code) {
      case "FST_ERR_CTP_EMPTY_JSON_BODY":
        return send(reply, 400, "bad_request", "The request body is empty; send a JSON object.");
      case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
        return send(reply, 400, "bad_request", "The request body does not match its Content-Length.");
    }
    if (error instanceof SyntaxError || error.code === "FST_ERR_CTP_INVALID_JSON_BODY") {
      if (/prototype property/.test(error.message))
        return send(
          reply,
          400,
          "bad_request",
          "The request body uses a reserved key (__proto__ or constructor.prototype); remove it.",
        );
      return send(
        reply,
        400,
        "bad_request",
        sentence(`The request body is not valid JSON: ${error.message}`),
      );
    }
    if (isStoreUnavailable(error)) {
      request.log.warn({ err: error }, "the database is unreachable");
      reply.header("retry-after", "5");
      return send(
        reply,
        503,
        "service_unavailable",
        "The service cannot reach its database right now; retry in a few seconds.",
      );
    }
    const status = error.statusCode;
    if (status === 429) return send(reply, 429, "rate_limited", "Too many requests; wait and retry.");
    if (status && status >= 400 && status < 500) {
      const [code, message] = CLIENT_ERRORS[status] ?? ["bad_request", "The request is not valid."];
      if (status === 415) {
        const sent = request.headers["content-type"];
        if (sent !== undefined && request.headers["content-encoding"] === undefined) {
          request.log.info({ err: error }, "request refused");
          return send(
            reply,
            415,
            code,
            `The body was sent as ${JSON.stringify((sent.split(";")[0] ?? "").trim().slice(0, 100))}; send it as JSON with Content-Type: application/json.`,
          );
        }
      }
      request.log.info({ err: error }, "request refused");
      return send(reply, status, code, message);
    }
    request.log.error({ err: error }, "unhandled error");
    return send(
      reply,
      500,
      "internal_error",
      "Something went wrong on the server; the error has been logged.",
    );
  });
});
