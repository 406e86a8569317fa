/**
 * The events webhooks receive, written to the outbox when a run ends:
 *   run.finished  a run finished; its results replaced the collection's (with what is new since before)
 *   run.failed    a run failed; the previous results are kept (with the reason)
 *   issues.new    a finished run found issues never seen before of severity ≤ the webhook's threshold
 * Enqueuing a run's events is once per run (webhook_run_events), in one transaction with its deliveries.
 * The run machinery calls `runEnded` without waiting for it; a sweep catches runs whose process died
 * before it did.
 */

import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { formatTimestamp } from "../core/formats.ts";
import type { RunSettings } from "../core/run-settings.ts";
import { issueItems } from "../results/issues.ts";
import { changeSincePrevious } from "../results/overview.ts";
import { describeRun, describeRunSources, sourcesHeadline } from "../results/runs.ts";
import { collect, ResultQueries, type ResultRun } from "../store/result-queries.ts";
import { RunSourcesRepository } from "../store/run-sources.ts";
import type { RunRow } from "../store/runs.ts";
import type { Database } from "../store/schema.ts";
import type { Webhook, WebhookEvent, WebhooksRepository } from "../store/webhooks.ts";

/** Issues listed in one issues.new event; `count` says how many there are in all. */
const MAX_ISSUES = 1000;

export class WebhookEvents {
  readonly #db: Kysely<Database>;
  readonly #webhooks: WebhooksRepository;
  readonly #queries: ResultQueries;
  /** Called after a run's deliveries are enqueued (the dispatcher of this process sends them at once). */
  onEnqueued: () => void = () => {};

  constructor(db: Kysely<Database>, webhooks: WebhooksRepository) {
    this.#db = db;
    this.#webhooks = webhooks;
    this.#queries = new ResultQueries(db);
  }

  /** Enqueues the events of an ended run for the webhooks that want them (once per run). */
  async runEnded(runId: number): Promise<void> {
    const run = await this.#db.selectFrom("runs").selectAll().where("id", "=", runId).executeTakeFirst();
    if (!run || (run.status !== "finished" && run.status !== "failed")) return;
    const collection = await this.#db
      .selectFrom("collections")
      .select(["id", "name"])
      .where("id", "=", run.collection_id)
      .executeTakeFirstOrThrow();
    const hooks = (await this.#webhooks.list(collection.id)).filter(
      (hook) => hook.createdAt <= (run.finished_at ?? ""),
    );
    // Nothing to send, nothing to write: a collection without webhooks costs a run nothing here.
    if (hooks.length === 0) return;
    const events = await this.#events(run, collection, hooks);
    const enqueued = await this.#db.transaction().execute(async (trx) => {
      if (!(await this.#webhooks.claimRunEvents(trx, run.id))) return false;
      await this.#webhooks.enqueue(trx, events);
      return events.length > 0;
    });
    if (enqueued) this.onEnqueued();
  }

  /** Enqueues the events of runs that ended since `since` and were missed (a process died first). */
  async sweep(since: string): Promise<void> {
    for (const runId of await this.#webhooks.runsMissingEvents(since)) await this.runEnded(runId);
  }

  async #events(run: RunRow, collection: { id: number; name: string }, hooks: Webhook[]) {
    const envelope = (type: WebhookEvent, data: Record<string, unknown>) =>
      JSON.stringify({
        id: randomUUID(),
        type,
        created_at: formatTimestamp(new Date()),
        collection: collection.name,
        run: describeRun(run),
        ...data,
      });
    const deliveries: Array<{ webhookId: number; runId: number; event: WebhookEvent; payload: string }> = [];
    const add = (hook: Webhook, event: WebhookEvent, payload: string) =>
      deliveries.push({ webhookId: hook.id, runId: run.id, event, payload });

    if (run.status === "failed") {
      const payload = envelope("run.failed", { reason: run.error ?? "" });
      for (const hook of hooks) if (hook.events.includes("run.failed")) add(hook, "run.failed", payload);
      return deliveries;
    }
    const result: ResultRun = {
      collectionId: collection.id,
      runId: run.id,
      finishedAt: run.finished_at ?? "",
    };
    if (hooks.some((hook) => hook.events.includes("run.finished"))) {
      const change = await changeSincePrevious(this.#queries, result);
      const settings = run.settings ? (JSON.parse(run.settings) as RunSettings) : null;
      const sources = sourcesHeadline(
        run.id,
        describeRunSources(settings, await new RunSourcesRepository(this.#db).forRun(run.id)),
      );
      const payload = envelope("run.finished", {
        sources,
        previous_run_id: change.previous?.runId ?? null,
        new_since_previous_run: change.new,
        disappeared_since_previous_run: change.disappeared,
        change_note: change.note,
      });
      for (const hook of hooks) if (hook.events.includes("run.finished")) add(hook, "run.finished", payload);
    }
    for (const threshold of new Set(
      hooks.filter((h) => h.events.includes("issues.new")).map((h) => h.severityThreshold),
    )) {
      const filters = { firstSeenInRun: true, severities: [1, 2, 3, 4, 5].filter((s) => s <= threshold) };
      const count = await this.#queries.countFindings(result, filters);
      if (count === 0) continue;
      const issues = await collect(
        issueItems(this.#queries, result, this.#queries.findings(result, filters, { limit: MAX_ISSUES })),
      );
      const payload = envelope("issues.new", { severity_threshold: threshold, count, issues });
      for (const hook of hooks)
        if (hook.events.includes("issues.new") && hook.severityThreshold === threshold)
          add(hook, "issues.new", payload);
    }
    return deliveries;
  }
}
