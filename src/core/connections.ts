/**
 * Third parties a surface depends on, grouped by registrable domain: a web application that loads
 * scripts, stylesheets, frames or other resources from a host, posts its forms to it, or redirects to
 * it, depends on whoever runs that host; a name that is an alias (CNAME) of another organisation's
 * name is served by it; mail, sending and DNS providers show through the MX records, the SPF policy
 * (its includes followed) and the NS records of the collection's names. Decided when a run finishes,
 * with that run's scope, and kept with the run.
 */
import { getDomain } from "tldts";
import { strings } from "./details.ts";
import { DOMAIN_KINDS } from "./entities.ts";
import type { ResultEntity } from "./facts.ts";

export const CONNECTION_KINDS = [
  "script",
  "stylesheet",
  "frame",
  "form",
  "web_resource",
  "redirect",
  "cname",
  "mail",
  "spf",
  "dns",
] as const;
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

/**
 * The host names a name's records point at, as the DNS module keeps them: MX ("10 mail.example.com"),
 * NS, the CNAME target, and the domains its SPF policy includes.
 */
function recordHosts(details: Record<string, unknown>) {
  const records = (details.records ?? {}) as Record<string, unknown>;
  const host = (value: string) => value.trim().split(/\s+/).at(-1)!.toLowerCase().replace(/\.$/, "");
  return {
    mx: strings(records.mx).map(host),
    ns: strings(records.ns).map(host),
    cname: strings(records.cname).map(host),
    spf: strings(details.spf_includes),
  };
}

/** The web resource kinds an application's `resource_hosts` may list. */
const RESOURCE_KINDS = ["stylesheet", "frame", "form"] as const;

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
      const kindOf = new Map<string, ConnectionKind>(
        scripts.map((script) => [hostOf(script) ?? "", "script"]),
      );
      const byKind = (entity.details.resource_hosts ?? {}) as Record<string, unknown>;
      for (const kind of RESOURCE_KINDS)
        for (const host of strings(byKind[kind])) {
          this.#add(host, kind, entity.name);
          if (!kindOf.has(host)) kindOf.set(host, kind);
        }
      for (const host of strings(entity.details.request_hosts))
        if (!kindOf.has(host)) this.#add(host, "web_resource", entity.name);
      for (const url of strings(entity.details.redirect_chain))
        this.#add(hostOf(url), "redirect", entity.name);
    } else if (DOMAIN_KINDS.includes(entity.kind)) {
      const hosts = recordHosts(entity.details);
      for (const host of hosts.mx) this.#add(host, "mail", entity.name);
      for (const host of hosts.spf) this.#add(host, "spf", entity.name);
      for (const host of hosts.ns) this.#add(host, "dns", entity.name);
      for (const host of hosts.cname) this.#add(host, "cname", entity.name);
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
