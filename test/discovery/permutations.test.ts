/**
 * Permutations against the lab's DNS: the patterns (number increments, dash and dot joins, words as
 * prefixes and suffixes), the names that exist found and resolved, a wildcard zone's answers dropped,
 * the run's bound on candidates, and a word list of one's own.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Scope } from "../../src/core/scope.ts";
import { PERMUTATION_WORDS, permutations, permute } from "../../src/discovery/modules/permutations.ts";
import { runModule } from "../helpers/discovery.ts";
import { defaultWorld, startLab } from "../lab/index.ts";
import type { Lab, LabWorld } from "../lab/types.ts";

/** Names only a permutation of `api.acme.test` and `web1.acme.test` reaches. */
const PERMUTED = ["api-staging.acme.test", "dev.api.acme.test", "web2.acme.test"];

function permutedWorld(base: string): LabWorld {
  const world = defaultWorld(base);
  return {
    ...world,
    hosts: [
      ...world.hosts,
      { ip: `${base}.6.20`, names: [...PERMUTED, "web1.acme.test"], ptr: null, services: [] },
    ],
  };
}

test("the patterns: number increments, dash joins both ways, a dot join, words run together", () => {
  const names = permute("web1.acme.test", ["dev"]);
  for (const name of [
    "web2.acme.test",
    "web0.acme.test",
    "web3.acme.test",
    "web1-dev.acme.test",
    "dev-web1.acme.test",
    "dev.web1.acme.test",
    "web1dev.acme.test",
    "devweb1.acme.test",
  ])
    assert.ok(names.includes(name), name);
  assert.deepEqual(permute("api.acme.test", ["dev"]).slice(0, 3), [
    "api1.acme.test",
    "api2.acme.test",
    "api01.acme.test",
  ]);
  assert.equal(names.includes("web1.acme.test"), false, "never the name itself");
  assert.ok(
    permute(`${"a".repeat(60)}.acme.test`, PERMUTATION_WORDS).every(
      (name) => name.split(".")[0]!.length <= 63,
    ),
  );
});

describe("permutations on the lab", () => {
  let lab: Lab;
  before(async () => {
    lab = await startLab({ world: permutedWorld });
  });
  after(() => lab?.stop());

  const scope = new Scope(
    [
      { type: "Domain", name: "acme.test" },
      { type: "Domain", name: "wild.test" },
    ],
    { scanAllow: ["127.0.0.0/8"], scanDeny: [] },
  );
  const settings = (extra: object) => ({ dnsServers: [lab.resolver], timeoutMs: 1000, scope, ...extra });

  test("permuted names that exist are found, resolved first", async () => {
    const found = new Set<string>();
    for (const [runId, name] of [
      [1, "api.acme.test"],
      [1, "web1.acme.test"],
    ] as const) {
      const outcome = await runModule(
        permutations,
        { kind: "DnsRecord", name },
        settings({ permutations: 1000, runId }),
      );
      for (const entity of outcome.entities)
        if (entity.details?.source === "permutation") found.add(entity.name);
    }
    for (const name of PERMUTED) assert.ok(found.has(name), name);
    for (const name of found)
      assert.ok(
        lab.truth.names.some((truth) => truth.name === name),
        `${name} exists in the lab`,
      );
  });

  test("a wildcard zone's answers are not names", async () => {
    const outcome = await runModule(
      permutations,
      { kind: "DnsRecord", name: "www.wild.test" },
      settings({ permutations: 1000, runId: 2 }),
    );
    assert.deepEqual(
      outcome.entities
        .filter((entity) => entity.details?.source === "permutation")
        .map((entity) => entity.name),
      [],
    );
  });

  test("the run's bound: candidates stop there, and the run is told", async () => {
    const first = await runModule(
      permutations,
      { kind: "DnsRecord", name: "web1.acme.test" },
      settings({ permutations: 2, runId: 3 }),
    );
    assert.deepEqual(
      first.entities
        .filter((entity) => entity.details?.source === "permutation")
        .map((entity) => entity.name),
      ["web2.acme.test"],
      "the first two candidates (web2, web0) were tried, and only they",
    );
    assert.ok(first.notes.some((note) => /permutations \(SIGHTLINE_PERMUTATIONS\) are used up/.test(note)));
    const later = await runModule(
      permutations,
      { kind: "DnsRecord", name: "api.acme.test" },
      settings({ permutations: 2, runId: 3 }),
    );
    assert.equal(later.entities.length, 0, "nothing is left for the run");
  });

  test("a word list of one's own", async () => {
    const outcome = await runModule(
      permutations,
      { kind: "DnsRecord", name: "api.acme.test" },
      settings({ permutations: 1000, runId: 4, permutationWords: ["staging"] }),
    );
    const names = outcome.entities
      .filter((entity) => entity.details?.source === "permutation")
      .map((entity) => entity.name);
    assert.ok(names.includes("api-staging.acme.test"));
    assert.equal(names.includes("dev.api.acme.test"), false, "words not in the list are not tried");
  });

  test("only names in the collection's scope are tried", async () => {
    const outcome = await runModule(
      permutations,
      { kind: "DnsRecord", name: "api.acme.test" },
      { dnsServers: [lab.resolver], timeoutMs: 1000, permutations: 1000, runId: 5 },
    );
    assert.equal(outcome.entities.length, 0, "a scope without acme.test permutes nothing under it");
  });

  test("a permuted name is not permuted again", () => {
    assert.equal(
      permutations.wants?.({ kind: "DnsRecord", name: "web2.acme.test", details: { source: "permutation" } }),
      false,
    );
    assert.equal(permutations.wants?.({ kind: "DnsRecord", name: "web2.acme.test", details: {} }), true);
  });
});
