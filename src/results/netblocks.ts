/** The netblocks result: each block with its network owner, geolocation and the hosts found in it. */

import type { Kysely } from "kysely";
import { collect, type EntityRow, ResultQueries } from "../store/result-queries.ts";
import type { Database } from "../store/schema.ts";
import { compareAddresses, entityFields, geolocation, strings, text } from "./common.ts";

export const NETBLOCK_KINDS = ["NetBlock"];

export function netblockItem(entity: EntityRow) {
  return {
    ...entityFields(entity),
    asn: text(entity.details.asn),
    organization: text(entity.details.organization),
    net_name: text(entity.details.net_name),
    geolocation: geolocation(entity.details.geolocation),
    hosts: strings(entity.details.addresses).sort(compareAddresses),
  };
}

/** The whole netblocks result of the latest finished run, in memory: for tests and small callers. */
export async function netblocksView(entities: { db: Kysely<Database> }, collectionId: number) {
  const queries = new ResultQueries(entities.db);
  const run = await queries.run({ id: collectionId, name: "" });
  return (await collect(queries.entities(run, { kinds: NETBLOCK_KINDS }))).map(netblockItem);
}
