/**
 * Permutations of the names a run finds (the patterns of alterx and dnsgen): a name's first label with
 * its number moved up and down (`api1` → `api2`, `api0`), joined with environment and service words by
 * a dash (`api-dev`, `dev-api`), as a label of its own (`dev.api.example.com`) and run together
 * (`apidev`). Each candidate is resolved through the wildcard filter before it is a name; the number of
 * candidates is bounded per run (SIGHTLINE_PERMUTATIONS, in each process that works on the run), and a
 * permuted name is not permuted again.
 */

import { setBounded } from "../../core/bounded-map.ts";
import { CandidateResolver } from "../candidates.ts";
import type { DiscoveryModule } from "../module.ts";
import { DnsClient } from "../net/dns-client.ts";

export const PERMUTATIONS = "permutations";

/** The shipped words: environments and services that names are commonly made of. */
export const PERMUTATION_WORDS = [
  "dev",
  "test",
  "stage",
  "staging",
  "prod",
  "qa",
  "uat",
  "beta",
  "demo",
  "int",
  "internal",
  "old",
  "new",
  "api",
  "admin",
  "app",
  "web",
  "portal",
  "vpn",
  "mail",
  "cdn",
  "static",
  "backup",
  "v1",
  "v2",
];

/** Candidates a run has left, by run id (per process). */
const budgets = new Map<number, number>();

/** The permutations of `name`, most likely first, none equal to it, each a valid label. */
export function permute(name: string, words: readonly string[]): string[] {
  const dot = name.indexOf(".");
  if (dot <= 0) return [];
  const label = name.slice(0, dot);
  const parent = name.slice(dot + 1);
  const out = new Set<string>();
  const add = (candidate: string) => {
    if (candidate !== label && /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(candidate))
      out.add(`${candidate}.${parent}`);
  };
  const number = /^(.*?)(\d+)(\D*)$/.exec(label);
  if (number) {
    const [, head, digits, tail] = number;
    for (const step of [1, -1, 2, 3]) {
      const next = Number(digits) + step;
      if (next >= 0) add(`${head}${String(next).padStart(digits!.length, "0")}${tail}`);
    }
  } else for (const n of ["1", "2", "01"]) add(`${label}${n}`);
  for (const word of words) {
    add(`${label}-${word}`);
    add(`${word}-${label}`);
  }
  for (const word of words) if (`${word}.${name}`.length <= 253) out.add(`${word}.${name}`);
  for (const word of words) {
    add(`${label}${word}`);
    add(`${word}${label}`);
  }
  out.delete(name);
  return [...out];
}

export const permutations: DiscoveryModule = {
  name: PERMUTATIONS,
  consumes: ["DnsRecord"],
  produces: ["DnsRecord"],
  waits: true,
  wants: (entity) => entity.details?.source !== "permutation" && !entity.name.startsWith("*."),
  async run(entity, ctx) {
    const bound = ctx.settings.permutations ?? 0;
    if (bound <= 0) return;
    const runId = ctx.runId ?? 0;
    const left = budgets.get(runId) ?? bound;
    if (left <= 0) return;
    const covers = ctx.covers ?? (() => true);
    const candidates = permute(entity.name, ctx.settings.permutationWords ?? PERMUTATION_WORDS)
      .filter(covers)
      .slice(0, left);
    setBounded(budgets, runId, left - candidates.length, 64);
    if (left - candidates.length <= 0)
      ctx.note(
        `The run's ${bound} permutations (SIGHTLINE_PERMUTATIONS) are used up; names found later are not permuted.`,
      );
    let found = 0;
    await new CandidateResolver(new DnsClient(ctx)).resolve(candidates, (resolution) => {
      if (resolution.state !== "live") return;
      found++;
      ctx.emit({
        kind: "DnsRecord",
        name: resolution.name,
        details: { source: "permutation", permuted_from: entity.name },
      });
    });
    if (found > 0)
      ctx.emit({
        kind: entity.kind,
        name: entity.name,
        details: { permutations: { tried: candidates.length, found } },
      });
  },
};
