/**
 * The final merge alone, at a chosen size: stages what a scan of `hosts` addresses stages (per address
 * an IpAddress with its block, three services, one shared certificate), then times `finishRun` and
 * the event loop's longest stall meanwhile. `node bench/lib/merge-probe.ts <hosts> [sqlite|postgres]`.
 */
import { loadConfig } from "../../src/core/config.ts";
import { AccountsRepository } from "../../src/store/accounts.ts";
import { CollectionsRepository } from "../../src/store/collections.ts";
import { openStore } from "../../src/store/database.ts";
import { EntitiesRepository, type StagedEntity } from "../../src/store/entities.ts";
import { migrateToLatest } from "../../src/store/migrate.ts";
import { createTestStore } from "../../test/helpers/stores.ts";

export async function mergeProbe(hosts: number, dialect: "sqlite" | "postgres") {
  const testStore = await createTestStore(dialect);
  const store = openStore(loadConfig({}, testStore.config));
  try {
    await migrateToLatest(store);
    const accounts = new AccountsRepository(store.db);
    const account = await accounts.createAccount("a", "active");
    const team = await accounts.createTeam(account.id, "t");
    const collectionId = (await new CollectionsRepository(store.db).create(account.id, team.id, "c", []))!.id;
    const entities = new EntitiesRepository(store.db);
    const base = (
      kind: string,
      name: string,
      details: Record<string, unknown>,
      task: string,
    ): StagedEntity => ({
      kind,
      name,
      details,
      scoped: true,
      hidden: false,
      depth: 1,
      aliases: [],
      ancestors: [{ name: "127.90.0.0/16", type: "NetBlock" }],
      taskResult: {
        name: task,
        task: task.split(":")[0],
        entity_type: "IpAddress",
        entity_name: name,
        depth: 1,
      },
    });
    const runId = 1;
    for (let i = 0; i < hosts; i++) {
      const ip = `127.90.${i >> 8}.${i & 255}`;
      await entities.stage(runId, collectionId, {
        entities: [
          base("IpAddress", ip, { ip_address: ip }, `netblocks:IpAddress:${ip}`),
          base("NetBlock", "127.90.0.0/16", { addresses: [ip] }, `netblocks:IpAddress:${ip}`),
        ],
        findings: [],
        notes: [],
      });
      await entities.stage(runId, collectionId, {
        entities: [80, 443, 22].map((port) =>
          base(
            "NetworkService",
            `${ip}:${port}/tcp`,
            { ip_address: ip, port, banner: "x" },
            `ports:IpAddress:${ip}`,
          ),
        ),
        findings: [],
        notes: [],
      });
      if (i % 8 === 0)
        await entities.stage(runId, collectionId, {
          entities: [base("SslCertificate", "shared-cert", { endpoints: [`${ip}:443`] }, `tls:${ip}:443`)],
          findings: [],
          notes: [],
        });
    }
    // The longest gap between ticks of a 5 ms timer: how long a request would have waited.
    let last = performance.now();
    let maxStallMs = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      maxStallMs = Math.max(maxStallMs, now - last - 5);
      last = now;
    }, 5);
    // Reads the result views make, during the merge: how long one waits.
    let maxReadMs = 0;
    let merging = true;
    const reads = (async () => {
      while (merging) {
        const at = performance.now();
        await entities.resultRun(collectionId);
        maxReadMs = Math.max(maxReadMs, performance.now() - at);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const started = performance.now();
    const summary = await entities.finishRun(runId, collectionId);
    merging = false;
    await reads;
    const seconds = (performance.now() - started) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 20));
    clearInterval(timer);
    return {
      hosts,
      dialect,
      seconds,
      maxStallMs: Math.round(maxStallMs),
      maxReadMs: Math.round(maxReadMs),
      entities: summary.entities,
    };
  } finally {
    await store.close();
    await testStore.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const hosts = Number(process.argv[2] ?? 4096);
  const dialect = (process.argv[3] ?? "sqlite") as "sqlite" | "postgres";
  console.log(JSON.stringify(await mergeProbe(hosts, dialect)));
}
