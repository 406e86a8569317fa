/** The recent result: the entities the latest finished run saw for the first time, as spec Entities. */
import type { EntitiesRepository } from "../store/entities.ts";
import { entityFields } from "./common.ts";

export async function recentView(
  entities: EntitiesRepository,
  collectionId: number,
  page: { limit?: number; offset?: number } = {},
) {
  const found = await entities.current(collectionId, { firstSeenInRun: true, ...page });
  return found.map(entityFields);
}
