/**
 * Inputs that grow: a zone transfer of 50,000 names (the virtual-host lookups of its addresses once hit
 * SQLite's expression-depth limit and failed the run), on SQLite and PostgreSQL. Loopback range of these
 * tests: 127.90.0.0/16 and 127.91.0.0/16.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { DiscoveryModule } from "../../src/discovery/module.ts";
import { zoneTransfer } from "../../src/discovery/modules/dns-axfr.ts";
import { createHttpModule } from "../../src/discovery/modules/http.ts";
import { type DiscoveryFixture, discoveryFixture } from "../helpers/discovery.ts";
import { dialects } from "../helpers/stores.ts";
import { createDnsServer, type DnsServer } from "../lab/dns-server.ts";
import { transferableZone } from "../lab/zones.ts";

const NAMES = 50_000;
const NAMESERVER = "127.91.0.53";

const runs = await dialects();

describe("a zone transfer of 50,000 names", () => {
  let server: DnsServer;
  before(async () => {
    // h<i>.big.test → 127.90.<i / 256>.<i % 256> (wrapping after 65,536), with an open transfer.
    server = createDnsServer(
      transferableZone("big.test", NAMESERVER, NAMES, (i) => `127.90.${(i >> 8) & 255}.${i & 255}`),
    );
    // Transfers go to port 53 of the name server's address.
    await server.listen(NAMESERVER, 53);
  });
  after(() => server?.close());

  for (const { dialect, skip } of runs) {
    test(`finishes on ${dialect}, every name and address in the results`, {
      skip,
      timeout: 600_000,
    }, async () => {
      let fixture: DiscoveryFixture | undefined;
      try {
        fixture = await discoveryFixture(
          dialect,
          [{ type: "Domain", name: "big.test" }],
          {
            dnsServers: [`${NAMESERVER}:53`],
            scanAllow: ["127.90.0.0/16", "127.91.0.0/16"],
            axfrMaxRecords: NAMES + 10,
            timeoutMs: 20_000,
          },
          // The transfer, and a module that asks for virtual hosts (the lookups that once failed).
          [zoneTransfer, createHttpModule()],
        );
        const { run, finished } = await fixture.run();
        assert.equal(finished, true);
        const notes = await fixture.entities.notes(run.id);
        assert.deepEqual(notes, []);
        assert.equal(
          await fixture.entities.countCurrent(fixture.collectionId, { kinds: ["DnsRecord"] }),
          NAMES + 1,
        );
        assert.equal(
          await fixture.entities.countCurrent(fixture.collectionId, { kinds: ["IpAddress"] }),
          NAMES + 1,
        );
        const [address] = await fixture.entities.current(fixture.collectionId, {
          kinds: ["IpAddress"],
          names: ["127.90.195.79"],
        });
        assert.deepEqual(address.details.resolutions, [`h${195 * 256 + 79}.big.test`]);
      } finally {
        await fixture?.close();
      }
    });
  }
});

describe("a seeded /16", () => {
  for (const { dialect, skip } of runs) {
    test(`on ${dialect}: every address scanned, expanded a slice at a time`, {
      skip,
      timeout: 600_000,
    }, async () => {
      let fixture: DiscoveryFixture | undefined;
      /** Addresses staged when the first address task ran: the expansion ahead of the scan. */
      let stagedAtFirstProbe: number | undefined;
      let probed = 0;
      const probe: DiscoveryModule = {
        name: "probe",
        consumes: ["IpAddress"],
        produces: [],
        async run() {
          probed++;
          if (stagedAtFirstProbe !== undefined || !fixture) return;
          stagedAtFirstProbe = -1;
          const row = await fixture.store.db
            .selectFrom("staged_entities")
            .select((eb) => eb.fn.countAll<number | string>().as("count"))
            .where("kind", "=", "IpAddress")
            .executeTakeFirstOrThrow();
          stagedAtFirstProbe = Number(row.count);
        },
      };
      try {
        fixture = await discoveryFixture(
          dialect,
          [{ type: "NetBlock", name: "127.90.0.0/16" }],
          { scanAllow: ["127.90.0.0/16"] },
          [probe],
        );
        const { run, finished } = await fixture.run();
        assert.equal(finished, true);
        assert.deepEqual(await fixture.entities.notes(run.id), []);
        assert.equal(probed, 65_536);
        assert.ok(
          stagedAtFirstProbe !== undefined && stagedAtFirstProbe > 0 && stagedAtFirstProbe <= 512,
          `${stagedAtFirstProbe} staged before the first probe`,
        );
        assert.equal(
          await fixture.entities.countCurrent(fixture.collectionId, { kinds: ["IpAddress"] }),
          65_536,
        );
        const [last] = await fixture.entities.current(fixture.collectionId, {
          kinds: ["IpAddress"],
          names: ["127.90.255.255"],
        });
        assert.equal(last.details.seed, true);
      } finally {
        await fixture?.close();
      }
    });
  }

  test("a block over the bound is recorded, not scanned, and IPv6 blocks are not walked", async () => {
    const fixture = await discoveryFixture(
      "sqlite",
      [
        { type: "NetBlock", name: "127.90.0.0/16" },
        { type: "NetBlock", name: "fd00:90::/64" },
      ],
      { scanAllow: ["127.90.0.0/16", "fd00:90::/64"], maxBlockAddresses: 4096 },
      [],
    );
    try {
      const { run } = await fixture.run();
      const notes = await fixture.entities.notes(run.id);
      assert.equal(notes.length, 2);
      assert.match(
        notes.join("\n"),
        /127\.90\.0\.0\/16 holds more than 4096 addresses \(SIGHTLINE_MAX_BLOCK_ADDRESSES\)/,
      );
      assert.match(notes.join("\n"), /fd00:90::\/64 is an IPv6 block/);
      assert.equal(await fixture.entities.countCurrent(fixture.collectionId, { kinds: ["IpAddress"] }), 0);
    } finally {
      await fixture.close();
    }
  });
});
