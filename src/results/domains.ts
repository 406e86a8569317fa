/**
 * The domains result: one item per DNS name of the collection (a name seen both as a DNS record and as
 * a name server is one item, of the most specific kind), with its records, addresses, mail policy,
 * wildcard and zone-transfer state, and the certificates naming it.
 */
import { type EntitiesRepository, type EntityRecord, mergeDetails } from "../store/entities.ts";
import { entityFields, strings, text } from "./common.ts";

export const RECORD_TYPES = ["a", "aaaa", "cname", "mx", "ns", "txt", "soa", "caa", "srv"] as const;
/** Name kinds, most specific first. */
export const DOMAIN_KINDS = ["Domain", "Nameserver", "DnsRecord"];

/** Folds the entities of one name into one: the most specific kind, the details of all. */
function fold(sightings: EntityRecord[]): EntityRecord & { nameServer: boolean } {
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

export async function domainsView(
  entities: EntitiesRepository,
  collectionId: number,
  page: { limit?: number; offset?: number } = {},
) {
  // A page is a page of names, so a name's entities are never split across pages.
  const pageNames =
    page.limit === undefined ? undefined : await entities.currentNames(collectionId, DOMAIN_KINDS, page);
  const names = await entities.current(collectionId, {
    kinds: DOMAIN_KINDS,
    order: "name",
    names: pageNames,
  });
  const byName = new Map<string, EntityRecord[]>();
  for (const entity of names) byName.set(entity.name, [...(byName.get(entity.name) ?? []), entity]);
  return [...byName.values()].map(fold).map((entity) => {
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
  });
}
