/** The pieces under the modules: scope, throttle, port lists, service naming, the IP database, wordlists. */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import fc from "fast-check";
import { addressToBigInt, bigIntToAddress, blockAddresses, blockWithin } from "../../src/core/addresses.ts";
import { Scope } from "../../src/core/scope.ts";
import { answersLikeWildcard } from "../../src/discovery/dns-wildcard.ts";
import { continentOf, countryName } from "../../src/discovery/geography.ts";
import { lookupNetwork } from "../../src/discovery/ip-database.ts";
import { abortableDelay, Throttle } from "../../src/discovery/net/throttle.ts";
import { parsePortSpec } from "../../src/discovery/port-lists.ts";
import { identifyService, osFromBanner } from "../../src/discovery/services.ts";
import { loadWordlist } from "../../src/discovery/wordlists.ts";

describe("scope", () => {
  const scope = new Scope(
    [
      { type: "Domain", name: "acme.test" },
      { type: "IpAddress", name: "192.0.2.7" },
      { type: "NetBlock", name: "198.51.100.0/24" },
      { type: "Uri", name: "https://portal.partner.test/login" },
    ],
    { scanAllow: ["127.0.0.0/8", "cdn.acme.test"], scanDeny: ["192.0.2.0/24", "legacy.acme.test"] },
  );

  test("names at or under a seed are in scope; look-alikes are not", () => {
    assert.ok(scope.coversName("acme.test"));
    assert.ok(scope.coversName("deep.www.acme.test"));
    assert.ok(scope.coversName("portal.partner.test"));
    assert.ok(!scope.coversName("notacme.test"));
    assert.ok(!scope.coversName("partner.test"));
    assert.ok(scope.coversAddress("192.0.2.7"));
    assert.ok(scope.coversAddress("198.51.100.200"));
    assert.ok(!scope.coversAddress("198.51.101.1"));
    assert.equal(scope.seedKindOf("acme.test"), "Domain");
  });

  test("explicit deny wins, explicit allow lifts the built-in deny, the built-in deny holds otherwise", () => {
    assert.ok(!scope.mayTouch("192.0.2.7"), "denied by configuration although a seed");
    assert.ok(new Scope([], { scanAllow: ["2001:db8::/32"], scanDeny: [] }).mayTouch("2001:db8::1"));
    assert.ok(scope.mayTouch("127.0.0.1"), "loopback allowed by configuration");
    for (const denied of [
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "::1",
      "fe80::1",
      "100.100.100.200",
    ])
      assert.ok(!scope.mayTouch(denied), denied);
    assert.ok(scope.mayTouch("8.8.8.8"));
    assert.ok(!scope.mayExploreName("old.legacy.acme.test"));
    assert.ok(!scope.mayExploreName("d111.cloudfront.net"));
    assert.ok(scope.mayExploreName("www.acme.test"));
    assert.ok(new Scope([], { scanAllow: [], scanDeny: [] }).mayTouch("127.0.0.1") === false);
  });

  test("a bad CIDR in the lists is an error that names it", () => {
    assert.throws(() => new Scope([], { scanAllow: ["10.0.0.0/99"], scanDeny: [] }), /10\.0\.0\.0\/99/);
  });
});

describe("throttle", () => {
  test("never exceeds the global or the per-host bound", async () => {
    const throttle = new Throttle({ concurrency: 6, perHostConcurrency: 2, rateLimit: 0 });
    let global = 0;
    let peak = 0;
    const perHost = new Map<string, number>();
    let hostPeak = 0;
    const work = (host: string) =>
      throttle.run(host, async () => {
        global++;
        perHost.set(host, (perHost.get(host) ?? 0) + 1);
        peak = Math.max(peak, global);
        hostPeak = Math.max(hostPeak, perHost.get(host)!);
        await abortableDelay(5);
        global--;
        perHost.set(host, perHost.get(host)! - 1);
      });
    await Promise.all(Array.from({ length: 60 }, (_, i) => work(`h${i % 5}`)));
    assert.equal(peak, 6);
    assert.equal(hostPeak, 2);
  });

  test("spaces starts by the rate limit", async () => {
    const throttle = new Throttle({ concurrency: 100, perHostConcurrency: 100, rateLimit: 100 });
    const starts: number[] = [];
    await Promise.all(
      Array.from({ length: 5 }, () => throttle.run("h", async () => void starts.push(performance.now()))),
    );
    // 5 starts at 100/s span at least 4 intervals of 10 ms (timers may fire a little early).
    assert.ok(starts.at(-1)! - starts[0] >= 35, `${starts.at(-1)! - starts[0]} ms`);
  });

  test("a waiter leaves the queue when the signal aborts", async () => {
    const throttle = new Throttle({ concurrency: 1, perHostConcurrency: 1, rateLimit: 0 });
    const controller = new AbortController();
    const holding = throttle.run("h", () => abortableDelay(50));
    const waiting = throttle.run("h", async () => "ran", controller.signal);
    controller.abort(new Error("stop"));
    await assert.rejects(waiting, /stop/);
    await holding;
    assert.equal(await throttle.run("h", async () => "next"), "next", "the slot is free again");
  });
});

describe("port lists and service names", () => {
  test("top100 and top1000 are sorted, distinct, nested and hold the exposed-datastore ports", () => {
    const top100 = parsePortSpec("top100");
    const top1000 = parsePortSpec("top1000");
    assert.equal(top100.length, 100);
    assert.ok(top1000.length >= 1000);
    for (const port of top100) assert.ok(top1000.includes(port), `${port} in top1000`);
    for (const port of [21, 22, 25, 53, 80, 443, 3306, 6379, 8080, 8443, 27017, 9200])
      assert.ok(top100.includes(port));
    assert.deepEqual(
      top100,
      [...new Set(top100)].sort((a, b) => a - b),
    );
  });

  test("explicit lists and ranges; nonsense is refused", () => {
    assert.deepEqual(parsePortSpec("443, 22,8000-8002,22"), [22, 443, 8000, 8001, 8002]);
    assert.throws(() => parsePortSpec("70000"), /outside/);
    assert.throws(() => parsePortSpec("ssh"), /not a port/);
  });

  test("a banner names the service over the port's convention", () => {
    assert.deepEqual(identifyService(2222, Buffer.from("SSH-2.0-OpenSSH_8.9\r\n")), {
      service: "ssh",
      banner: "SSH-2.0-OpenSSH_8.9",
    });
    assert.equal(identifyService(25, Buffer.from("220 mx ESMTP Postfix\r\n")).service, "smtp");
    assert.equal(identifyService(21, Buffer.from("220 (vsFTPd 3.0.3)\r\n")).service, "ftp");
    assert.deepEqual(identifyService(6379, undefined), { service: "redis", banner: "" });
    assert.equal(identifyService(40000, undefined).service, "unknown");
    const mysql = Buffer.concat([Buffer.from([0x4a, 0, 0, 0, 10]), Buffer.from("8.0.36\0rest")]);
    assert.deepEqual(identifyService(3306, mysql), { service: "mysql", banner: "MySQL 8.0.36" });
    assert.equal(identifyService(9, Buffer.from([0x01, 0x41, 0xff])).banner, "\\x01A\\xff");
    assert.equal(osFromBanner("SSH-2.0-OpenSSH_8.2p1 Ubuntu-4ubuntu0.5"), "Ubuntu");
    assert.equal(osFromBanner("SSH-2.0-OpenSSH_9.6"), undefined);
  });
});

describe("IP database and addresses", () => {
  test("public addresses get their AS, organisation, block and country", () => {
    const google = lookupNetwork("8.8.8.8")!;
    assert.equal(google.asn, "AS15169");
    assert.match(google.organization, /Google/);
    assert.equal(google.country_code, "US");
    assert.equal(google.continent_code, "NA");
    assert.equal(google.continent, "North America");
    assert.match(google.netblock, /^8\.8\.\d+\.\d+\/\d+$/);
    const v6 = lookupNetwork("2001:4860:4860::8888")!;
    assert.equal(v6.asn, "AS15169");
  });

  test("special ranges are answered without a country", () => {
    assert.deepEqual(lookupNetwork("127.0.0.1"), {
      netblock: "127.0.0.0/8",
      asn: "",
      organization: "",
      net_name: "Loopback",
      country_code: "",
      country: "",
      continent_code: "",
      continent: "",
    });
    assert.equal(lookupNetwork("10.9.8.7")!.net_name, "Private network");
    assert.equal(lookupNetwork("192.168.0.1")!.netblock, "192.168.0.0/16");
    assert.equal(lookupNetwork("fd12::1")!.net_name, "Private network (unique local)");
    assert.equal(lookupNetwork("not an address"), undefined);
  });

  test("countries and continents", () => {
    assert.equal(countryName("de"), "Germany");
    assert.equal(continentOf("BR"), "SA");
    assert.equal(countryName("ZZ"), "");
    assert.equal(continentOf(""), "");
  });

  test("blockWithin: the block holds the address and lies inside the range (property)", () => {
    fc.assert(
      fc.property(fc.nat(2 ** 32 - 1), fc.nat(2 ** 32 - 1), fc.nat(2 ** 32 - 1), (a, b, c) => {
        const [start, value, end] = [a, b, c].sort((x, y) => x - y).map(BigInt);
        const [base, prefix] = blockWithin(start, end, value, 32).split("/");
        const first = addressToBigInt(base);
        const last = first + (1n << BigInt(32 - Number(prefix))) - 1n;
        return (
          first >= start &&
          last <= end &&
          value >= first &&
          value <= last &&
          first % (last - first + 1n) === 0n
        );
      }),
    );
    assert.equal(bigIntToAddress(addressToBigInt("2001:db8::1"), 128), "2001:db8::1");
  });

  test("a small block expands to its addresses; a large one does not", () => {
    assert.deepEqual(blockAddresses("192.0.2.4/30", 4096), [
      "192.0.2.4",
      "192.0.2.5",
      "192.0.2.6",
      "192.0.2.7",
    ]);
    assert.equal(blockAddresses("10.0.0.0/8", 4096), undefined);
  });
});

describe("wordlists and wildcard answers", () => {
  test("small is the shipped list; large adds permutations of it; a file is read as labels", () => {
    const small = loadWordlist("small");
    const large = loadWordlist("large");
    assert.ok(small.length >= 200 && small.includes("www") && small.includes("vpn"));
    assert.ok(large.length > 20 * small.length);
    for (const word of ["www2", "dev-api", "api-staging", "eu-portal"]) assert.ok(large.includes(word), word);
    assert.equal(new Set(large).size, large.length);
    const file = join(mkdtempSync(join(tmpdir(), "words-")), "words.txt");
    writeFileSync(file, "# ours\nVPN2\n\nbad label\nlegacy-portal # the old one\n");
    assert.deepEqual(loadWordlist(file), ["vpn2", "legacy-portal"]);
  });

  test("an answer inside the wildcard's addresses is the wildcard; anything else is a name", () => {
    const probe = { kind: "wildcard" as const, addresses: ["192.0.2.99"], aliases: [] };
    assert.ok(answersLikeWildcard(probe, { addresses: ["192.0.2.99"] }));
    assert.ok(!answersLikeWildcard(probe, { addresses: ["192.0.2.10"] }));
    assert.ok(!answersLikeWildcard(probe, { addresses: ["192.0.2.99"], alias: "elsewhere.test" }));
    assert.ok(!answersLikeWildcard({ kind: "none" }, { addresses: ["192.0.2.99"] }));
  });
});
