/** The dashboard's browser twin of node:url's domainToASCII answers exactly what Node's does. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { domainToASCII } from "node:url";
import fc from "fast-check";
import { domainToASCII as browserDomainToASCII } from "../../src/web/shims/node-url.ts";

const CASES = [
  "example.com",
  "Bücher.example",
  "faß.de",
  "例え.テスト",
  "ｅｘａｍｐｌｅ．com",
  "EXAMPLE.COM.",
  "a_b.example",
  "-a.example",
  "*.example.com",
  "xn--bcher-kva.example",
  "a.0x10",
  "0x7f.1",
  "1.2.3",
  "[::1]",
  "ex%61mple.com",
  "a%2fb.com",
  "%zz.com",
  "a b.example",
  "a\tb.com",
  "a\u200db.com",
  "a/b",
  "a:80",
  "a?b.com",
  "a#b.com",
  "user@a.com",
  "a\\b.com",
  "a..b",
  "",
  "sentinel.invalid",
];

test("known tricky names", () => {
  for (const name of CASES)
    assert.equal(browserDomainToASCII(name), domainToASCII(name), JSON.stringify(name));
});

test("random names built from the characters hosts are made of", () => {
  const char = fc.constantFrom(..."abcxyz019-_.%:/@[]ßüé例 \tXN".split(""));
  fc.assert(
    fc.property(fc.array(char, { maxLength: 24 }), (chars) => {
      const name = chars.join("");
      assert.equal(browserDomainToASCII(name), domainToASCII(name), JSON.stringify(name));
    }),
    { numRuns: 2000 },
  );
});
