import { cascade, type DialectMigration, withId } from "./helpers.ts";

/**
 * Webhooks of a collection and their outbox. A delivery row is written when an event happens and is
 * the outbox entry, the retry state and the delivery log at once; any server process may claim a due
 * one (`locked_until`, compare-and-set), so deliveries survive restarts and are never sent twice at
 * the same time. `webhook_run_events` records that a run's events were enqueued, once per run, so a
 * process that died between a run's end and the enqueue is caught up by the next sweep.
 */
export const webhooks: DialectMigration = {
  async up(db, dialect) {
    await withId(db.schema.createTable("webhooks"), dialect)
      .addColumn("collection_id", "integer", cascade("collections.id"))
      .addColumn("url", "text", (c) => c.notNull())
      .addColumn("secret", "text", (c) => c.notNull())
      .addColumn("events", "text", (c) => c.notNull())
      .addColumn("severity_threshold", "integer", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("created_by", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("webhooks_collection").on("webhooks").column("collection_id").execute();

    await withId(db.schema.createTable("webhook_deliveries"), dialect)
      .addColumn("webhook_id", "integer", cascade("webhooks.id"))
      .addColumn("run_id", "integer")
      .addColumn("event", "text", (c) => c.notNull())
      .addColumn("payload", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("attempts", "integer", (c) => c.notNull())
      .addColumn("next_attempt_at", "text", (c) => c.notNull())
      .addColumn("locked_until", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("last_attempt_at", "text")
      .addColumn("delivered_at", "text")
      .addColumn("response_status", "integer")
      .addColumn("error", "text")
      .execute();
    await db.schema
      .createIndex("webhook_deliveries_due")
      .on("webhook_deliveries")
      .columns(["status", "next_attempt_at"])
      .execute();
    await db.schema
      .createIndex("webhook_deliveries_webhook")
      .on("webhook_deliveries")
      .columns(["webhook_id", "id"])
      .execute();

    await withId(db.schema.createTable("webhook_attempts"), dialect)
      .addColumn("delivery_id", "integer", cascade("webhook_deliveries.id"))
      .addColumn("attempted_at", "text", (c) => c.notNull())
      .addColumn("response_status", "integer")
      .addColumn("error", "text")
      .addColumn("duration_ms", "integer", (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("webhook_attempts_delivery")
      .on("webhook_attempts")
      .columns(["delivery_id", "id"])
      .execute();

    await db.schema
      .createTable("webhook_run_events")
      .addColumn("run_id", "integer", (c) => c.primaryKey().references("runs.id").onDelete("cascade"))
      .addColumn("enqueued_at", "text", (c) => c.notNull())
      .execute();
  },
};
