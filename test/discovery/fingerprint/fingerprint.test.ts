import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { DEFAULTS } from "../../../src/core/config.ts";
import type { FoundEntity, FoundIssue } from "../../../src/core/entities.ts";
import type { Fingerprint, HttpEvidence } from "../../../src/core/facts.ts";
import {
  detectionCpe,
  faviconHash,
  fingerprintBanner,
  fingerprintHttp,
  murmur3,
  toFingerprints,
} from "../../../src/discovery/fingerprint/fingerprint.ts";
import { requiredLiteral } from "../../../src/discovery/fingerprint/web-rules.ts";
import { type DiscoveryContext, discoveryLimits } from "../../../src/discovery/module.ts";
import { createFingerprintModule } from "../../../src/discovery/modules/fingerprint.ts";
import { Throttle } from "../../../src/discovery/net/throttle.ts";
import { identifyService } from "../../../src/discovery/services.ts";
import { openStore, type Store } from "../../../src/store/database.ts";
import { migrateToLatest } from "../../../src/store/migrate.ts";
import { VulnerabilityRepository } from "../../../src/store/vulns.ts";
import { FINGERPRINT } from "../../helpers/spec-fields.ts";
import { createTestStore, type TestStore } from "../../helpers/stores.ts";

// One store with the shipped vulnerability database serves every test that looks CVEs up.
let testStore: TestStore;
let store: Store;
before(async () => {
  testStore = await createTestStore("sqlite");
  store = openStore(testStore.config);
  await migrateToLatest(store);
});
after(async () => {
  await store.close();
  await testStore.drop();
});

const evidence = (over: Partial<HttpEvidence>): HttpEvidence => ({
  url: "http://www.acme.test/",
  headers: [],
  setCookies: [],
  body: "<html><head><title>t</title></head><body></body></html>",
  meta: {},
  scripts: [],
  ...over,
});
const byName = (detections: ReturnType<typeof fingerprintHttp>) =>
  Object.fromEntries(detections.map((detection) => [detection.name, detection]));

describe("web fingerprints", () => {
  it("reads products and versions from headers, cookies, meta generator and script URLs", () => {
    const found = byName(
      fingerprintHttp(
        evidence({
          headers: [
            ["server", "Apache/2.4.49 (Unix)"],
            ["x-powered-by", "PHP/7.3.10"],
          ],
          setCookies: ["PHPSESSID=0123; path=/; HttpOnly"],
          meta: { generator: ["WordPress 5.8.2"] },
          scripts: ["http://www.acme.test/static/jquery-3.4.1.min.js"],
        }),
      ),
    );
    assert.equal(
      detectionCpe(found["Apache HTTP Server"]),
      "cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*",
    );
    assert.equal(found["Apache HTTP Server"].matchType, "content_headers");
    assert.equal(detectionCpe(found.PHP), "cpe:2.3:a:php:php:7.3.10:*:*:*:*:*:*:*");
    assert.equal(found.WordPress.version, "5.8.2");
    assert.equal(found.WordPress.matchType, "meta_generator");
    assert.equal(found.jQuery.version, "3.4.1");
    assert.equal(found.jQuery.matchType, "script_src");
    assert.equal(found.MySQL?.matchType, "implied", "WordPress implies MySQL");
  });

  it("keeps one detection per product, the most precise one", () => {
    const found = fingerprintHttp(evidence({ headers: [["server", "nginx/1.18.0"]] }));
    const nginx = found.filter((detection) => detection.product === "nginx");
    assert.equal(nginx.length, 1);
    assert.equal(detectionCpe(nginx[0]), "cpe:2.3:a:f5:nginx:1.18.0:*:*:*:*:*:*:*");
  });

  it("finds nothing on a bare page", () => {
    assert.deepEqual(fingerprintHttp(evidence({})), []);
  });
});

describe("the literal prefilter of technology patterns", () => {
  it("takes the longest literal every match must contain", () => {
    const cases: Array<[string, string | undefined]> = [
      ["\\.activehosted\\.com", ".activehosted.com"],
      ["Foo\\/Bar", "foo/bar"],
      ["infinite-?scroll(?:\\.pkgd)?(?:\\.min)?\\.js", "infinite"],
      ["/jquery(?:-(\\d+\\.\\d+\\.\\d+))[/.-]", "/jquery"],
      ["abc?defg", "defg"],
      ["wp-\\w+/plugins", "/plugins"],
      ["ab{2}cde", "cde"],
      ["x+yz", undefined],
      ["(?:/yui/|yui\\.yahooapis\\.com)", undefined],
      ["drupal|joomla", undefined],
      ["[a-z]+\\d*", undefined],
    ];
    for (const [source, literal] of cases) assert.equal(requiredLiteral(source), literal, source);
  });

  it("never names a literal a match can lack", () => {
    // Patterns built from parts, each with a string that matches it by construction.
    const text = fc.stringMatching(/^[A-Za-z0-9/_-]{1,6}$/);
    const escapeRegex = (value: string) => value.replace(/[\\^$.|?*+()[\]{}/-]/g, "\\$&");
    const part = fc.oneof(
      text.map((t) => [escapeRegex(t), t] as const),
      fc
        .tuple(text, fc.boolean())
        .map(([t, present]) => [`(?:${escapeRegex(t)})?`, present ? t : ""] as const),
      fc.tuple(text, text).map(([a, b]) => [`(?:${escapeRegex(a)}|${escapeRegex(b)})`, b] as const),
      fc
        .tuple(text, fc.boolean())
        .map(([t, present]) => [`${escapeRegex(t)}?`, present ? t : t.slice(0, -1)] as const),
      fc.integer({ min: 1, max: 999 }).map((n) => ["\\d+", String(n)] as const),
      text.map((t) => [".*", t] as const),
      fc.constantFrom(["[a-z]", "q"] as const, ["\\.", "."] as const, ["x{0,2}", ""] as const),
    );
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 6 }), fc.option(text), (parts, other) => {
        // Sometimes a top-level alternative the sample does not take.
        const source = `${other === null ? "" : `${escapeRegex(other)}|`}${parts.map(([pattern]) => pattern).join("")}`;
        const sample = parts.map(([, matching]) => matching).join("");
        assert.ok(new RegExp(source, "i").test(sample), `${source} matches ${sample}`);
        const literal = requiredLiteral(source);
        if (literal)
          assert.ok(sample.toLowerCase().includes(literal), `${sample} holds ${literal} (${source})`);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("banner fingerprints", () => {
  const greeting = (bytes: string) => identifyService(3306, Buffer.from(bytes, "latin1")).banner;
  const cases: Array<[string, string, string]> = [
    [
      "SSH-2.0-OpenSSH_8.9p1 Ubuntu-3ubuntu0.6\r\n",
      "OpenSSH",
      "cpe:2.3:a:openbsd:openssh:8.9:p1:*:*:*:*:*:*",
    ],
    ["SSH-2.0-OpenSSH_7.4\r\n", "OpenSSH", "cpe:2.3:a:openbsd:openssh:7.4:*:*:*:*:*:*:*"],
    ["220 (vsFTPd 2.3.4)\r\n", "vsftpd", "cpe:2.3:a:vsftpd_project:vsftpd:2.3.4:*:*:*:*:*:*:*"],
    [
      "220 ProFTPD 1.3.5 Server (Debian) [::ffff:127.0.0.1]\r\n",
      "ProFTPD",
      "cpe:2.3:a:proftpd:proftpd:1.3.5:*:*:*:*:*:*:*",
    ],
    [
      "220 mx.acme.test ESMTP Exim 4.91 #2 Sun, 22 Nov 2026 10:00:00 +0000\r\n",
      "Exim",
      "cpe:2.3:a:exim:exim:4.91:*:*:*:*:*:*:*",
    ],
    [
      "220 mail.acme.test ESMTP Postfix (Debian/GNU)\r\n",
      "Postfix",
      "cpe:2.3:a:postfix:postfix:*:*:*:*:*:*:*:*",
    ],
    // MySQL protocol-10 greetings, as the port scan writes them down.
    [greeting("J\0\0\0\n8.0.28\0\x08\0\0\0"), "MySQL", "cpe:2.3:a:oracle:mysql:8.0.28:*:*:*:*:*:*:*"],
    [
      greeting("n\0\0\0\n5.5.5-10.6.12-MariaDB-0ubuntu0.22.04.1\0"),
      "MariaDB",
      "cpe:2.3:a:mariadb:mariadb:10.6.12:*:*:*:*:*:*:*",
    ],
    ["$3000\r\n# Server\r\nredis_version:6.0.9\r\n", "Redis", "cpe:2.3:a:redis:redis:6.0.9:*:*:*:*:*:*:*"],
    [
      "HTTP/1.1 200 OK\r\nServer: Microsoft-IIS/10.0\r\n",
      "IIS",
      "cpe:2.3:a:microsoft:internet_information_services:10.0:*:*:*:*:*:*:*",
    ],
  ];
  for (const [banner, name, cpe] of cases) {
    it(`${name} from ${JSON.stringify(banner.slice(0, 30))}`, () => {
      const [detection, ...rest] = fingerprintBanner(banner);
      assert.equal(rest.length, 0);
      assert.equal(detection?.name, name);
      assert.equal(detectionCpe(detection), cpe);
      assert.equal(detection.matchType, "banner");
    });
  }
  it("finds nothing in an unknown banner", () => {
    assert.deepEqual(fingerprintBanner("220 Welcome\r\n"), []);
  });
});

describe("favicon hashes", () => {
  it("is Shodan's MurmurHash3 of the base64 lines", () => {
    assert.equal(murmur3(Buffer.from("foo")), -156908512);
    assert.equal(faviconHash(Buffer.from("foo")), murmur3(Buffer.from("Zm9v\n")));
  });
  it("names the product of a known icon", () => {
    const [spring] = fingerprintHttp(evidence({ faviconHash: 116323821 }));
    assert.equal(spring?.name, "Spring Boot");
    assert.equal(spring?.matchType, "favicon");
  });
});

describe("spec fingerprints with CVEs", () => {
  it("has exactly the spec's fields, and infers CVEs only from precise versions", async () => {
    const detections = fingerprintHttp(evidence({ headers: [["server", "Apache/2.4.49"]] }));
    const [apache] = await toFingerprints(detections, new VulnerabilityRepository(store.db));
    assert.deepEqual(Object.keys(apache.fingerprint).sort(), FINGERPRINT);
    assert.equal(apache.fingerprint.type, "fingerprint");
    assert.equal(apache.fingerprint.inference, true);
    assert.equal(apache.fingerprint.issue, true);
    assert.deepEqual(
      apache.fingerprint.vulns.map((vuln) => [vuln.cve, vuln.kev]),
      [
        ["CVE-2021-42013", true],
        ["CVE-2021-41773", true],
      ],
    );
    const [vague] = await toFingerprints(
      fingerprintHttp(evidence({ headers: [["server", "Apache"]] })),
      new VulnerabilityRepository(store.db),
    );
    assert.equal(vague.fingerprint.inference, false);
    assert.deepEqual(vague.fingerprint.vulns, []);
    assert.equal(vague.fingerprint.cpe, "cpe:2.3:a:apache:http_server:*:*:*:*:*:*:*:*");
  });
});

describe("banner fingerprint module", () => {
  const run = async (banner: string) => {
    const emitted: FoundEntity[] = [];
    const raised: FoundIssue[] = [];
    const ctx: DiscoveryContext = {
      signal: new AbortController().signal,
      depth: 1,
      throttle: new Throttle({ concurrency: 8, perHostConcurrency: 4, rateLimit: 0 }),
      settings: {
        dnsServers: [],
        ports: [],
        wordlist: "small",
        timeoutMs: 1000,
        concurrency: 1,
        perHostConcurrency: 1,
        rateLimit: 0,
        limits: discoveryLimits(DEFAULTS),
      },
      emit: (entity) => emitted.push(entity),
      raise: (issue) => raised.push(issue),
      note: () => {},
      mayTouch: () => true,
    };
    const entity: FoundEntity = { kind: "NetworkService", name: "127.0.0.1:21/tcp", details: { banner } };
    await createFingerprintModule({ cves: new VulnerabilityRepository(store.db) }).run(entity, ctx);
    return { emitted, raised };
  };

  it("puts the product on the service and raises the backdoor CVE of vsftpd 2.3.4", async () => {
    const { emitted, raised } = await run("220 (vsFTPd 2.3.4)\r\n");
    assert.equal(emitted.length, 1);
    const [fingerprint] = (emitted[0].details?.fingerprint ?? []) as Fingerprint[];
    assert.equal(fingerprint.cpe, "cpe:2.3:a:vsftpd_project:vsftpd:2.3.4:*:*:*:*:*:*:*");
    assert.deepEqual(emitted[0].details?.products, [["vsftpd", "2.3.4"]]);
    assert.deepEqual(
      raised.map((issue) => [issue.name, issue.severity, issue.confidence, issue.entity.name]),
      [["inferred_cve_2011_2523", 1, "potential", "127.0.0.1:21/tcp"]],
    );
  });

  it("raises nothing for a patched version or an unknown banner", async () => {
    assert.deepEqual((await run("220 (vsFTPd 3.0.5)\r\n")).raised, []);
    assert.deepEqual((await run("220 Welcome\r\n")).emitted, []);
  });
});
