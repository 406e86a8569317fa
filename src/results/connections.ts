/**
 * The connections result (third-party suppliers): the organisations outside the collection's scope
 * that its surface depends on, grouped by registrable domain. A web application that loads scripts
 * or other resources from a host, or redirects to it, depends on whoever runs that host; mail and DNS
 * providers show through MX and NS records of the collection's domains.
 */
import { getDomain } from "tldts";
import { Type } from "typebox";
import { Scope } from "../discovery/scope.ts";
import type { CollectionsRepository } from "../store/collections.ts";
import type { EntitiesRepository } from "../store/entities.ts";
import { DOMAIN_KINDS } from "./domains.ts";
import { type ResultEntity, strings } from "./web-entities.ts";

export const CONNECTION_KINDS = ["script", "web_resource", "redirect", "mail", "dns"] as const;
export type ConnectionKind = (typeof CONNECTION_KINDS)[number];

export const ConnectionItem = Type.Object({
  name: Type.String({ description: 'The third party by registrable domain, e.g. "jsdelivr.net".' }),
  kinds: Type.Array(Type.String({ enum: [...CONNECTION_KINDS] }), {
    description: "How the surface depends on it: script, web_resource, redirect, mail (MX), dns (NS).",
  }),
  hosts: Type.Array(Type.String(), { description: "Its host names the surface uses." }),
  count: Type.Integer({ description: "How many of the collection's entities depend on it." }),
  used_by: Type.Array(Type.String(), { description: "The applications and domains that depend on it." }),
});

const hostOf = (url: string) => {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return undefined;
  }
};

/** The host names of a name's MX ("10 mail.example.com") and NS records, as the DNS module keeps them. */
function mailAndDnsHosts(details: Record<string, unknown>) {
  const records = (details.records ?? {}) as Record<string, unknown>;
  const host = (value: string) => value.trim().split(/\s+/).at(-1)!.toLowerCase().replace(/\.$/, "");
  return { mx: strings(records.mx).map(host), ns: strings(records.ns).map(host) };
}

/**
 * `inScope` says whether a host name belongs to the collection (its seeds and what lies under them).
 * Names contribute the hosts of their MX and NS records.
 */
export function buildConnections(entities: Iterable<ResultEntity>, inScope: (host: string) => boolean) {
  const groups = new Map<string, { kinds: Set<ConnectionKind>; hosts: Set<string>; users: Set<string> }>();
  const add = (host: string | undefined, kind: ConnectionKind, user: string) => {
    if (!host || inScope(host) || /^[\d.]+$|:/.test(host)) return;
    const name = getDomain(host) ?? host;
    const group = groups.get(name) ?? { kinds: new Set(), hosts: new Set(), users: new Set() };
    group.kinds.add(kind);
    group.hosts.add(host);
    group.users.add(user);
    groups.set(name, group);
  };
  for (const entity of entities) {
    if (!entity.scoped) continue;
    if (entity.kind === "Uri") {
      const scripts = strings(entity.details.scripts);
      for (const script of scripts) add(hostOf(script), "script", entity.name);
      const scriptHosts = new Set(scripts.map(hostOf));
      for (const host of strings(entity.details.request_hosts))
        if (!scriptHosts.has(host)) add(host, "web_resource", entity.name);
      for (const url of strings(entity.details.redirect_chain)) add(hostOf(url), "redirect", entity.name);
    } else if (DOMAIN_KINDS.includes(entity.kind)) {
      const { mx, ns } = mailAndDnsHosts(entity.details);
      for (const host of mx) add(host, "mail", entity.name);
      for (const host of ns) add(host, "dns", entity.name);
    }
  }
  return [...groups]
    .map(([name, group]) => ({
      name,
      kinds: CONNECTION_KINDS.filter((kind) => group.kinds.has(kind)),
      hosts: [...group.hosts].sort(),
      count: group.users.size,
      used_by: [...group.users].sort(),
    }))
    .sort((a, b) => b.count - a.count || a.name.localeCompare(b.name));
}

export async function connectionsView(
  entities: EntitiesRepository,
  collections: CollectionsRepository,
  collectionId: number,
) {
  const [found, seeds] = await Promise.all([
    entities.current(collectionId, { kinds: ["Uri", ...DOMAIN_KINDS] }),
    collections.seeds(collectionId),
  ]);
  const scope = new Scope(seeds, { scanAllow: [], scanDeny: [] });
  return buildConnections(found, (host) => scope.coversName(host));
}
