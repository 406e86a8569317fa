import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  checkRecogExamples,
  MAX_TEXT_CHARS,
  matchFingerprint,
  recogIdentify,
  toCpe23,
} from "../../../src/discovery/fingerprint/recog.ts";
import { translateRecogPattern } from "../../../src/discovery/fingerprint/recog-pattern.ts";

const result = checkRecogExamples();
const total = result.fingerprints + result.skipped;
const share = (100 * result.skipped) / total;
const reasons = [...result.reasons].map(([reason, count]) => `${count} ${reason}`).join("; ");
const passing = result.passing;

describe("Recog databases", () => {
  it(`Recog: ${passing.toLocaleString("en")} of ${total.toLocaleString("en")} fingerprints match their ${result.examples.toLocaleString("en")} examples (${result.skipped} skipped, ${share.toFixed(1)}%: ${reasons})`, () => {
    assert.ok(result.fingerprints > 4000, "the shipped databases hold Recog's full corpus");
    assert.deepEqual(result.failures, []);
    assert.ok(
      share < 1,
      `${result.skipped} of ${total} fingerprints skipped (${share.toFixed(2)}%), at most 1% may be`,
    );
  });

  it("identifies real Debian banners with vendor, product, version and a CPE 2.3", () => {
    const ssh = recogIdentify("ssh.banner", "OpenSSH_9.2p1 Debian-2+deb12u3");
    assert.equal(ssh?.source, "recog:ssh.banner");
    assert.equal(ssh?.params["service.product"], "OpenSSH");
    assert.equal(ssh?.params["service.version"], "9.2p1");
    assert.equal(ssh?.params["os.vendor"], "Debian");
    assert.equal(toCpe23(ssh?.params["service.cpe23"]), "cpe:2.3:a:openbsd:openssh:9.2p1:*:*:*:*:*:*:*");
    const ftp = recogIdentify("ftp.banner", "(vsFTPd 3.0.3)");
    assert.equal(ftp?.params["service.product"], "vsFTPd");
    assert.equal(ftp?.params["service.version"], "3.0.3");
    const server = recogIdentify("http_header.server", "nginx/1.22.1");
    assert.equal(server?.params["service.product"], "nginx");
    assert.equal(server?.params["service.version"], "1.22.1");
  });

  it("translates Ruby's anchors, flags and possessive quantifiers", () => {
    const anchored = translateRecogPattern("\\Afoo\\z", "REG_ICASE");
    assert.ok("source" in anchored);
    const regex = {
      regex: new RegExp(anchored.source, anchored.flags),
      ...anchored,
      params: [],
      pattern: "",
      description: "",
      examples: [],
    };
    assert.ok(matchFingerprint(regex, "FOO"));
    assert.equal(matchFingerprint(regex, "x\nfoo"), undefined, "\\A is the start of the text, not of a line");
    assert.equal(matchFingerprint(regex, "foo\n"), undefined, "\\z is the very end");
    const possessive = translateRecogPattern("^a*+b$", "");
    assert.ok("source" in possessive && possessive.source === "^a*b$");
    const lookahead = translateRecogPattern("^(?=a)a", "");
    assert.ok("reason" in lookahead && /look-around/.test(lookahead.reason));
  });
});

describe("Recog on bad input", () => {
  it("bounds a catastrophically backtracking pattern", () => {
    const evil = translateRecogPattern("^(a+)+$", "");
    assert.ok("source" in evil);
    const fingerprint = {
      ...evil,
      regex: new RegExp(evil.source, evil.flags),
      params: [],
      pattern: "",
      description: "",
      examples: [],
    };
    const started = performance.now();
    assert.equal(matchFingerprint(fingerprint, `${"a".repeat(MAX_TEXT_CHARS)}!`), undefined);
    assert.ok(performance.now() - started < 5000, "the linear-time fallback ends the match");
  });

  it("answers a 1 MB banner and binary garbage within bounds, with no false product", () => {
    const started = performance.now();
    assert.equal(recogIdentify("ssh.banner", "x".repeat(1 << 20)), undefined);
    const garbage = Buffer.from(Array.from({ length: 65536 }, (_v, i) => (i * 7919) % 256)).toString(
      "latin1",
    );
    for (const kind of ["ssh.banner", "ftp.banner", "smtp.banner", "http_header.server", "html_title"])
      assert.equal(recogIdentify(kind, garbage)?.params["service.product"], undefined, kind);
    assert.ok(performance.now() - started < 10_000);
  });

  it("a banner two fingerprints match yields the more specific one", () => {
    // "OpenSSH running on FreeBSD" and "… on FreeBSD 4.4" both match; the one naming the OS version wins.
    const match = recogIdentify("ssh.banner", "OpenSSH_2.3.0 FreeBSD localisations 20010713");
    assert.equal(match?.params["service.version"], "2.3.0");
    assert.equal(match?.params["os.version"], "4.4");
    assert.equal(match?.description, "OpenSSH running on FreeBSD 4.4");
  });
});
