/** Staging and merging a run's findings into a collection's results, on SQLite and PostgreSQL. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { loadConfig } from "../../src/core/config.ts";
import { AccountsRepository } from "../../src/store/accounts.ts";
import { CollectionsRepository } from "../../src/store/collections.ts";
import { openStore, type Store } from "../../src/store/database.ts";
import { DetailsMerger, mergeDetails } from "../../src/store/entities.ts";
import { migrateToLatest } from "../../src/store/migrate.ts";
import { findingEndpoints } from "../../src/store/migrations/013-finding-endpoints.ts";
import { ResultQueries } from "../../src/store/result-queries.ts";
import { EntitiesReader } from "../helpers/entities-reader.ts";
import { stagedEntity as staged } from "../helpers/result-fixtures.ts";
import { createTestStore, dialects, type TestStore } from "../helpers/stores.ts";

const finding = (name: string, entityName: string) => ({
  name,
  entityKind: "Domain",
  entityName,
  prettyName: name,
  severity: 4,
  confidence: "confirmed",
  category: "email",
  description: "d",
  remediation: "r",
  references: [],
  details: { proof: entityName },
  scoped: true,
});

test("mergeDetails: objects key by key, arrays as a union, scalars the later", () => {
  assert.deepEqual(
    mergeDetails(
      { a: [1, 2], b: { c: 1, d: [1] }, e: "old", f: 1 },
      { a: [2, 3], b: { d: [2], g: true }, e: "new", h: null },
    ),
    { a: [1, 2, 3], b: { c: 1, d: [1, 2], g: true }, e: "new", f: 1, h: null },
  );
  // Sightings come in the order their tasks finished: a union reads the same in any order.
  const sightings = [{ names: ["b.test"] }, { names: ["c.test", "a.test"] }, { names: ["a.test"] }];
  const merges = [sightings, [...sightings].reverse(), [sightings[2], sightings[0], sightings[1]]].map(
    (order) =>
      order.reduce<Record<string, unknown>>((merged, sighting) => mergeDetails(merged, sighting), {}),
  );
  for (const merged of merges) assert.deepEqual(merged, { names: ["a.test", "b.test", "c.test"] });
  // One list given alike by every sighting keeps its order (headers, a redirect chain).
  const headers = { headers: ["server: nginx", "content-type: text/html"] };
  assert.deepEqual(mergeDetails(headers, headers), headers);
});

test("DetailsMerger gives what folding mergeDetails gives, for sightings of every shape", () => {
  // A fixed pseudo-random sequence: lists alike and not, nested objects, values changing type.
  let state = 7;
  const next = (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  const value = (depth: number): unknown => {
    switch (next(depth > 1 ? 4 : 6)) {
      case 0:
        return next(3);
      case 1:
        return ["x", "y", "z"][next(3)];
      case 2:
        return null;
      case 3:
        return Array.from({ length: next(3) }, () => ["a", "b", "c", { k: 1 }][next(4)]);
      case 4:
        return next(2) === 0 ? ["h1", "h2"] : ["h1", "h2"];
      default:
        return Object.fromEntries(Array.from({ length: next(3) }, () => [`k${next(4)}`, value(depth + 1)]));
    }
  };
  for (let trial = 0; trial < 300; trial++) {
    const sightings = Array.from({ length: 1 + next(5) }, () =>
      Object.fromEntries(Array.from({ length: 1 + next(4) }, () => [`f${next(5)}`, value(0)])),
    );
    const merger = new DetailsMerger();
    for (const sighting of sightings) merger.add(sighting);
    const folded = sightings
      .slice(1)
      .reduce((merged, sighting) => mergeDetails(merged, sighting), sightings[0]);
    assert.equal(JSON.stringify(merger.result()), JSON.stringify(folded));
  }
});

for (const { dialect, skip } of await dialects()) {
  describe(`entities repository on ${dialect}`, { skip }, () => {
    let testStore: TestStore;
    let store: Store;
    let entities: EntitiesReader;
    let collectionId: number;

    before(async () => {
      testStore = await createTestStore(dialect);
      store = openStore(loadConfig({}, testStore.config));
      await migrateToLatest(store);
      const accounts = new AccountsRepository(store.db);
      const account = await accounts.createAccount("a", "active");
      const team = await accounts.createTeam(account.id, "t");
      collectionId = (await new CollectionsRepository(store.db).create(account.id, team.id, "c", []))!.id;
      entities = new EntitiesReader(store.db);
    });
    after(async () => {
      await store?.close();
      await testStore?.drop();
    });

    test("a run's sightings merge into one entity each, with alias groups and provenance", async () => {
      await entities.stage(1, collectionId, {
        entities: [
          staged("DnsRecord", "www.a.test", { details: { records: { a: ["192.0.2.1"] } } }),
          staged("IpAddress", "192.0.2.1", {
            details: { resolutions: ["www.a.test"] },
            aliases: [{ kind: "DnsRecord", name: "www.a.test" }],
            depth: 2,
            taskResult: {
              name: "dns:DnsRecord:www.a.test",
              task: "dns",
              entity_type: "x",
              entity_name: "www.a.test",
              depth: 1,
            },
          }),
          staged("DnsRecord", "mail.a.test"),
        ],
        findings: [finding("email_dmarc_missing", "a.test")],
        notes: ["first"],
      });
      // A second task saw the address again, nearer the seed and in plain sight.
      await entities.stage(1, collectionId, {
        entities: [
          staged("IpAddress", "192.0.2.1", {
            details: { resolutions: ["a.test"], net_name: "Documentation" },
            depth: 1,
            ancestors: [{ name: "a.test", type: "Service::Entity::Domain" }],
            taskResult: {
              name: "dns:Domain:a.test",
              task: "dns",
              entity_type: "x",
              entity_name: "a.test",
              depth: 0,
            },
          }),
        ],
        findings: [finding("email_dmarc_missing", "a.test")],
        notes: [],
      });
      assert.deepEqual(await entities.current(collectionId), [], "nothing is a result before finish");
      const summary = await entities.finishRun(1, collectionId);
      assert.deepEqual(summary, { entities: 3, findings: 1 });

      const all = await entities.current(collectionId);
      const address = all.find((e) => e.name === "192.0.2.1")!;
      assert.deepEqual(
        address.details,
        { resolutions: ["a.test", "www.a.test"], net_name: "Documentation" },
        "what two sightings listed, in one order whatever order they came in",
      );
      assert.deepEqual(address.ancestors, [{ name: "a.test", type: "Service::Entity::Domain" }]);
      assert.deepEqual(
        address.taskResults.map((r) => r.name),
        ["dns:Domain:a.test", "dns:DnsRecord:www.a.test"],
        "provenance in depth order, whatever order the tasks finished in",
      );
      const www = all.find((e) => e.name === "www.a.test")!;
      const mail = all.find((e) => e.name === "mail.a.test")!;
      assert.equal(address.aliasGroup, www.aliasGroup);
      assert.notEqual(mail.aliasGroup, www.aliasGroup);
      assert.equal((await entities.currentFindings(collectionId)).length, 1);
      assert.deepEqual(await entities.notes(1), ["first"]);
      assert.equal((await entities.resultRun(collectionId))!.runId, 1);
    });

    test("a later run keeps first_seen and alias groups, moves last_seen, and recent is what is new", async () => {
      const [before] = (await entities.current(collectionId)).filter((e) => e.name === "192.0.2.1");
      await entities.stage(2, collectionId, {
        entities: [staged("IpAddress", "192.0.2.1"), staged("DnsRecord", "new.a.test")],
        findings: [],
        notes: [],
      });
      await entities.finishRun(2, collectionId);
      const now = await entities.current(collectionId);
      assert.deepEqual(now.map((e) => e.name).sort(), ["192.0.2.1", "new.a.test"], "only what run 2 saw");
      const address = now.find((e) => e.name === "192.0.2.1")!;
      assert.equal(address.firstSeen, before.firstSeen);
      assert.equal(address.firstRunId, 1);
      assert.ok(address.lastSeen > before.lastSeen);
      assert.equal(address.aliasGroup, before.aliasGroup);
      const recent = await entities.current(collectionId, { firstSeenInRun: true });
      assert.deepEqual(
        recent.map((e) => e.name),
        ["new.a.test"],
      );
      assert.deepEqual(await entities.currentFindings(collectionId), [], "run 2 raised nothing");
    });

    test("a run that never finishes leaves the previous results", async () => {
      await entities.stage(3, collectionId, {
        entities: [staged("DnsRecord", "partial.a.test")],
        findings: [],
        notes: ["cancelled half-way"],
      });
      const names = (await entities.current(collectionId)).map((e) => e.name).sort();
      assert.deepEqual(names, ["192.0.2.1", "new.a.test"]);
      assert.equal(await entities.countCurrent(collectionId), 2);
    });

    test("tasks finishing in another order do not make an unchanged entity a new version", async () => {
      const sighting = (name: string) => ({
        entities: [staged("IpAddress", "192.0.2.1", { details: { resolutions: [name] } })],
        findings: [],
        notes: [],
      });
      const versions = async () =>
        (await store.db.selectFrom("entities").select("id").where("name", "=", "192.0.2.1").execute()).length;
      for (const name of ["a.test", "www.a.test"]) await entities.stage(4, collectionId, sighting(name));
      await entities.finishRun(4, collectionId);
      const before = await versions();
      for (const name of ["www.a.test", "a.test"]) await entities.stage(5, collectionId, sighting(name));
      await entities.finishRun(5, collectionId);
      assert.equal(await versions(), before, "run 5 saw what run 4 saw: no new version");
      const [address] = await entities.current(collectionId, { kinds: ["IpAddress"] });
      assert.deepEqual(address.details.resolutions, ["a.test", "www.a.test"]);
    });

    test("reached by another path in a later run, an unchanged entity keeps its version; a changed one does not", async () => {
      // Which name's task reached a service first depends on timing: provenance is not content.
      const service = (via: string, banner: string, depth: number) => ({
        entities: [
          staged("NetworkService", "192.0.2.1:22/tcp", {
            details: { port: 22, banner },
            depth,
            ancestors: [{ name: via, type: "Service::Entity::DnsRecord" }],
            taskResult: {
              name: `ports:${via}`,
              task: "ports",
              entity_type: "Service::Entity::IpAddress",
              entity_name: "192.0.2.1",
              depth,
            },
          }),
        ],
        findings: [],
        notes: [],
      });
      const versions = async () =>
        (await store.db.selectFrom("entities").select("id").where("name", "=", "192.0.2.1:22/tcp").execute())
          .length;
      await entities.stage(6, collectionId, service("a.test", "SSH-2.0-OpenSSH_9.6", 2));
      await entities.finishRun(6, collectionId);
      const first = await versions();
      await entities.stage(7, collectionId, service("www.a.test", "SSH-2.0-OpenSSH_9.6", 3));
      await entities.finishRun(7, collectionId);
      assert.equal(await versions(), first, "only the path differed: no new version");
      await entities.stage(8, collectionId, service("www.a.test", "SSH-2.0-OpenSSH_9.7", 3));
      await entities.finishRun(8, collectionId);
      assert.equal(await versions(), first + 1, "a new banner is a new version");
    });

    test("a finding keeps the service its entity runs on, as of each run; a move is a new version", async () => {
      const accounts = new AccountsRepository(store.db);
      const account = await accounts.createAccount("moves", "active");
      const team = await accounts.createTeam(account.id, "t");
      const moves = (await new CollectionsRepository(store.db).create(account.id, team.id, "moves", []))!.id;
      const queries = new ResultQueries(store.db);
      const onFinding = (kind: string, name: string) => ({
        ...finding("missing_hsts", name),
        entityKind: kind,
      });
      const work = (address: string) => ({
        entities: [
          staged("Uri", "https://www.m.test:443", {
            details: { code: "200", ip_address: address, port: 443 },
          }),
          staged("NetworkService", "[2001:db8::1]:443/tcp", {
            details: { ip_address: "2001:db8::1", port: 443 },
          }),
          staged("Domain", "m.test"),
        ],
        findings: [
          onFinding("Uri", "https://www.m.test:443"),
          onFinding("NetworkService", "[2001:db8::1]:443/tcp"),
          onFinding("Domain", "m.test"),
        ],
        notes: [],
      });
      const endpoints = async (runId: number) => {
        const run = { collectionId: moves, runId, finishedAt: new Date().toISOString() };
        const found: Record<string, string | null> = {};
        for await (const row of queries.findings(run, {})) found[row.entityName] = row.endpoint;
        return found;
      };
      const versions = async () =>
        (
          await store.db
            .selectFrom("findings")
            .select("entity_name")
            .where("collection_id", "=", moves)
            .execute()
        )
          .map((row) => row.entity_name)
          .sort();
      await entities.stage(901, moves, work("192.0.2.7"));
      await entities.finishRun(901, moves);
      const first = {
        "https://www.m.test:443": "192.0.2.7:443",
        "[2001:db8::1]:443/tcp": "[2001:db8::1]:443",
        "m.test": null,
      };
      assert.deepEqual(await endpoints(901), first);
      await entities.stage(902, moves, work("192.0.2.8"));
      await entities.finishRun(902, moves);
      assert.deepEqual(await endpoints(902), { ...first, "https://www.m.test:443": "192.0.2.8:443" });
      assert.deepEqual(await endpoints(901), first, "run 901 still reads as it was");
      assert.deepEqual(
        await versions(),
        ["[2001:db8::1]:443/tcp", "https://www.m.test:443", "https://www.m.test:443", "m.test"],
        "only the finding whose entity moved has a new version",
      );

      // Findings stored before migration 013 take the endpoint of their entity as of their last run.
      const stored = () =>
        store.db
          .selectFrom("findings")
          .select(["id", "endpoint"])
          .orderBy("id")
          .execute()
          .then((rows) => rows.map((row) => [row.id, row.endpoint]));
      const kept = await stored();
      await sql`drop index findings_by_endpoint`.execute(store.db);
      await sql`alter table findings drop column endpoint`.execute(store.db);
      await findingEndpoints.up(store.db, dialect);
      assert.deepEqual(await stored(), kept);
    });

    test("a merge of many pages: every entity, product, finding and endpoint, and versions across runs", async () => {
      // Several pages of the merge (250 rows each), with the writes of one page under way while the next
      // is read and looked up: nothing may be lost, doubled or crossed between pages.
      const accounts = new AccountsRepository(store.db);
      const account = await accounts.createAccount("pages", "active");
      const team = await accounts.createTeam(account.id, "t");
      const pages = (await new CollectionsRepository(store.db).create(account.id, team.id, "pages", []))!.id;
      const hosts = 700;
      const address = (i: number) => `10.9.${i >> 8}.${i & 255}`;
      const work = (version: (i: number) => string) => ({
        entities: Array.from({ length: hosts }, (_, i) =>
          staged("NetworkService", `${address(i)}:22/tcp`, {
            details: { ip_address: address(i), port: 22, products: [["openssh", version(i)]] },
          }),
        ),
        findings: Array.from({ length: hosts }, (_, i) => ({
          ...finding("ssh_weak", `${address(i)}:22/tcp`),
          entityKind: "NetworkService",
          details: { version: version(i) },
        })),
        notes: [],
      });
      const count = async (table: "entities" | "findings", latest?: boolean) =>
        Number(
          (
            await store.db
              .selectFrom(table)
              .select((eb) => eb.fn.countAll().as("n"))
              .where("collection_id", "=", pages)
              .$if(latest === true, (q) => q.where("latest", "=", 1))
              .executeTakeFirstOrThrow()
          ).n,
        );
      // Staged in slices, as tasks stage.
      const stageAll = async (runId: number, version: (i: number) => string) => {
        const all = work(version);
        for (let i = 0; i < hosts; i += 50)
          await entities.stage(runId, pages, {
            entities: all.entities.slice(i, i + 50),
            findings: all.findings.slice(i, i + 50),
            notes: [],
          });
      };
      await stageAll(911, () => "9.6");
      assert.deepEqual(await entities.finishRun(911, pages), { entities: hosts, findings: hosts });
      // Every other host upgraded in the second run: a new version of its service and of its finding.
      await stageAll(912, (i) => (i % 2 === 0 ? "9.7" : "9.6"));
      await entities.finishRun(912, pages);
      assert.equal(await count("entities"), hosts * 1.5);
      assert.equal(await count("entities", true), hosts);
      assert.equal(await count("findings"), hosts * 1.5);
      assert.equal(await count("findings", true), hosts);
      const products = await store.db
        .selectFrom("entity_products as p")
        .innerJoin("entities as e", "e.id", "p.entity_row_id")
        .select(["e.name", "p.version"])
        .where("p.collection_id", "=", pages)
        .where("e.latest", "=", 1)
        .execute();
      assert.equal(products.length, hosts, "each latest service has its product");
      for (const { name, version } of products)
        assert.equal(version, Number(name.split(".")[3].split(":")[0]) % 2 === 0 ? "9.7" : "9.6", name);
      const endpoints = await store.db
        .selectFrom("findings")
        .select(["entity_name", "endpoint", "details"])
        .where("collection_id", "=", pages)
        .where("latest", "=", 1)
        .execute();
      for (const row of endpoints) assert.equal(`${row.endpoint}/tcp`, row.entity_name);
      assert.equal(await count("entities", true), (await entities.current(pages)).length);
    });
  });
}
