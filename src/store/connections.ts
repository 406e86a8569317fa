/**
 * The third parties of each finished run, decided once when it finishes, with the run's own scope, and
 * kept: a later read of the run answers what it saw whatever the collection's seeds are by then.
 */
import type { Kysely } from "kysely";
import { type Connection, ConnectionGroups } from "../core/connections.ts";
import { DOMAIN_KINDS } from "../core/entities.ts";
import { nowIso } from "../core/formats.ts";
import { ResultQueries, type ResultRun } from "./result-queries.ts";
import type { Database } from "./schema.ts";

/** The run's third parties, folded from its scoped names and applications read in batches. */
export async function gatherConnections(
  queries: ResultQueries,
  run: ResultRun,
  inScope: (host: string) => boolean,
): Promise<Connection[]> {
  const groups = new ConnectionGroups(inScope);
  for await (const entity of queries.entities(run, { kinds: ["Uri", ...DOMAIN_KINDS], scoped: true }))
    groups.add(entity);
  return groups.result();
}

export class RunConnectionsRepository {
  readonly db: Kysely<Database>;
  constructor(db: Kysely<Database>) {
    this.db = db;
  }

  /** Decides and keeps the third parties of a run that just finished; deciding again replaces them. */
  async decide(run: ResultRun, inScope: (host: string) => boolean): Promise<Connection[]> {
    const connections = await gatherConnections(new ResultQueries(this.db), run, inScope);
    const row = {
      run_id: run.runId,
      collection_id: run.collectionId,
      connections: JSON.stringify(connections),
      decided_at: nowIso(),
    };
    await this.db
      .insertInto("run_connections")
      .values(row)
      .onConflict((oc) =>
        oc.column("run_id").doUpdateSet({ connections: row.connections, decided_at: row.decided_at }),
      )
      .execute();
    return connections;
  }

  /** Whether the run's finish decided its connections. */
  async decided(runId: number): Promise<boolean> {
    const row = await this.db
      .selectFrom("run_connections")
      .select("run_id")
      .where("run_id", "=", runId)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** What the run's finish decided, or undefined for a run finished before connections were kept. */
  async of(runId: number): Promise<Connection[] | undefined> {
    const row = await this.db
      .selectFrom("run_connections")
      .select("connections")
      .where("run_id", "=", runId)
      .executeTakeFirst();
    return row && (JSON.parse(row.connections) as Connection[]);
  }
}
