/**
 * Webhooks of a collection: register (the signing secret is shown once), list, delete, and read a
 * webhook's delivery log. What is sent and how it is signed: src/webhooks/dispatcher.ts.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { badRequest, notFound } from "../core/errors.ts";
import { formatTimestamp, formatTimestampOrNull } from "../core/formats.ts";
import { OrNull } from "../core/or-null.ts";
import { parseHttpUrl } from "../core/urls.ts";
import { apiActor, recordAudit } from "../store/audit.ts";
import { WEBHOOK_EVENTS, type Webhook, type WebhookEvent, WebhooksRepository } from "../store/webhooks.ts";
import { WebhookTargets } from "../webhooks/targets.ts";
import { visibleCollection } from "./collections.ts";
import {
  COMMON_ERRORS,
  CollectionParams,
  Envelope,
  NOT_FOUND_ERROR,
  PageOffset,
  RecordId,
} from "./schemas.ts";

/** Webhooks one collection may have. */
const MAX_WEBHOOKS = 10;

const Timestamp = Type.String({ description: "YYYY-MM-DD HH:MM:SS UTC" });
const OptionalTimestamp = (description: string) =>
  OrNull(Type.String(), {
    description: `${description} (YYYY-MM-DD HH:MM:SS UTC), or null`,
  });

const WebhookFields = {
  id: Type.Integer(),
  url: Type.String(),
  events: Type.Array(Type.String({ enum: [...WEBHOOK_EVENTS] })),
  severity_threshold: Type.Integer({
    description:
      "issues.new is sent for new issues of this severity or more severe (1 critical … 5 informational).",
  }),
  created_at: Timestamp,
  created_by: Type.String({ description: "Who registered it." }),
};
const WebhookItem = Type.Object(WebhookFields);
const CreatedWebhook = Type.Object({
  ...WebhookFields,
  secret: Type.String({
    description:
      "The HMAC-SHA256 signing secret (`whsec_` and base64, as Standard Webhooks secrets are). Shown only in this answer: keep it where the receiver verifies X-Sightline-Signature or webhook-signature.",
  }),
});

const WebhookBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      format: "uri",
      description:
        "http:// or https:// URL to POST events to. Loopback, private, link-local and cloud metadata addresses are refused unless the operator allows them (SIGHTLINE_WEBHOOK_ALLOW).",
    }),
    events: Type.Optional(
      Type.Array(Type.String({ enum: [...WEBHOOK_EVENTS] }), {
        minItems: 1,
        uniqueItems: true,
        description: "Which events to send (default: all): run.finished, run.failed, issues.new.",
      }),
    ),
    severity_threshold: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 5, description: "For issues.new (default 2: critical and high)." }),
    ),
  },
  { additionalProperties: false },
);

const WebhookParams = Type.Object({
  collection_name: Type.String(),
  id: RecordId("The webhook's id, as listed."),
});

const Attempt = Type.Object({
  attempted_at: Timestamp,
  response_status: OrNull(Type.Integer(), { description: "null when no answer came." }),
  error: OrNull(Type.String()),
  duration_ms: Type.Integer(),
});
const Delivery = Type.Object({
  id: Type.Integer({ description: "Also sent as X-Sightline-Delivery." }),
  event: Type.String({ enum: [...WEBHOOK_EVENTS] }),
  run_id: OrNull(Type.Integer()),
  status: Type.String({
    enum: ["pending", "delivered", "failed"],
    description:
      "pending (waiting for its first attempt or a retry), delivered (a 2xx answer), failed (attempts used up).",
  }),
  attempts: Type.Integer(),
  created_at: Timestamp,
  last_attempt_at: OptionalTimestamp("The latest attempt"),
  next_attempt_at: OptionalTimestamp("When a pending delivery is tried next"),
  delivered_at: OptionalTimestamp("When the receiver acknowledged it"),
  response_status: OrNull(Type.Integer(), {
    description: "The latest attempt's HTTP status.",
  }),
  error: OrNull(Type.String(), { description: "Why the latest attempt failed." }),
  attempt_log: Type.Array(Attempt, { description: "Every attempt, oldest first." }),
  payload: Type.String({ description: "The JSON body sent, byte for byte (what the signature covers)." }),
});

const errorResponse = (description: string) => ({ ...Type.Ref("ErrorEnvelope"), description });
const WEBHOOK_NOT_FOUND = {
  404: errorResponse("No such collection visible to you, or no such webhook in it."),
};

const timestamp = formatTimestampOrNull;

function describeWebhook(hook: Webhook) {
  return {
    id: hook.id,
    url: hook.url,
    events: hook.events,
    severity_threshold: hook.severityThreshold,
    created_at: formatTimestamp(hook.createdAt),
    created_by: hook.createdBy,
  };
}

export const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { collections, config, store } = app.services;
  const webhooks = new WebhooksRepository(store.db);
  const targets = new WebhookTargets(config.webhookAllow);
  const tags = ["Webhooks"];

  const findWebhook = async (collectionId: number, name: string, id: number) => {
    const hook = await webhooks.get(collectionId, id);
    if (!hook)
      throw notFound(
        `Collection "${name}" has no webhook ${id}; list them with GET /api/collections/${name}/webhooks.`,
      );
    return hook;
  };

  app.post(
    "/:collection_name/webhooks",
    {
      schema: {
        tags,
        summary: "Register a webhook: Sightline POSTs signed events to the URL",
        description:
          'Events: `run.finished`, `run.failed`, `issues.new` (new issues of severity ≤ `severity_threshold`). Each POST carries `X-Sightline-Timestamp` and `X-Sightline-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" with the secret>`. It also carries the Standard Webhooks headers `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` (keyed with the base64 after `whsec_`), which the standardwebhooks libraries verify with the secret as shown. The secret is in this answer only. Failed deliveries are retried with exponential back-off; see …/deliveries.',
        params: CollectionParams,
        body: WebhookBody,
        response: { 200: Envelope(CreatedWebhook), ...COMMON_ERRORS, ...NOT_FOUND_ERROR },
      },
      // A collection that is not yours is a 404 whatever the body: the body is judged after that.
      attachValidation: true,
    },
    async (request) => {
      const collection = await visibleCollection(
        collections,
        request.principal,
        request.params.collection_name,
      );
      if (request.validationError) throw request.validationError;
      const body = request.body;
      // Stored as parsed (WHATWG serialisation), never as typed.
      const parsed = parseHttpUrl(body.url);
      if (!parsed.ok)
        throw badRequest(`Webhook URL refused: ${parsed.problem}.`, [
          { field: "url", message: parsed.problem },
        ]);
      const problem = await targets.urlProblem(parsed.href);
      if (problem) throw badRequest(`Webhook URL refused: ${problem}.`, [{ field: "url", message: problem }]);
      if ((await webhooks.list(collection.id)).length >= MAX_WEBHOOKS)
        throw badRequest(
          `Collection "${collection.name}" already has ${MAX_WEBHOOKS} webhooks; delete one before adding another.`,
        );
      const actor = apiActor(request.principal, request);
      const hook = await store.db.transaction().execute(async (trx) => {
        const created = await webhooks.create(
          {
            collectionId: collection.id,
            url: parsed.href,
            events: (body.events as WebhookEvent[] | undefined) ?? [...WEBHOOK_EVENTS],
            severityThreshold: body.severity_threshold ?? 2,
            createdBy: actor.actor,
          },
          trx,
        );
        await recordAudit(trx, {
          ...actor,
          action: "collection.webhook.create",
          target: `collection:${collection.name}`,
          details: { webhook_id: created.id, url: created.url, events: created.events },
        });
        return created;
      });
      return {
        success: true as const,
        message: "success" as const,
        result: { ...describeWebhook(hook), secret: hook.secret },
      };
    },
  );

  app.get(
    "/:collection_name/webhooks",
    {
      schema: {
        tags,
        summary: "List a collection's webhooks (without their secrets)",
        params: CollectionParams,
        response: { 200: Envelope(Type.Array(WebhookItem)), ...COMMON_ERRORS, ...NOT_FOUND_ERROR },
      },
    },
    async (request) => {
      const collection = await visibleCollection(
        collections,
        request.principal,
        request.params.collection_name,
      );
      return {
        success: true as const,
        message: "success" as const,
        result: (await webhooks.list(collection.id)).map(describeWebhook),
      };
    },
  );

  app.delete(
    "/:collection_name/webhooks/:id",
    {
      schema: {
        tags,
        summary: "Delete a webhook and its delivery log; nothing more is sent to it",
        params: WebhookParams,
        response: {
          200: Envelope(Type.Object({ id: Type.Integer(), deleted: Type.Literal(true) })),
          ...COMMON_ERRORS,
          ...WEBHOOK_NOT_FOUND,
        },
      },
    },
    async (request) => {
      const { collection_name, id } = request.params;
      const collection = await visibleCollection(collections, request.principal, collection_name);
      const hook = await findWebhook(collection.id, collection.name, id);
      await store.db.transaction().execute(async (trx) => {
        await webhooks.delete(collection.id, hook.id, trx);
        await recordAudit(trx, {
          ...apiActor(request.principal, request),
          action: "collection.webhook.delete",
          target: `collection:${collection.name}`,
          details: { webhook_id: hook.id, url: hook.url },
        });
      });
      return {
        success: true as const,
        message: "success" as const,
        result: { id: hook.id, deleted: true as const },
      };
    },
  );

  app.get(
    "/:collection_name/webhooks/:id/deliveries",
    {
      schema: {
        tags,
        summary: "A webhook's delivery log: every event sent or to send, newest first, with each attempt",
        params: WebhookParams,
        querystring: Type.Object(
          {
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
            offset: Type.Optional(PageOffset()),
          },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(Type.Array(Delivery)), ...COMMON_ERRORS, ...WEBHOOK_NOT_FOUND },
      },
    },
    async (request, reply) => {
      const { collection_name, id } = request.params;
      const collection = await visibleCollection(collections, request.principal, collection_name);
      const hook = await findWebhook(collection.id, collection.name, id);
      const query = request.query as { limit: number; offset: number };
      const { total, deliveries } = await webhooks.deliveries(hook.id, query);
      reply.header("X-Total-Count", String(total));
      return {
        success: true as const,
        message: "success" as const,
        result: deliveries.map((delivery) => ({
          id: delivery.id,
          event: delivery.event as WebhookEvent,
          run_id: delivery.run_id,
          status: delivery.status,
          attempts: delivery.attempts,
          created_at: formatTimestamp(delivery.created_at),
          last_attempt_at: timestamp(delivery.last_attempt_at),
          next_attempt_at: delivery.status === "pending" ? timestamp(delivery.next_attempt_at) : null,
          delivered_at: timestamp(delivery.delivered_at),
          response_status: delivery.response_status,
          error: delivery.error,
          attempt_log: delivery.attemptLog.map((attempt) => ({
            attempted_at: formatTimestamp(attempt.attempted_at),
            response_status: attempt.response_status,
            error: attempt.error,
            duration_ms: attempt.duration_ms,
          })),
          payload: delivery.payload,
        })),
      };
    },
  );
};
