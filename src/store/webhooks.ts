/**
 * Repository of webhooks and their deliveries (migration 007). A delivery row is the outbox entry, the
 * retry state and the log at once; claiming one is a compare-and-set on `locked_until`, so any number
 * of processes can work the outbox and each attempt is made by one of them.
 */
import { randomBytes } from "node:crypto";
import type { Kysely, Selectable } from "kysely";
import { nowIso } from "../core/formats.ts";
import type { Database, WebhookAttemptsTable, WebhookDeliveriesTable, WebhooksTable } from "./schema.ts";

export const WEBHOOK_EVENTS = ["run.finished", "run.failed", "issues.new"] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface Webhook {
  id: number;
  collectionId: number;
  url: string;
  secret: string;
  events: WebhookEvent[];
  severityThreshold: number;
  createdAt: string;
  createdBy: string;
}

export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AttemptRow = Selectable<WebhookAttemptsTable>;

function toWebhook(row: Selectable<WebhooksTable>): Webhook {
  return {
    id: row.id,
    collectionId: row.collection_id,
    url: row.url,
    secret: row.secret,
    events: JSON.parse(row.events),
    severityThreshold: row.severity_threshold,
    createdAt: row.created_at,
    createdBy: row.created_by,
  };
}

/**
 * A new signing secret: 32 random bytes, written as Standard Webhooks secrets are (`whsec_` and
 * standard base64), so its libraries take it as it is.
 */
export const newSecret = () => `whsec_${randomBytes(32).toString("base64")}`;

export class WebhooksRepository {
  readonly db: Kysely<Database>;
  constructor(db: Kysely<Database>) {
    this.db = db;
  }

  async create(
    input: Omit<Webhook, "id" | "secret" | "createdAt">,
    db: Kysely<Database> = this.db,
  ): Promise<Webhook> {
    const row = await db
      .insertInto("webhooks")
      .values({
        collection_id: input.collectionId,
        url: input.url,
        secret: newSecret(),
        events: JSON.stringify(input.events),
        severity_threshold: input.severityThreshold,
        created_at: nowIso(),
        created_by: input.createdBy,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toWebhook(row);
  }

  async list(collectionId: number): Promise<Webhook[]> {
    const rows = await this.db
      .selectFrom("webhooks")
      .selectAll()
      .where("collection_id", "=", collectionId)
      .orderBy("id")
      .execute();
    return rows.map(toWebhook);
  }

  async get(collectionId: number, id: number): Promise<Webhook | undefined> {
    const row = await this.db
      .selectFrom("webhooks")
      .selectAll()
      .where("collection_id", "=", collectionId)
      .where("id", "=", id)
      .executeTakeFirst();
    return row && toWebhook(row);
  }

  async delete(collectionId: number, id: number, db: Kysely<Database> = this.db): Promise<boolean> {
    const result = await db
      .deleteFrom("webhooks")
      .where("collection_id", "=", collectionId)
      .where("id", "=", id)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Deliveries of a webhook, newest first, with each one's attempts. */
  async deliveries(
    webhookId: number,
    page: { limit: number; offset: number },
  ): Promise<{ total: number; deliveries: Array<DeliveryRow & { attemptLog: AttemptRow[] }> }> {
    const total = await this.db
      .selectFrom("webhook_deliveries")
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("webhook_id", "=", webhookId)
      .executeTakeFirstOrThrow();
    const rows = await this.db
      .selectFrom("webhook_deliveries")
      .selectAll()
      .where("webhook_id", "=", webhookId)
      .orderBy("id", "desc")
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    const attempts = rows.length
      ? await this.db
          .selectFrom("webhook_attempts")
          .selectAll()
          .where(
            "delivery_id",
            "in",
            rows.map((row) => row.id),
          )
          .orderBy("id")
          .execute()
      : [];
    return {
      total: Number(total.n),
      deliveries: rows.map((row) => ({
        ...row,
        attemptLog: attempts.filter((attempt) => attempt.delivery_id === row.id),
      })),
    };
  }

  // --- the outbox ---------------------------------------------------------------------------------

  /**
   * Records that the events of a run are being enqueued; true for the one caller that gets there first
   * (its deliveries are written in the same transaction, so either both happen or neither).
   */
  async claimRunEvents(db: Kysely<Database>, runId: number): Promise<boolean> {
    const inserted = await db
      .insertInto("webhook_run_events")
      .values({ run_id: runId, enqueued_at: nowIso() })
      .onConflict((oc) => oc.column("run_id").doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async enqueue(
    db: Kysely<Database>,
    deliveries: Array<{ webhookId: number; runId: number | null; event: WebhookEvent; payload: string }>,
  ): Promise<void> {
    if (deliveries.length === 0) return;
    const now = nowIso();
    await db
      .insertInto("webhook_deliveries")
      .values(
        deliveries.map((delivery) => ({
          webhook_id: delivery.webhookId,
          run_id: delivery.runId,
          event: delivery.event,
          payload: delivery.payload,
          status: "pending" as const,
          attempts: 0,
          next_attempt_at: now,
          created_at: now,
        })),
      )
      .execute();
  }

  /** Runs that ended since `since` in collections with webhooks, whose events were never enqueued. */
  async runsMissingEvents(since: string): Promise<number[]> {
    const rows = await this.db
      .selectFrom("runs")
      .innerJoin("webhooks", "webhooks.collection_id", "runs.collection_id")
      .leftJoin("webhook_run_events", "webhook_run_events.run_id", "runs.id")
      .select("runs.id")
      .distinct()
      .where("runs.status", "in", ["finished", "failed"])
      .where("runs.finished_at", ">=", since)
      .whereRef("runs.finished_at", ">=", "webhooks.created_at")
      .where("webhook_run_events.run_id", "is", null)
      .orderBy("runs.id")
      .execute();
    return rows.map((row) => row.id);
  }

  /** Claims up to `limit` deliveries that are due, for `lockMs`; answers them with their webhook. */
  async claimDue(limit: number, lockMs: number): Promise<Array<{ delivery: DeliveryRow; webhook: Webhook }>> {
    const now = nowIso();
    const candidates = await this.db
      .selectFrom("webhook_deliveries")
      .select("id")
      .where("status", "=", "pending")
      .where("next_attempt_at", "<=", now)
      .where((eb) => eb.or([eb("locked_until", "is", null), eb("locked_until", "<", now)]))
      .orderBy("next_attempt_at")
      .limit(limit)
      .execute();
    const claimed: Array<{ delivery: DeliveryRow; webhook: Webhook }> = [];
    const until = new Date(Date.now() + lockMs).toISOString();
    for (const { id } of candidates) {
      const result = await this.db
        .updateTable("webhook_deliveries")
        .set({ locked_until: until })
        .where("id", "=", id)
        .where("status", "=", "pending")
        .where((eb) => eb.or([eb("locked_until", "is", null), eb("locked_until", "<", now)]))
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) continue; // another process took it
      const row = await this.db
        .selectFrom("webhook_deliveries")
        .innerJoin("webhooks", "webhooks.id", "webhook_deliveries.webhook_id")
        .selectAll("webhook_deliveries")
        .select([
          "webhooks.collection_id",
          "webhooks.url",
          "webhooks.secret",
          "webhooks.events",
          "webhooks.severity_threshold",
          "webhooks.created_at as webhook_created_at",
          "webhooks.created_by",
        ])
        .where("webhook_deliveries.id", "=", id)
        .executeTakeFirst();
      if (!row) continue; // the webhook was deleted meanwhile
      claimed.push({
        delivery: row,
        webhook: toWebhook({
          id: row.webhook_id,
          collection_id: row.collection_id,
          url: row.url,
          secret: row.secret,
          events: row.events,
          severity_threshold: row.severity_threshold,
          created_at: row.webhook_created_at,
          created_by: row.created_by,
        }),
      });
    }
    return claimed;
  }

  /** Gives a claimed delivery back untried. */
  async release(deliveryId: number): Promise<void> {
    await this.db
      .updateTable("webhook_deliveries")
      .set({ locked_until: null })
      .where("id", "=", deliveryId)
      .execute();
  }

  /** Records one attempt and what follows: delivered, retried at `retryAt`, or failed for good. */
  async recordAttempt(
    delivery: DeliveryRow,
    attempt: { at: string; status: number | null; error: string | null; durationMs: number },
    outcome: { delivered: true } | { delivered: false; retryAt: string | undefined },
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto("webhook_attempts")
        .values({
          delivery_id: delivery.id,
          attempted_at: attempt.at,
          response_status: attempt.status,
          error: attempt.error,
          duration_ms: attempt.durationMs,
        })
        .execute();
      await trx
        .updateTable("webhook_deliveries")
        .set({
          attempts: delivery.attempts + 1,
          last_attempt_at: attempt.at,
          response_status: attempt.status,
          error: attempt.error,
          locked_until: null,
          ...(outcome.delivered
            ? { status: "delivered" as const, delivered_at: nowIso() }
            : outcome.retryAt
              ? { next_attempt_at: outcome.retryAt }
              : { status: "failed" as const }),
        })
        .where("id", "=", delivery.id)
        .execute();
    });
  }
}
