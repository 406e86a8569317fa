import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { compareVersions, isPreciseVersion } from "../../../src/core/versions.ts";

describe("compareVersions", () => {
  const ordered: Array<[string, string]> = [
    ["2.4.49", "2.4.50"],
    ["2.4.9", "2.4.10"],
    ["1.0.2", "1.0.2k"],
    ["1.0.2a", "1.0.2k"],
    ["1.0.2k", "1.0.3"],
    ["8.9", "8.9p1"],
    ["8.9p1", "8.9p2"],
    ["8.9p1", "9.0"],
    ["2.0rc1", "2.0"],
    ["2.0alpha", "2.0beta1"],
    ["2.0beta2", "2.0rc1"],
    ["1.9.9", "1.10"],
    ["7.3.10", "7.3.11"],
  ];
  for (const [lower, higher] of ordered) {
    it(`${lower} < ${higher}`, () => {
      assert.equal(compareVersions(lower, higher), -1);
      assert.equal(compareVersions(higher, lower), 1);
    });
  }

  it("treats missing zero segments and a leading v as equal", () => {
    assert.equal(compareVersions("1.0", "1.0.0"), 0);
    assert.equal(compareVersions("v2.4.49", "2.4.49"), 0);
    assert.equal(compareVersions("2.4.49", "2.4.49"), 0);
  });

  it("is antisymmetric and reflexive", () => {
    const version = fc
      .array(fc.oneof(fc.nat(30).map(String), fc.constantFrom("p1", "rc1", "a", "beta")), {
        minLength: 1,
        maxLength: 4,
      })
      .map((parts) => parts.join("."));
    fc.assert(
      fc.property(version, version, (a, b) => {
        assert.equal(compareVersions(a, b), -compareVersions(b, a) || 0);
        assert.equal(compareVersions(a, a), 0);
      }),
    );
  });

  it("knows which versions are precise enough for CVE look-ups", () => {
    assert.equal(isPreciseVersion("2.4.49"), true);
    assert.equal(isPreciseVersion("8.9p1"), true);
    assert.equal(isPreciseVersion("2"), false);
    assert.equal(isPreciseVersion(""), false);
    assert.equal(isPreciseVersion(undefined), false);
  });
});
