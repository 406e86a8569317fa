/** Seed validation and normalisation per type. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkSeed, detectSeedType, parseSeedText, uniqueSeeds } from "../../src/core/seeds.ts";

const normalised = (type: string, name: string) => {
  const check = checkSeed({ type, name });
  assert.ok(check.ok, `${type} ${name}: ${check.ok ? "" : check.message}`);
  return check.seed.name;
};

test("names are trimmed, lower-cased, stripped of the trailing dot, IDN to punycode", () => {
  assert.equal(normalised("Domain", "  Example.COM. "), "example.com");
  assert.equal(normalised("Domain", "bücher.example"), "xn--bcher-kva.example");
  assert.equal(normalised("DnsRecord", "_dmarc.example.com"), "_dmarc.example.com");
  assert.equal(normalised("Nameserver", "NS1.Example.com"), "ns1.example.com");
});

test("addresses and blocks are canonical", () => {
  assert.equal(normalised("IpAddress", "2001:0DB8:0000:0000:0000:0000:0000:0001"), "2001:db8::1");
  assert.equal(normalised("IpAddress", "::ffff:192.0.2.1"), "192.0.2.1");
  assert.equal(normalised("NetBlock", "192.0.2.77/24"), "192.0.2.0/24");
  assert.equal(normalised("NetBlock", "2001:db8::1/32"), "2001:db8::/32");
  assert.equal(
    normalised("Uri", "HTTPS://WWW.Example.com:8443/path?q=1#frag"),
    "https://www.example.com:8443/path?q=1",
  );
});

test("bad values are refused with a sentence naming the type", () => {
  const bad: Array<[string, string]> = [
    ["Domain", "localhost"],
    ["Domain", "exa mple.com"],
    ["Domain", `${"a".repeat(64)}.com`],
    ["Domain", "1.2.3.4"],
    ["IpAddress", "1.2.3"],
    ["IpAddress", "01.2.3.4x"],
    ["NetBlock", "10.0.0.0"],
    ["NetBlock", "10.0.0.0/x"],
    ["Uri", "ftp://example.com"],
    ["Uri", "not a url"],
  ];
  for (const [type, name] of bad) {
    const check = checkSeed({ type, name });
    assert.equal(check.ok, false, `${type} ${name}`);
    if (!check.ok) assert.match(check.message, new RegExp(`not a valid ${type}`));
  }
  const unknown = checkSeed({ type: "Host", name: "a.example" });
  assert.ok(!unknown.ok && /allowed types are Domain/.test(unknown.message));
  assert.equal(checkSeed("example.com").ok, false);
  assert.equal(checkSeed({ type: "Domain" }).ok, false);
});

test("duplicates are removed and types detected", () => {
  assert.deepEqual(
    uniqueSeeds([
      { type: "Domain", name: "a.example" },
      { type: "Domain", name: "a.example" },
      { type: "DnsRecord", name: "a.example" },
    ]),
    [
      { type: "Domain", name: "a.example" },
      { type: "DnsRecord", name: "a.example" },
    ],
  );
  assert.equal(detectSeedType("example.com"), "Domain");
  assert.equal(detectSeedType("www.example.com"), "DnsRecord");
  assert.equal(detectSeedType("192.0.2.1"), "IpAddress");
  assert.equal(detectSeedType("192.0.2.0/24"), "NetBlock");
  assert.equal(detectSeedType("https://example.com"), "Uri");
  assert.equal(detectSeedType("not valid!"), undefined);
});

test("a line of seed text names its type first, in any case and with any separator, or leaves it to detection", () => {
  const read = (line: string) => {
    const parsed = parseSeedText(line);
    return parsed && [parsed.type, parsed.value, parsed.explicit];
  };
  assert.deepEqual(read("Domain:example.com"), ["Domain", "example.com", true], "the CLI's TYPE:NAME");
  assert.deepEqual(read("  Nameserver ns1.example.com "), ["Nameserver", "ns1.example.com", true]);
  assert.deepEqual(read("domain,example.co.uk"), ["Domain", "example.co.uk", true], "CSV, any case");
  assert.deepEqual(
    read('Uri;"https://x.example/a"'),
    ["Uri", "https://x.example/a", true],
    "quoted CSV value",
  );
  assert.deepEqual(read("DnsRecord\t_dmarc.example.com"), ["DnsRecord", "_dmarc.example.com", true]);
  assert.deepEqual(read("Uri:https://x.example/"), ["Uri", "https://x.example/", true]);
  assert.deepEqual(
    read("https://x.example/"),
    ["Uri", "https://x.example/", false],
    "a URL's scheme is no type",
  );
  assert.deepEqual(read("192.0.2.0/24"), ["NetBlock", "192.0.2.0/24", false]);
  assert.deepEqual(read("www.example.com"), ["DnsRecord", "www.example.com", false]);
  // The type is named, so the value is not judged here: checkSeed says what is wrong with it.
  assert.deepEqual(read("IpAddress example.com"), ["IpAddress", "example.com", true]);
  assert.deepEqual(read("not a seed!"), [undefined, "not a seed!", false]);
  assert.deepEqual(read("Host example.com"), [undefined, "Host example.com", false], "not a seed type");
  for (const skipped of ["", "   ", "# offices", "type,name", '"type","value"', "TYPE;NAME"])
    assert.equal(parseSeedText(skipped), undefined, JSON.stringify(skipped));
});
