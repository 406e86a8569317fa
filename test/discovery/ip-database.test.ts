/**
 * The IP database over MMDB files: GeoLite2's, DB-IP lite's and ipinfo lite's layouts (written here in
 * the MaxMind DB format, read by the real reader), chosen by SIGHTLINE_IP_DATABASE or installed with
 * `sightline ipdb update --from <file>`; files that are not such a database are refused with a sentence.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { lookupNetwork, mmdbDatabases, openMmdb, useIpDatabases } from "../../src/discovery/ip-database.ts";
import { writeMmdb } from "../helpers/mmdb-writer.ts";

import { spawnSightline } from "../helpers/processes.ts";

/** What the bundled data says of an address (no installed file). */
function lookupBundled(address: string) {
  useIpDatabases({ ipDatabase: [], dataDir: join(tmpdir(), "sightline-no-ipdb") });
  const info = lookupNetwork(address)!;
  return info;
}

const GOOGLE = { autonomous_system_number: 15169, autonomous_system_organization: "Google LLC" };
const AAISP = { autonomous_system_number: 20712, autonomous_system_organization: "Andrews & Arnold Ltd" };
const country = (iso: string) => ({
  continent: { code: "XX", names: { en: "ignored" } },
  country: { iso_code: iso, names: { en: "ignored" } },
});

describe("IP database over MMDB files", () => {
  let dir: string;
  const file = (name: string, content: Buffer) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };
  let asn: string;
  let countries: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "sightline-ipdb-"));
    asn = file(
      "GeoLite2-ASN.mmdb",
      writeMmdb(
        { "8.8.8.0/24": GOOGLE, "2001:4860::/32": GOOGLE, "81.2.64.0/19": AAISP },
        { databaseType: "GeoLite2-ASN", description: "GeoLite2 ASN database" },
      ),
    );
    countries = file(
      "GeoLite2-Country.mmdb",
      writeMmdb(
        { "8.8.0.0/16": country("US"), "2001:4800::/21": country("US"), "81.2.69.0/24": country("GB") },
        { databaseType: "GeoLite2-Country" },
      ),
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("GeoLite2 ASN and Country files: AS, owner, the announced block, country and continent", () => {
    useIpDatabases({ ipDatabase: [asn, countries], dataDir: dir });
    assert.deepEqual(lookupNetwork("8.8.8.8"), {
      netblock: "8.8.8.0/24",
      asn: "AS15169",
      organization: "Google LLC",
      net_name: "Google LLC",
      country_code: "US",
      country: "United States",
      continent_code: "NA",
      continent: "North America",
    });
    const v6 = lookupNetwork("2001:4860:4860::8888")!;
    assert.equal(v6.asn, "AS15169");
    assert.equal(v6.netblock, "2001:4860::/32");
    assert.equal(v6.country_code, "US");
    const uk = lookupNetwork("81.2.69.142")!;
    assert.equal(uk.netblock, "81.2.64.0/19");
    assert.equal(uk.country, "United Kingdom");
    assert.equal(uk.continent_code, "EU");
    // An address neither file knows: the address alone as its block, nothing else.
    assert.deepEqual(lookupNetwork("9.9.9.9"), {
      netblock: "9.9.9.9/32",
      asn: "",
      organization: "",
      net_name: "",
      country_code: "",
      country: "",
      continent_code: "",
      continent: "",
    });
    // Special ranges never reach a database.
    assert.equal(lookupNetwork("10.1.2.3")!.net_name, "Private network");
    assert.deepEqual(
      mmdbDatabases().map((database) => [database.type, database.content]),
      [
        ["GeoLite2-ASN", "asn"],
        ["GeoLite2-Country", "country"],
      ],
    );
  });

  test("a file of one kind fills in its fields only: the bundled data answers the others", () => {
    // A country-only file: AS, owner and the announced block still come (from the bundled data).
    useIpDatabases({ ipDatabase: [countries], dataDir: dir });
    const google = lookupNetwork("8.8.8.8")!;
    assert.equal(google.country_code, "US", "from the installed file");
    assert.equal(google.asn, "AS15169");
    assert.match(google.organization, /Google/);
    assert.notEqual(google.netblock, "8.8.8.8/32");
    assert.match(google.netblock, /^8\.8\.\d+\.\d+\/(1\d|2[0-4])$/);
    const uk = lookupNetwork("81.2.69.142")!;
    assert.equal(uk.country_code, "GB");
    assert.equal(uk.asn, "AS20712");
    // An ASN-only file: the country comes from the bundled data.
    useIpDatabases({ ipDatabase: [asn], dataDir: dir });
    const fromAsn = lookupNetwork("8.8.8.8")!;
    assert.equal(fromAsn.netblock, "8.8.8.0/24", "the installed file's block");
    assert.equal(fromAsn.country_code, lookupBundled("8.8.8.8").country_code);
    assert.ok(fromAsn.country_code !== "");
  });

  test("DB-IP lite and ipinfo lite layouts", () => {
    const dbip = file(
      "dbip-asn-lite.mmdb",
      writeMmdb({ "8.8.8.0/24": GOOGLE }, { databaseType: "DBIP-ASN-Lite (compat=GeoLite2-ASN)" }),
    );
    const dbipCountry = file(
      "dbip-country-lite.mmdb",
      writeMmdb({ "8.8.8.0/24": country("US") }, { databaseType: "DBIP-Country-Lite" }),
    );
    useIpDatabases({ ipDatabase: [dbip, dbipCountry], dataDir: dir });
    assert.equal(lookupNetwork("8.8.8.8")!.country_code, "US");
    const ipinfo = file(
      "ipinfo_lite.mmdb",
      writeMmdb(
        {
          "1.1.1.0/24": {
            asn: "AS13335",
            as_name: "Cloudflare, Inc.",
            country_code: "AU",
            continent_code: "OC",
          },
        },
        { databaseType: "ipinfo lite.mmdb" },
      ),
    );
    useIpDatabases({ ipDatabase: [ipinfo], dataDir: dir });
    const cloudflare = lookupNetwork("1.1.1.1")!;
    assert.equal(cloudflare.asn, "AS13335");
    assert.equal(cloudflare.organization, "Cloudflare, Inc.");
    assert.equal(cloudflare.netblock, "1.1.1.0/24");
    assert.equal(cloudflare.country, "Australia");
    assert.equal(mmdbDatabases()[0].content, "asn+country");
  });

  test("a file that is not such a database is refused with a sentence", () => {
    assert.throws(
      () => openMmdb(file("plain.mmdb", Buffer.from("start,end,asn\n1,2,3\n"))),
      /is not an MMDB file/,
    );
    assert.throws(() => openMmdb(join(dir, "missing.mmdb")), /Cannot read the IP database .*ENOENT/);
    const other = file(
      "other.mmdb",
      writeMmdb({ "8.8.8.0/24": { isp: "x" } }, { databaseType: "Example-ISP" }),
    );
    assert.throws(() => openMmdb(other), /holds neither autonomous systems nor countries/);
  });

  test("sightline ipdb update installs a checked file in the data directory; status lists it", async () => {
    const dataDir = join(dir, "data");
    const run = async (args: string[], env: Record<string, string> = {}) => {
      const child = spawnSightline(["ipdb", ...args], { SIGHTLINE_DATA_DIR: dataDir, ...env });
      return { code: await child.exited, output: child.output() };
    };
    const empty = await run(["status"]);
    assert.equal(empty.code, 0, empty.output);
    assert.match(empty.output, /bundled ip-location-db data answers/);
    const refused = await run(["update", "--from", join(dir, "plain.mmdb")]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.output, /is not an MMDB file/);
    assert.ok(!existsSync(join(dataDir, "ipdb", "asn.mmdb")));
    const installed = await run(["update", "--from", asn]);
    assert.equal(installed.code, 0, installed.output);
    assert.match(
      installed.output,
      /Installed GeoLite2-ASN \(autonomous systems, built \d{4}-\d{2}-\d{2}\) as .*asn\.mmdb/,
    );
    assert.match(
      installed.output,
      /It provides autonomous systems only: countries still come from another installed file or the bundled data/,
    );
    // Served gzipped (as GeoLite2 and DB-IP are): unpacked, checked and installed as the database itself.
    const gzipped = file("GeoLite2-Country.mmdb.gz", gzipSync(readFileSync(countries)));
    const fromGz = await run(["update", "--from", gzipped]);
    assert.equal(fromGz.code, 0, fromGz.output);
    assert.match(fromGz.output, /Installed GeoLite2-Country \(countries, .*country\.mmdb/);
    assert.deepEqual(readFileSync(join(dataDir, "ipdb", "country.mmdb")), readFileSync(countries));
    const status = await run(["status", "--json"]);
    const listed = JSON.parse(status.output);
    assert.equal(listed.bundled, false);
    assert.deepEqual(
      listed.databases.map((database: { type: string }) => database.type),
      ["GeoLite2-ASN", "GeoLite2-Country"],
    );
    // What discovery then reads: the installed files, without any setting.
    useIpDatabases({ ipDatabase: [], dataDir });
    assert.equal(lookupNetwork("81.2.69.142")!.asn, "AS20712");
    // SIGHTLINE_IP_DATABASE takes precedence over the installed files.
    const chosen = await run(["status", "--json"], { SIGHTLINE_IP_DATABASE: countries });
    assert.deepEqual(
      JSON.parse(chosen.output).databases.map((database: { type: string }) => database.type),
      ["GeoLite2-Country"],
    );
  });
});
