/**
 * The address policy (src/core/address-policy.ts): every spelling of an IPv4 address inside IPv6 counts
 * as the IPv4 address it carries — checked against a table of spellings for the addresses that matter
 * (cloud metadata, loopback, private), and as a property over arbitrary IPv4 addresses; the scan scope
 * and the webhook targets both judge by it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { AddressPolicy, carriedIPv4, parseAddress } from "../../src/core/address-policy.ts";
import { Scope } from "../../src/core/scope.ts";
import { WebhookTargets } from "../../src/webhooks/targets.ts";

const hex = (octets: number[]) =>
  [((octets[0] << 8) | octets[1]).toString(16), ((octets[2] << 8) | octets[3]).toString(16)].join(":");

/** Every IPv6 spelling of an IPv4 address, by name. */
function spellings(v4: string): Record<string, string> {
  const o = v4.split(".").map(Number);
  const [h1, h2] = hex(o).split(":");
  const teredoClient = hex(o.map((octet) => octet ^ 0xff));
  return {
    "mapped (dotted)": `::ffff:${v4}`,
    "mapped (hex)": `::ffff:${h1}:${h2}`,
    "mapped (long form)": `0:0:0:0:0:ffff:${h1}:${h2}`,
    "compatible (dotted)": `::${v4}`,
    "compatible (hex)": `::${h1}:${h2}`,
    "NAT64 well-known": `64:ff9b::${h1}:${h2}`,
    "NAT64 well-known (dotted)": `64:ff9b::${v4}`,
    "NAT64 local-use /96": `64:ff9b:1::${h1}:${h2}`,
    "NAT64 local-use /48": `64:ff9b:1:${h1}:${(o[2]).toString(16)}:${(o[3] << 8).toString(16)}::`,
    "NAT64 local-use /64": `64:ff9b:1:0:${o[0].toString(16)}:${((o[1] << 8) | o[2]).toString(16)}:${(o[3] << 8).toString(16)}:0`,
    "6to4": `2002:${h1}:${h2}::1`,
    "6to4 (upper case)": `2002:${h1}:${h2}::1`.toUpperCase(),
    "Teredo (client)": `2001:0:4136:e378:8000:63bf:${teredoClient}`,
  };
}

/** The IPv4 addresses nothing may reach by default, with why. */
const DENIED = {
  "cloud metadata": "169.254.169.254",
  loopback: "127.0.0.1",
  "private 10/8": "10.1.2.3",
  "private 192.168/16": "192.168.1.1",
  "Azure wire server": "168.63.129.16",
  "Alibaba metadata": "100.100.100.200",
};

const policy = new AddressPolicy({});

describe("the address policy", () => {
  for (const [why, v4] of Object.entries(DENIED))
    test(`${why} (${v4}) is refused in every IPv6 spelling`, () => {
      assert.equal(policy.allowsAddress(v4), false);
      for (const [spelling, address] of Object.entries(spellings(v4))) {
        assert.ok(parseAddress(address), `${spelling} ${address} parses`);
        assert.ok(
          carriedIPv4(parseAddress(address)!).some((carried) => carried.toString() === v4),
          `${spelling} ${address} carries ${v4}`,
        );
        assert.equal(policy.allowsAddress(address), false, `${spelling} ${address} is refused`);
      }
    });

  test("property: any IPv4 address, in any spelling, counts as that address", () => {
    const octet = fc.integer({ min: 0, max: 255 });
    fc.assert(
      // 0.0.0.0/8 is no destination (and ::, ::1 are not its compatible spellings): from 1.0.0.0 up.
      fc.property(fc.tuple(fc.integer({ min: 1, max: 255 }), octet, octet, octet), (octets) => {
        const v4 = octets.join(".");
        for (const [spelling, address] of Object.entries(spellings(v4))) {
          const carried = carriedIPv4(parseAddress(address)!).map(String);
          assert.ok(carried.includes(v4), `${spelling} ${address} carries ${v4}: ${carried}`);
          // Refused whenever the IPv4 address is; allowed (a public address) whenever it is, except
          // where the layout is ambiguous and another reading of the bits lands on a denied address.
          if (!policy.allowsAddress(v4))
            assert.equal(policy.allowsAddress(address), false, `${spelling} ${address}`);
          else if (carried.every((candidate) => policy.allowsAddress(candidate)))
            assert.equal(policy.allowsAddress(address), true, `${spelling} ${address}`);
        }
      }),
      { numRuns: 300 },
    );
  });

  test("allowing an IPv4 range allows its IPv6 spellings; an explicit deny wins over the allow", () => {
    const lab = new AddressPolicy({ allow: ["127.0.0.0/8"] });
    for (const address of Object.values(spellings("127.0.0.1")))
      assert.equal(lab.allowsAddress(address), true, address);
    const denied = new AddressPolicy({ allow: ["0.0.0.0/0"], deny: ["203.0.114.7"] });
    for (const address of Object.values(spellings("203.0.114.7")))
      assert.equal(denied.allowsAddress(address), false, address);
  });

  test(":: and ::1 are not IPv4-compatible spellings; zone ids and non-addresses are refused", () => {
    assert.deepEqual(carriedIPv4(parseAddress("::1")!), []);
    assert.deepEqual(carriedIPv4(parseAddress("::")!), []);
    assert.equal(new AddressPolicy({ allow: ["::1"] }).allowsAddress("::1"), true);
    assert.equal(parseAddress("fe80::1%eth0"), undefined);
    assert.equal(policy.allowsAddress("fe80::1%eth0"), false);
    assert.equal(policy.allowsAddress("example.com"), false);
    assert.equal(policy.allowsAddress("2606:4700::1111"), true, "a public IPv6 address");
    assert.equal(policy.allowsAddress("93.184.215.14"), true, "a public IPv4 address");
  });

  test("the scan scope and the webhook targets judge by it", async () => {
    const scope = new Scope([], { scanAllow: [], scanDeny: [] });
    const targets = new WebhookTargets([]);
    for (const v4 of Object.values(DENIED))
      for (const address of Object.values(spellings(v4))) {
        assert.equal(scope.mayTouch(address), false, `scan: ${address}`);
        assert.ok(targets.addressProblem(address), `webhook: ${address}`);
        assert.ok(await targets.urlProblem(`http://[${address}]/`), `webhook URL: ${address}`);
      }
    assert.equal(scope.mayTouch("2606:4700::1111"), true);
    assert.equal(targets.addressProblem("2606:4700::1111"), undefined);
  });
});
