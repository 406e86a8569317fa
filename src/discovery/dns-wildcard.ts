/**
 * Wildcard detection: a zone with `*.zone` answers every name, so a brute force would "find" every
 * word. Random labels are asked first; a candidate whose every address is one of the wildcard's is
 * taken for a wildcard answer, not a name.
 */
import { randomBytes } from "node:crypto";
import type { DnsClient } from "./net/dns-client.ts";

export type WildcardProbe =
  | { kind: "none" }
  | { kind: "wildcard"; addresses: string[]; aliases: string[] }
  /** No server answered: the zone cannot be brute-forced now. */
  | { kind: "unanswered" };

const PROBES = 3;

export async function probeWildcard(dns: DnsClient, zone: string): Promise<WildcardProbe> {
  const answers = await Promise.all(
    Array.from({ length: PROBES }, () => dns.probe(`${randomBytes(8).toString("hex")}.${zone}`)),
  );
  if (answers.every((answer) => answer.failure === "timeout" || answer.failure === "error"))
    return { kind: "unanswered" };
  if (!answers.some((answer) => answer.exists)) return { kind: "none" };
  const addresses = new Set(answers.flatMap((answer) => answer.addresses));
  const aliases = new Set(answers.flatMap((answer) => (answer.alias ? [answer.alias] : [])));
  return { kind: "wildcard", addresses: [...addresses].sort(), aliases: [...aliases].sort() };
}

/** Does this answer look like the wildcard's rather than a name of its own? */
export function answersLikeWildcard(
  probe: WildcardProbe,
  answer: { addresses: string[]; alias?: string },
): boolean {
  if (probe.kind !== "wildcard") return false;
  const wildcard = new Set(probe.addresses);
  return (
    answer.addresses.every((address) => wildcard.has(address)) &&
    (answer.alias === undefined || probe.aliases.includes(answer.alias))
  );
}
