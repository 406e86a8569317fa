/** The wire formats, property-tested both ways. */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  formatDecimalExponent,
  formatTimestamp,
  parseDecimalExponent,
  parseTimestamp,
} from "../../src/core/formats.ts";

test("decimal-exponent examples from DESIGN.md", () => {
  const examples: Array<[number, string]> = [
    [443, "0.443e3"],
    [1, "0.1e1"],
    [10, "0.1e2"],
    [0, "0.0"],
    [-5, "-0.5e1"],
    [0.05, "0.5e-1"],
    [65535, "0.65535e5"],
  ];
  for (const [value, text] of examples) {
    assert.equal(formatDecimalExponent(value), text);
    assert.equal(parseDecimalExponent(text), value);
  }
});

test("decimal-exponent round-trips every finite number and is normalised", () => {
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (value) => {
      const text = formatDecimalExponent(value);
      assert.match(text, /^-?0\.(0|[1-9]\d*e-?\d+)$/);
      assert.ok(!/0e/.test(text), `no trailing zeros in ${text}`);
      assert.equal(parseDecimalExponent(text), value === 0 ? 0 : value);
    }),
  );
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 2 ** 31 }), (value) => {
      assert.equal(
        formatDecimalExponent(value),
        `0.${String(value).replace(/0+$/, "")}e${String(value).length}`,
      );
    }),
  );
});

test("decimal-exponent parsing rejects other spellings", () => {
  for (const text of ["443", "4.43e2", "0.4430e3", "0.e1", "", "0.443e", "1e3", "0.0443e4"]) {
    assert.throws(() => parseDecimalExponent(text), SyntaxError, text);
  }
  assert.throws(() => formatDecimalExponent(Number.NaN), RangeError);
});

test("timestamps round-trip at second precision", () => {
  fc.assert(
    fc.property(
      fc.date({ min: new Date("1970-01-01"), max: new Date("9999-12-31"), noInvalidDate: true }),
      (date) => {
        const text = formatTimestamp(date);
        assert.match(text, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
        assert.equal(parseTimestamp(text).getTime(), Math.floor(date.getTime() / 1000) * 1000);
      },
    ),
  );
  assert.equal(formatTimestamp("2026-11-22T09:35:40.123Z"), "2026-11-22 09:35:40 UTC");
  assert.throws(() => parseTimestamp("2026-11-22T09:35:40Z"), SyntaxError);
});

test("timestamps from ISO-8601 text are what a Date of that text formats, rolled-over days and all", () => {
  const viaDate = (text: string) => {
    const date = new Date(text);
    return Number.isNaN(date.getTime())
      ? "invalid"
      : `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
  };
  const formatted = (text: string) => {
    try {
      return formatTimestamp(text);
    } catch (error) {
      assert.ok(error instanceof RangeError);
      return "invalid";
    }
  };
  const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, "0"));
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 9999 }).map((n) => String(n).padStart(4, "0")),
      two(14),
      two(32),
      two(25),
      two(61),
      two(61),
      fc.constantFrom("", ".5", ".123", ".123456"),
      (year, month, day, hour, minute, second, fraction) => {
        const text = `${year}-${month}-${day}T${hour}:${minute}:${second}${fraction}Z`;
        assert.equal(formatted(text), viaDate(text), text);
      },
    ),
    { numRuns: 2000 },
  );
  for (const text of [
    "2024-02-29T23:59:59.999Z",
    "2026-02-29T00:00:00Z",
    "2026-04-31T10:00:00Z",
    "2026-01-01T24:00:00Z",
  ])
    assert.equal(formatted(text), viaDate(text), text);
});
