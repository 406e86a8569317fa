/**
 * Whole results of a collection's latest finished run, in memory, read through the same item builders the
 * API streams: for tests that look at what a run found without going over HTTP.
 */
import type { Kysely } from "kysely";
import { applicationItems } from "../../src/results/applications.ts";
import { entityFields } from "../../src/results/common.ts";
import { domainItems } from "../../src/results/domains.ts";
import { type Host, hostEntries } from "../../src/results/hosts.ts";
import { NETBLOCK_KINDS, netblockItem } from "../../src/results/netblocks.ts";
import { collect, type Page, ResultQueries } from "../../src/store/result-queries.ts";
import type { Database } from "../../src/store/schema.ts";

type Store = { db: Kysely<Database> };

async function latestRun(entities: Store, collectionId: number) {
  const queries = new ResultQueries(entities.db);
  return { queries, run: await queries.run({ id: collectionId, name: "" }) };
}

export async function hostsView(entities: Store, collectionId: number, page: Page = {}) {
  const { queries, run } = await latestRun(entities, collectionId);
  const hosts: Record<string, Host> = {};
  for await (const [ip, value] of hostEntries(queries, run, {}, page)) hosts[ip] = value;
  return hosts;
}

export async function domainsView(entities: Store, collectionId: number, page: Page = {}) {
  const { queries, run } = await latestRun(entities, collectionId);
  return collect(domainItems(queries, run, {}, page));
}

export async function applicationsView(entities: Store, collectionId: number) {
  const { queries, run } = await latestRun(entities, collectionId);
  return collect(applicationItems(queries, run, {}, {}));
}

export async function netblocksView(entities: Store, collectionId: number) {
  const { queries, run } = await latestRun(entities, collectionId);
  return (await collect(queries.entities(run, { kinds: NETBLOCK_KINDS }))).map(netblockItem);
}

/** The entities the run saw for the first time, as spec Entities. */
export async function recentView(entities: Store, collectionId: number) {
  const { queries, run } = await latestRun(entities, collectionId);
  return (await collect(queries.entities(run, { firstSeenInRun: true }))).map(entityFields);
}
