/**
 * Third parties a surface depends on, grouped by registrable domain: a web application that loads
 * scripts or other resources from a host, or redirects to it, depends on whoever runs that host; mail
 * and DNS providers show through MX and NS records of the collection's names. Decided when a run
 * finishes, with that run's scope, and kept with the run.
 */
import { getDomain } from "tldts";
import { strings } from "./details.ts";
import { DOMAIN_KINDS } from "./entities.ts";
import type { ResultEntity } from "./facts.ts";

export const CONNECTION_KINDS = ["script", "web_resource", "redirect", "mail", "dns"] as const;
export type ConnectionKind = (typeof CONNECTION_KINDS)[number];

/** One third party as the connections result lists it. */
export interface Connection {
  name: string;
  kinds: ConnectionKind[];
  hosts: string[];
  count: number;
  used_by: string[];
}

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
 * The third parties of a collection, gathered entity by entity. `inScope` says whether a host name
 * belongs to the collection (its seeds and what lies under them). Names contribute the hosts of their
 * MX and NS records. Holds one group per third party, however many entities are added.
 */
export class ConnectionGroups {
  readonly #groups = new Map<
    string,
    { kinds: Set<ConnectionKind>; hosts: Set<string>; users: Set<string> }
  >();
  readonly #inScope: (host: string) => boolean;

  constructor(inScope: (host: string) => boolean) {
    this.#inScope = inScope;
  }

  #add(host: string | undefined, kind: ConnectionKind, user: string) {
    if (!host || this.#inScope(host) || /^[\d.]+$|:/.test(host)) return;
    const name = getDomain(host) ?? host;
    const group = this.#groups.get(name) ?? { kinds: new Set(), hosts: new Set(), users: new Set() };
    group.kinds.add(kind);
    group.hosts.add(host);
    group.users.add(user);
    this.#groups.set(name, group);
  }

  add(entity: ResultEntity): void {
    if (!entity.scoped) return;
    if (entity.kind === "Uri") {
      const scripts = strings(entity.details.scripts);
      for (const script of scripts) this.#add(hostOf(script), "script", entity.name);
      const scriptHosts = new Set(scripts.map(hostOf));
      for (const host of strings(entity.details.request_hosts))
        if (!scriptHosts.has(host)) this.#add(host, "web_resource", entity.name);
      for (const url of strings(entity.details.redirect_chain))
        this.#add(hostOf(url), "redirect", entity.name);
    } else if (DOMAIN_KINDS.includes(entity.kind)) {
      const { mx, ns } = mailAndDnsHosts(entity.details);
      for (const host of mx) this.#add(host, "mail", entity.name);
      for (const host of ns) this.#add(host, "dns", entity.name);
    }
  }

  /** The groups, most used first. */
  result(): Connection[] {
    return [...this.#groups]
      .map(([name, group]) => ({
        name,
        kinds: CONNECTION_KINDS.filter((kind) => group.kinds.has(kind)),
        hosts: [...group.hosts].sort(),
        count: group.users.size,
        used_by: [...group.users].sort(),
      }))
      .sort((a, b) => b.count - a.count || a.name.localeCompare(b.name));
  }
}

export function buildConnections(entities: Iterable<ResultEntity>, inScope: (host: string) => boolean) {
  const groups = new ConnectionGroups(inScope);
  for (const entity of entities) groups.add(entity);
  return groups.result();
}
