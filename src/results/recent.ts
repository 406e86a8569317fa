/** The recent result: the entities the run saw for the first time, as spec Entities. */
import type { Kysely } from "kysely";
import { collect, ResultQueries } from "../store/result-queries.ts";
import type { Database } from "../store/schema.ts";
import { entityFields } from "./common.ts";

/** The whole recent result of the latest finished run, in memory: for tests and small callers. */
export async function recentView(entities: { db: Kysely<Database> }, collectionId: number) {
  const queries = new ResultQueries(entities.db);
  const run = await queries.run({ id: collectionId, name: "" });
  return (await collect(queries.entities(run, { firstSeenInRun: true }))).map(entityFields);
}
