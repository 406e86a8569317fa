/**
 * A domain's SPF policy followed as a receiver evaluates it (RFC 7208): through `include:` and
 * `redirect=` to the policies of the domains it names, which are the organisations allowed to send
 * mail for it. Terms that cost a DNS look-up (`include`, `a`, `mx`, `ptr`, `exists`, `redirect`) are
 * counted across the whole tree; past RFC 7208's limit of 10 the policy is a permanent error for every
 * receiver and nothing further is asked. Only TXT records are read, through the run's resolvers.
 */
import { canonicalName } from "./net/dns-client.ts";

/** RFC 7208 §4.6.4: at most 10 terms that cause DNS look-ups. */
export const SPF_LOOKUP_LIMIT = 10;
/** RFC 7208 §4.6.4: at most 2 void look-ups (no answer) before a permanent error. */
const VOID_LOOKUP_LIMIT = 2;

export interface SpfTree {
  /** Domains reached through `include:` and `redirect=`, in evaluation order, each once. */
  includes: string[];
  /** Terms that cost a DNS look-up, across the policy and those it includes. */
  lookups: number;
  /** Why a receiver would fail the policy (`more than 10 DNS look-ups`, `include:x has no SPF record`). */
  errors: string[];
}

/** Reads a name's TXT records: [] when it has none or does not exist, undefined when DNS did not answer. */
export type TxtReader = (name: string) => Promise<string[] | undefined>;

const LOOKUP_TERM = /^[+?~-]?(include|a|mx|ptr|exists)(?:[:/]|$)/i;

/** The SPF record among a name's TXT records: exactly one `v=spf1` (RFC 7208 §4.5). */
export function spfRecord(txt: string[]): string | undefined {
  const records = txt.filter((text) => /^v=spf1(\s|$)/i.test(text));
  return records.length === 1 ? records[0] : undefined;
}

/** A domain-spec without macros, as a name; undefined for `%{…}` specs (they depend on the sender). */
function target(spec: string): string | undefined {
  if (spec.includes("%")) return undefined;
  const name = canonicalName(spec.trim());
  return /^[a-z0-9_-]+(\.[a-z0-9_-]+)+$/i.test(name) ? name.toLowerCase() : undefined;
}

export async function followSpf(domain: string, record: string, readTxt: TxtReader): Promise<SpfTree> {
  const tree: SpfTree = { includes: [], lookups: 0, errors: [] };
  const seen = new Set([domain.toLowerCase()]);
  let voids = 0;
  const fail = (error: string) => {
    if (!tree.errors.includes(error)) tree.errors.push(error);
  };

  const evaluate = async (policy: string): Promise<void> => {
    const terms = policy.split(/\s+/).slice(1);
    const redirect = terms.find((term) => /^redirect=/i.test(term));
    const hasAll = terms.some((term) => /^[+?~-]?all$/i.test(term));
    const follow: string[] = [];
    for (const term of terms) {
      const lookup = LOOKUP_TERM.exec(term);
      if (!lookup) continue;
      tree.lookups++;
      if (lookup[1].toLowerCase() === "include") follow.push(term.replace(/^[+?~-]?include:/i, ""));
    }
    // RFC 7208 §6.1: a redirect is ignored when the policy has an `all` term.
    if (redirect && !hasAll) {
      tree.lookups++;
      follow.push(redirect.slice("redirect=".length));
    }
    for (const spec of follow) {
      if (tree.lookups > SPF_LOOKUP_LIMIT) break;
      const name = target(spec);
      if (!name || seen.has(name)) continue;
      seen.add(name);
      tree.includes.push(name);
      const txt = await readTxt(name);
      // No answer (a timeout) proves nothing: the include is listed, its policy not followed.
      if (txt === undefined) continue;
      const next = spfRecord(txt);
      if (!next) {
        if (txt.length === 0 && ++voids > VOID_LOOKUP_LIMIT)
          fail(`more than ${VOID_LOOKUP_LIMIT} look-ups found no record at all`);
        fail(`include ${name} has no SPF record`);
        continue;
      }
      await evaluate(next);
    }
  };

  await evaluate(record);
  if (tree.lookups > SPF_LOOKUP_LIMIT)
    fail(`more than ${SPF_LOOKUP_LIMIT} DNS look-ups (${tree.lookups} counted before stopping)`);
  return tree;
}
