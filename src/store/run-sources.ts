/**
 * Repository of the passive sources' statuses per run: one row per source and entity asked about,
 * summed per source when read. What a run did not ask (no key, not chosen) is in its settings.
 */
import type { Kysely } from "kysely";
import { nowIso } from "../core/formats.ts";
import type { SourceStatus } from "../core/sources.ts";
import type { Database } from "./schema.ts";

export type TargetStatus = SourceStatus & { target: string };

export class RunSourcesRepository {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async record(runId: number, collectionId: number, statuses: readonly TargetStatus[]): Promise<void> {
    if (statuses.length === 0) return;
    const created = nowIso();
    await this.#db
      .insertInto("run_sources")
      .values(
        statuses.map(({ target, ...status }) => ({
          run_id: runId,
          collection_id: collectionId,
          source: status.source,
          target,
          status: JSON.stringify(status),
          created_at: created,
        })),
      )
      .onConflict((oc) =>
        oc
          .columns(["run_id", "source", "target"])
          .doUpdateSet((eb) => ({ status: eb.ref("excluded.status") })),
      )
      .execute();
  }

  /** Every status of a run, by source. */
  async forRun(runId: number): Promise<Map<string, TargetStatus[]>> {
    const rows = await this.#db
      .selectFrom("run_sources")
      .select(["source", "target", "status"])
      .where("run_id", "=", runId)
      .orderBy("source")
      .orderBy("target")
      .execute();
    const bySource = new Map<string, TargetStatus[]>();
    for (const row of rows) {
      const list = bySource.get(row.source) ?? [];
      list.push({ ...(JSON.parse(row.status) as SourceStatus), target: row.target });
      bySource.set(row.source, list);
    }
    return bySource;
  }

  /** Per source, the latest run of these collections that asked it, with its statuses there. */
  async latest(
    collectionIds: readonly number[],
  ): Promise<Map<string, { runId: number; statuses: TargetStatus[] }>> {
    const latest = new Map<string, { runId: number; statuses: TargetStatus[] }>();
    if (collectionIds.length === 0) return latest;
    const runs = await this.#db
      .selectFrom("run_sources")
      .select(["source", (eb) => eb.fn.max("run_id").as("run_id")])
      .where("collection_id", "in", [...collectionIds])
      .groupBy("source")
      .execute();
    for (const { source, run_id } of runs) {
      const rows = await this.#db
        .selectFrom("run_sources")
        .select(["target", "status"])
        .where("run_id", "=", Number(run_id))
        .where("source", "=", source)
        .execute();
      latest.set(source, {
        runId: Number(run_id),
        statuses: rows.map((row) => ({ ...(JSON.parse(row.status) as SourceStatus), target: row.target })),
      });
    }
    return latest;
  }
}
