/**
 * The connections result (third-party suppliers): the organisations outside the collection's scope
 * that its surface depends on, grouped by registrable domain (src/core/connections.ts), as each run's
 * finish decided them.
 */
import { Type } from "typebox";
import { CONNECTION_KINDS, type Connection } from "../core/connections.ts";
import { Scope } from "../core/scope.ts";
import type { Seed } from "../core/seeds.ts";
import { gatherConnections, type RunConnectionsRepository } from "../store/connections.ts";
import type { ResultQueries, ResultRun } from "../store/result-queries.ts";

export const ConnectionItem = Type.Object({
  name: Type.String({ description: 'The third party by registrable domain, e.g. "jsdelivr.net".' }),
  kinds: Type.Array(Type.String({ enum: [...CONNECTION_KINDS] }), {
    description:
      "How the surface depends on it: script, stylesheet, frame, form (an application's form posts to it), web_resource (other resources), redirect, cname (a name is an alias of its name), mail (MX), spf (allowed to send the domain's mail), dns (NS).",
  }),
  hosts: Type.Array(Type.String(), { description: "Its host names the surface uses." }),
  count: Type.Integer({ description: "How many of the collection's entities depend on it." }),
  used_by: Type.Array(Type.String(), { description: "The applications and domains that depend on it." }),
});

/**
 * The connections as of the run: what its finish decided with its own scope, or, for a run finished
 * before they were kept, folded now from its scoped names and applications with today's seeds.
 */
export async function connectionsOf(
  queries: ResultQueries,
  stored: RunConnectionsRepository,
  run: ResultRun | undefined,
  seeds: () => Promise<Seed[]>,
): Promise<Connection[]> {
  if (!run) return [];
  const decided = await stored.of(run.runId);
  if (decided) return decided;
  const scope = new Scope(await seeds(), { scanAllow: [], scanDeny: [] });
  return gatherConnections(queries, run, (host) => scope.coversName(host));
}
