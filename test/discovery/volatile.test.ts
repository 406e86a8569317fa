/** What changes on every visit is shown as "…"; what a reader needs to know about the site is kept. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { stableBanner, stableBody, stableHeaders, stableSetCookie } from "../../src/discovery/volatile.ts";

const DATE = "Sun, 22 Nov 2026 12:00:00 GMT";
const NOW = Date.parse(DATE);

describe("volatile values", () => {
  it("masks the clock, request and trace ids and cache state, and keeps the rest as sent", () => {
    const headers: Array<[string, string]> = [
      ["server", "nginx/1.25.3"],
      ["date", DATE],
      ["age", "17"],
      ["x-request-id", "5f2c"],
      ["x-amzn-requestid", "c0ffee"],
      ["x-b3-traceid", "80f198ee56343ba8"],
      ["x-correlation-id", "42"],
      ["cf-ray", "8e4d-FRA"],
      ["x-cache", "Hit from cloudfront"],
      ["x-runtime", "0.012"],
      ["strict-transport-security", "max-age=31536000"],
      ["x-powered-by", "PHP/8.2.1"],
      ["content-length", "512"],
      ["etag", '"abc"'],
    ];
    assert.deepEqual(stableHeaders(headers), [
      "server: nginx/1.25.3",
      "date: …",
      "age: …",
      "x-request-id: …",
      "x-amzn-requestid: …",
      "x-b3-traceid: …",
      "x-correlation-id: …",
      "cf-ray: …",
      "x-cache: …",
      "x-runtime: …",
      "strict-transport-security: max-age=31536000",
      "x-powered-by: PHP/8.2.1",
      "content-length: 512",
      'etag: "abc"',
    ]);
    // A page with per-response tokens has an ETag and length that change with them.
    assert.deepEqual(stableHeaders(headers.slice(-2), true), ["content-length: …", "etag: …"]);
  });

  it("masks Expires and Last-Modified made from the clock, and keeps fixed ones", () => {
    const at = (name: string, value: string) =>
      stableHeaders([
        ["date", DATE],
        [name, value],
      ])[1];
    assert.equal(at("expires", "Sun, 22 Nov 2026 13:00:00 GMT"), "expires: …", "an hour from now");
    assert.equal(at("last-modified", "Sun, 22 Nov 2026 11:59:59 GMT"), "last-modified: …", "just made");
    assert.equal(at("expires", "0"), "expires: 0");
    assert.equal(at("expires", "Thu, 19 Nov 1981 08:52:00 GMT"), "expires: Thu, 19 Nov 1981 08:52:00 GMT");
    assert.equal(
      at("last-modified", "Tue, 14 Sep 2021 08:00:00 GMT"),
      "last-modified: Tue, 14 Sep 2021 08:00:00 GMT",
    );
  });

  it("shows a cookie's name and attributes, never its value, and a CSP without its nonce", () => {
    assert.equal(
      stableSetCookie("sid=3f9a; Path=/; Expires=Mon, 23 Nov 2026 12:00:00 GMT; Secure; HttpOnly", NOW),
      "sid=…; Path=/; Expires=…; Secure; HttpOnly",
    );
    assert.equal(
      stableSetCookie("gone=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0", NOW),
      "gone=…; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0",
    );
    assert.equal(stableSetCookie("flag", NOW), "flag=…");
    assert.deepEqual(
      stableHeaders([
        ["date", DATE],
        ["set-cookie", "a=1; path=/"],
        ["content-security-policy", "script-src 'self' 'nonce-r4nd0m+/=='; object-src 'none'"],
      ]),
      [
        "date: …",
        "set-cookie: a=…; path=/",
        "content-security-policy: script-src 'self' 'nonce-…'; object-src 'none'",
      ],
    );
  });

  it("blanks per-response tokens of a page for its hash, and only those", () => {
    const page = (token: string) =>
      `<html><head><meta name="csrf-token" content="${token}"><script nonce="${token}">x()</script></head>` +
      `<body><form><input type="hidden" name="__VIEWSTATE" value="${token}"><input name="q" value="search"></form>` +
      `<script>var s = {"nonce":"${token}","root":"/"};</script></body></html>`;
    const [one, two] = [stableBody(page("a1b2")), stableBody(page("c3d4"))];
    assert.equal(one.text, two.text);
    assert.equal(one.varies, true);
    assert.match(one.text, /<input name="q" value="search">/, "a visible field's value is content");
    const plain = "<html><body><p>Hello</p></body></html>";
    assert.deepEqual(stableBody(plain), { text: plain, varies: false });
    assert.notEqual(
      stableBody(page("a1b2").replace("search", "find")).text,
      one.text,
      "content still counts",
    );
  });

  it("masks the time a banner greets with, and keeps versions", () => {
    const cases: Array<[string, string]> = [
      [
        "220 mx.example.com ESMTP Sendmail 8.15.2/8.15.2; Sun, 22 Nov 2026 12:00:00 +0000",
        "220 mx.example.com ESMTP Sendmail 8.15.2/8.15.2; …",
      ],
      [
        "220 mail.contoso.com Microsoft ESMTP MAIL Service ready at Sun, 22 Nov 2026 12:00:00 +0000",
        "220 mail.contoso.com Microsoft ESMTP MAIL Service ready at …",
      ],
      [
        "220 ftp.example.com FTP server ready at Sun Nov 22 12:00:00 2026",
        "220 ftp.example.com FTP server ready at …",
      ],
      ["220 host ready 2026-11-22T12:00:00Z", "220 host ready …"],
      ["+OK POP3 ready <1896.697170952@dbc.mtview.ca.us>", "+OK POP3 ready …"],
      ["SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13.5", "SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13.5"],
      ["220 (vsFTPd 3.0.3)", "220 (vsFTPd 3.0.3)"],
      [
        "220 mail.example.com ESMTP Exim 4.96 Sun, 22 Nov 2026 12:00:00 +0000",
        "220 mail.example.com ESMTP Exim 4.96 …",
      ],
    ];
    for (const [banner, stable] of cases) assert.equal(stableBanner(banner), stable, banner);
  });
});
