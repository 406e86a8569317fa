/**
 * One passive-source module on one domain against the lab's DNS and a hostile fake: a flood of names
 * bounded, names that cannot be names refused with a note, the rest normalised and resolved, the
 * status counting each; a source that fails reports why and the module ends cleanly.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Scope } from "../../src/core/scope.ts";
import type { SourceAccess } from "../../src/discovery/module.ts";
import { passiveSourceModule } from "../../src/discovery/modules/passive-sources.ts";
import { anubis } from "../../src/discovery/sources/anubis.ts";
import { runModule } from "../helpers/discovery.ts";
import { type SourceFakes, startSourceFakes } from "../helpers/source-fakes.ts";
import { startLab } from "../lab/index.ts";
import type { Lab } from "../lab/types.ts";

describe("a passive-source module on hostile answers", () => {
  let lab: Lab;
  let fakes: SourceFakes;
  const module = passiveSourceModule(anubis);
  const scope = new Scope([{ type: "Domain", name: "acme.test" }], {
    scanAllow: ["127.0.0.0/8"],
    scanDeny: [],
  });

  before(async () => {
    lab = await startLab();
    fakes = await startSourceFakes("127.0.0.67");
  });
  after(async () => {
    await fakes?.close();
    await lab?.stop();
  });

  const access = (extra: Partial<SourceAccess> = {}): SourceAccess => ({
    chosen: ["anubis"],
    urls: { anubis: fakes.url("anubis") },
    keys: {},
    timeoutMs: 2000,
    maxBytes: 1024 * 1024,
    retries: 0,
    maxNames: 100_000,
    requestsPerMinute: 60_000,
    ...extra,
  });
  const ask = (sources: SourceAccess) =>
    runModule(
      module,
      { kind: "Domain", name: "acme.test" },
      { dnsServers: [lab.resolver], timeoutMs: 1000, sources, scope },
    );

  test("garbage names are refused with a note; the rest normalised, resolved and counted", async () => {
    fakes.fault = "none";
    fakes.extra.set("anubis acme.test", [
      "WWW.ACME.TEST.",
      `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(63)}.acme.test`,
      "xn--zzzzzzzz-9999.acme.test",
      "evil\u0007.acme.test",
      "  ",
    ]);
    const outcome = await ask(access());
    const status = outcome.sources[0]!;
    assert.equal(status.queried, true);
    assert.equal(status.failure, undefined);
    assert.equal(status.refused, 4, "too long, bad punycode, a control character, blank");
    assert.ok(
      outcome.notes.some((note) => /refused, e\.g\. .*punycode that does not decode/.test(note)),
      outcome.notes.join("\n"),
    );
    const names = outcome.entities
      .filter((entity) => entity.kind === "DnsRecord")
      .map((entity) => entity.name);
    assert.ok(names.includes("www.acme.test"), "normalised and resolved");
    assert.ok(names.includes("api.acme.test"));
    assert.ok(names.includes("old.acme.test"), "a dangling CNAME exists in DNS");
    assert.ok(names.includes("cdn.partner.example"), "out of scope: recorded as it is");
    assert.ok(status.live.includes("www.acme.test"));
    assert.equal(
      status.live.includes("cdn.partner.example"),
      false,
      "an out-of-scope name is never resolved",
    );
  });

  test("a flood of names stops at the bound, with a note", async () => {
    fakes.extra.set(
      "anubis acme.test",
      Array.from({ length: 5000 }, (_, i) => `n${i}.acme.test`),
    );
    const outcome = await ask(access({ maxNames: 300 }));
    const status = outcome.sources[0]!;
    assert.ok(status.names <= 300, `${status.names} names kept`);
    assert.ok(outcome.notes.some((note) => /more than 300 names .*SIGHTLINE_SOURCE_MAX_NAMES/.test(note)));
    assert.ok(status.historical > 0, "names that do not resolve are history");
    const seed = outcome.entities.find((entity) => entity.kind === "Domain")!;
    assert.ok(Array.isArray(seed.details?.historical_names));
  });

  test("a failing source reports why, and the module ends without throwing", async () => {
    fakes.fault = "malformed";
    try {
      const outcome = await ask(access());
      assert.match(outcome.sources[0]!.failure!, /^parse error:/);
      assert.equal(outcome.sources[0]!.answered, 0, "garbage is not an answer");
      assert.equal(outcome.sources[0]!.requests, 1);
    } finally {
      fakes.fault = "none";
    }
  });

  test("a source the run did not choose is reported, not asked", async () => {
    const before = fakes.requests.get("anubis") ?? 0;
    const outcome = await ask(access({ chosen: [] }));
    assert.equal(outcome.sources[0]!.queried, false);
    assert.equal(fakes.requests.get("anubis") ?? 0, before);
  });
});
