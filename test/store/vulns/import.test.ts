import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { gzipSync } from "node:zlib";
import { openStore, type Store } from "../../../src/store/database.ts";
import { migrateToLatest } from "../../../src/store/migrate.ts";
import { streamArrayElements } from "../../../src/store/vuln-feed-stream.ts";
import { FeedError, importFeedFile } from "../../../src/store/vuln-importer.ts";
import { VulnerabilityRepository } from "../../../src/store/vulns.ts";
import { createTestStore, dialects, type TestStore } from "../../helpers/stores.ts";

const NVD_FIXTURE = new URL("../../fixtures/nvd-cve-2.0.json", import.meta.url).pathname;
const KEV_FIXTURE = new URL("../../fixtures/kev.json", import.meta.url).pathname;

describe("streamArrayElements", () => {
  it("yields the same records as JSON.parse, however the bytes are cut", async () => {
    const text = readFileSync(NVD_FIXTURE);
    const expected = JSON.parse(text.toString("utf8")).vulnerabilities;
    for (const size of [1, 7, 64, text.length]) {
      const chunks = async function* () {
        for (let i = 0; i < text.length; i += size) yield text.subarray(i, i + size);
      };
      const header: Record<string, string> = {};
      const items = [];
      for await (const item of streamArrayElements(chunks(), {
        key: "vulnerabilities",
        onHeader: (key, value) => {
          header[key] = value;
        },
      }))
        items.push(item);
      assert.deepEqual(items, expected, `chunks of ${size} bytes`);
      assert.equal(header.format, "NVD_CVE");
    }
  });

  it("refuses a document that stops half-way", async () => {
    const truncated = readFileSync(NVD_FIXTURE).subarray(0, 2000);
    const run = async () => {
      const source = (async function* () {
        yield truncated;
      })();
      for await (const _ of streamArrayElements(source, { key: "vulnerabilities" })) {
      }
    };
    await assert.rejects(run, /ends in the middle/);
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`vulndb import (${dialect})`, { skip }, () => {
    let testStore: TestStore;
    let store: Store;
    let repository: VulnerabilityRepository;
    let work: string;

    before(async () => {
      testStore = await createTestStore(dialect);
      store = openStore(testStore.config);
      await migrateToLatest(store);
      repository = new VulnerabilityRepository(store.db);
      work = mkdtempSync(join(tmpdir(), "sightline-vulndb-"));
    });
    after(async () => {
      await store.close();
      await testStore.drop();
      rmSync(work, { recursive: true, force: true });
    });

    it("ships a seed that is loaded by the migration", async () => {
      const counts = await repository.counts();
      assert.equal(counts.cves, 11);
      const cves = await repository.matchCpe("cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*");
      assert.deepEqual(cves.map((cve) => cve.cve).sort(), ["CVE-2021-41773", "CVE-2021-42013"]);
      const traversal = cves.find((cve) => cve.cve === "CVE-2021-42013");
      assert.equal(traversal?.cvss_v3_score, 9.8);
      assert.equal(traversal?.cvss_v2_score, 7.5);
      assert.equal(traversal?.cwe, "CWE-22");
      assert.equal(traversal?.kev?.date_added, "2021-11-03");
      const vsftpd = await repository.matchCpe("cpe:2.3:a:vsftpd_project:vsftpd:2.3.4:*:*:*:*:*:*:*");
      assert.deepEqual(
        vsftpd.map((cve) => cve.cve),
        ["CVE-2011-2523"],
      );
      assert.deepEqual(await repository.matchCpe("cpe:2.3:a:apache:http_server:2.4.51:*:*:*:*:*:*:*"), []);
      // jQuery before 3.5.0: both XSS CVEs, one of them in CISA KEV.
      const jquery = await repository.matchCpe("cpe:2.3:a:jquery:jquery:3.4.1:*:*:*:*:*:*:*");
      assert.deepEqual(jquery.map((cve) => [cve.cve, cve.kev?.date_added ?? null]).sort(), [
        ["CVE-2020-11022", null],
        ["CVE-2020-11023", "2025-01-23"],
      ]);
      assert.deepEqual(await repository.matchCpe("cpe:2.3:a:jquery:jquery:3.5.0:*:*:*:*:*:*:*"), []);
    });

    it("remembers a product's matches for a few seconds, and forgets them when any repository of the database imports", async () => {
      const cpe = "cpe:2.3:a:vsftpd_project:vsftpd:2.3.4:*:*:*:*:*:*:*";
      const first = await repository.matchCpe(cpe);
      assert.deepEqual(
        first.map((cve) => cve.cve),
        ["CVE-2011-2523"],
      );
      const criteria = await store.db.selectFrom("vuln_cpe_matches").selectAll().execute();
      await store.db.deleteFrom("vuln_cpe_matches").execute();
      assert.deepEqual(
        await new VulnerabilityRepository(store.db).matchCpe(cpe),
        first,
        "answered from memory",
      );
      await new VulnerabilityRepository(store.db).applyCves([]);
      assert.deepEqual(await repository.matchCpe(cpe), [], "read again after an import");
      for (const row of criteria) await store.db.insertInto("vuln_cpe_matches").values(row).execute();
    });

    it("imports an NVD 2.0 feed, and a second import changes nothing", async () => {
      await store.db.deleteFrom("vuln_cves").execute();
      const seen: number[] = [];
      const first = await importFeedFile(store.db, NVD_FIXTURE, { onProgress: (read) => seen.push(read) });
      assert.equal(first.kind, "nvd");
      assert.deepEqual(
        { added: first.added, updated: first.updated, unchanged: first.unchanged, skipped: first.skipped },
        { added: 3, updated: 0, unchanged: 0, skipped: 1 },
      );
      assert.equal(seen.at(-1), readFileSync(NVD_FIXTURE).length);
      const second = await importFeedFile(store.db, NVD_FIXTURE);
      assert.deepEqual([second.added, second.updated, second.unchanged], [0, 0, 3]);

      const counts = await repository.counts();
      assert.equal(counts.cves, 3);
      // Vulnerable criteria only: apache, fedora 34/35, netapp, openssh, cn1610 firmware, jquery, oracle.
      assert.equal(counts.criteria, 8);
      const ssh = await repository.matchCpe("cpe:2.3:a:openbsd:openssh:7.7:*:*:*:*:*:*:*");
      assert.deepEqual(
        ssh.map((cve) => [cve.cve, cve.cvss_v3_score, cve.cvss_v2_score, cve.cwe]),
        [["CVE-2018-15473", 5.3, 5, "CWE-362"]],
      );
      const jquery = await repository.matchCpe("cpe:2.3:a:jquery:jquery:3.4.1:*:*:*:*:*:*:*");
      assert.equal(jquery[0]?.cvss_v3_score, 6.1, "NVD's primary score, not the CNA's");
    });

    it("reads gzip feeds and rewrites only the records that changed", async () => {
      const feed = JSON.parse(readFileSync(NVD_FIXTURE, "utf8"));
      feed.vulnerabilities[1].cve.descriptions[0].value = "OpenSSH through 7.7 allows user enumeration.";
      feed.vulnerabilities[1].cve.configurations[0].nodes[0].cpeMatch[0].versionEndIncluding = "7.8";
      const gz = join(work, "nvdcve-2.0-modified.json.gz");
      writeFileSync(gz, gzipSync(JSON.stringify(feed)));
      const report = await importFeedFile(store.db, gz);
      assert.deepEqual([report.added, report.updated, report.unchanged], [0, 1, 2]);
      const ssh = await repository.matchCpe("cpe:2.3:a:openbsd:openssh:7.8:*:*:*:*:*:*:*");
      assert.equal(ssh[0]?.description, "OpenSSH through 7.7 allows user enumeration.");
      const again = await importFeedFile(store.db, gz);
      assert.deepEqual([again.added, again.updated, again.unchanged], [0, 0, 3]);
    });

    it("imports the KEV catalog, plain and gzip, idempotently", async () => {
      const first = await importFeedFile(store.db, KEV_FIXTURE);
      assert.equal(first.kind, "kev");
      assert.equal(first.version, "2026.11.20");
      assert.deepEqual([first.added, first.updated, first.unchanged], [2, 0, 0]);
      const gz = join(work, "known_exploited_vulnerabilities.json.gz");
      writeFileSync(gz, gzipSync(readFileSync(KEV_FIXTURE)));
      const second = await importFeedFile(store.db, gz);
      assert.deepEqual([second.added, second.updated, second.unchanged], [0, 0, 2]);
      const apache = await repository.matchCpe("cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*");
      assert.equal(apache[0]?.kev?.known_ransomware_campaign_use, "Unknown");
      assert.equal(apache[0]?.kev?.due_date, "2021-11-17");
    });

    it("says which file is not a feed", async () => {
      const junk = join(work, "junk.json");
      writeFileSync(junk, '{"items": [1, 2]}');
      await assert.rejects(importFeedFile(store.db, junk), FeedError);
      const broken = join(work, "broken.json.gz");
      writeFileSync(broken, Buffer.concat([gzipSync('{"vulnerabilities": [').subarray(0, 12)]));
      await assert.rejects(importFeedFile(store.db, broken), FeedError);
      await assert.rejects(importFeedFile(store.db, join(work, "missing.json")), /no such file/);
    });
  });
}
