/**
 * Every failure leaves as the error envelope: typed ApiErrors with their status, validation failures
 * as 400 with one detail per field, Fastify's own errors mapped to sentences, anything else a bare 500.
 */
import { Ajv, type ErrorObject } from "ajv";
import addFormats from "ajv-formats";
import type { FastifyError, FastifyInstance, FastifyReply } from "fastify";
import fp from "fastify-plugin";
import { ApiError, type ErrorDetail } from "../core/errors.ts";

function send(reply: FastifyReply, status: number, code: string, message: string, details?: ErrorDetail[]) {
  const error = details && details.length > 0 ? { code, details } : { code };
  return reply.status(status).type("application/json").send({ success: false, message, result: null, error });
}

function fieldOf(error: ErrorObject, part: string): string {
  const path = error.instancePath.split("/").filter(Boolean).join(".");
  const missing =
    error.keyword === "required" ? (error.params as { missingProperty: string }).missingProperty : "";
  return [path, missing].filter(Boolean).join(".") || part;
}

function describe(error: ErrorObject): string {
  switch (error.keyword) {
    case "required":
      return "is required";
    case "type":
      return `must be ${(error.params as { type: string }).type === "array" ? "an array" : `a ${(error.params as { type: string }).type}`}`;
    case "pattern":
      return "has characters outside a-z 0-9 _ - .";
    case "enum":
      return `must be one of ${((error.params as { allowedValues: unknown[] }).allowedValues ?? []).join(", ")}`;
    case "additionalProperties":
      return `is not a known field: ${(error.params as { additionalProperty: string }).additionalProperty}`;
    default:
      return error.message ?? "is invalid";
  }
}

/** Body schemas are strict (a string never becomes an array); query and path values are coerced from text. */
export function schemaValidators(app: FastifyInstance) {
  const strict = new Ajv({ allErrors: true, coerceTypes: false, useDefaults: true, strict: false });
  const coercing = new Ajv({ allErrors: true, coerceTypes: true, useDefaults: true, strict: false });
  addFormats.default(strict);
  addFormats.default(coercing);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === "body" ? strict : coercing).compile(schema as object),
  );
}

export const errorHandling = fp(async (app: FastifyInstance) => {
  app.setNotFoundHandler((request, reply) =>
    send(reply, 404, "not_found", `There is no ${request.method} ${request.url.split("?")[0]} endpoint.`),
  );

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
      return send(reply, 400, "bad_request", `The request ${part} is invalid: ${summary}.`, unique);
    }
    switch (error.code) {
      case "FST_ERR_CTP_BODY_TOO_LARGE":
        return send(
          reply,
          413,
          "payload_too_large",
          "The request body is too large; send fewer seeds per request.",
        );
      case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
        return send(
          reply,
          415,
          "unsupported_media_type",
          "Send the body as JSON with Content-Type: application/json.",
        );
      case "FST_ERR_CTP_EMPTY_JSON_BODY":
        return send(reply, 400, "bad_request", "The request body is empty; send a JSON object.");
    }
    if (error instanceof SyntaxError || error.code === "FST_ERR_CTP_INVALID_JSON_BODY") {
      return send(reply, 400, "bad_request", `The request body is not valid JSON: ${error.message}.`);
    }
    if (error.statusCode === 429) {
      return send(reply, 429, "rate_limited", error.message || "Too many requests; wait and retry.");
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return send(reply, error.statusCode, "bad_request", error.message);
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
