/**
 * The domains result: one item per DNS name of the collection (a name seen both as a DNS record and as
 * a name server is one item, of the most specific kind), with its records, addresses, mail policy,
 * wildcard and zone-transfer state, and the certificates naming it. Read a batch of names at a time.
 */

import { DOMAIN_KINDS } from "../core/entities.ts";
import { mergeDetails } from "../store/entities.ts";
import type { EntityFilters, EntityRow, Page, ResultQueries, ResultRun } from "../store/result-queries.ts";
import { entityFields, strings, text } from "./common.ts";

export const RECORD_TYPES = ["a", "aaaa", "cname", "mx", "ns", "txt", "soa", "caa", "srv"] as const;
/** Name kinds, most specific first. */

/** Folds the entities of one name into one: the most specific kind, the details of all. */
function fold(sightings: EntityRow[]): EntityRow & { nameServer: boolean } {
  const sorted = [...sightings].sort((a, b) => DOMAIN_KINDS.indexOf(a.kind) - DOMAIN_KINDS.indexOf(b.kind));
  const [first] = sorted;
  return {
    ...first,
    details: sorted.reduceRight((details, entity) => mergeDetails(details, entity.details), {}),
    scoped: sorted.some((entity) => entity.scoped),
    hidden: sorted.every((entity) => entity.hidden),
    firstSeen: sorted.map((entity) => entity.firstSeen).sort()[0],
    lastSeen: sorted
      .map((entity) => entity.lastSeen)
      .sort()
      .at(-1)!,
    nameServer: sorted.some((entity) => entity.kind === "Nameserver"),
  };
}

function domainItem(entity: EntityRow & { nameServer: boolean }) {
  const details = entity.details;
  const found = (details.records ?? {}) as Record<string, unknown>;
  const records = Object.fromEntries(RECORD_TYPES.map((type) => [type, strings(found[type])])) as Record<
    (typeof RECORD_TYPES)[number],
    string[]
  >;
  const wildcard = details.wildcard as { addresses?: unknown } | undefined;
  const transfer = details.zone_transfer as { open?: unknown } | undefined;
  return {
    ...entityFields(entity),
    name_server: entity.nameServer,
    resolves: details.resolves === true,
    addresses: strings(details.addresses),
    records,
    spf: text(details.spf),
    dmarc: text(details.dmarc),
    wildcard: wildcard !== undefined,
    wildcard_addresses: strings(wildcard?.addresses),
    zone_transfer: transfer?.open === true,
    certificates: strings(details.certificates),
  };
}

/** Domain items in name order; a page is a page of names, so a name's entities are never split. */
export async function* domainItems(
  queries: ResultQueries,
  run: ResultRun | undefined,
  filters: EntityFilters,
  page: Page,
) {
  const kinds = { ...filters, kinds: DOMAIN_KINDS };
  for await (const names of queries.names(run, kinds, page)) {
    let group: EntityRow[] = [];
    for await (const entity of queries.entities(run, { ...kinds, names }, { order: "name" })) {
      if (group.length > 0 && group[0].name !== entity.name) {
        yield domainItem(fold(group));
        group = [];
      }
      group.push(entity);
    }
    if (group.length > 0) yield domainItem(fold(group));
  }
}
