/**
 * The issues list alone, read from the database: a collection built with the results bench's fixture
 * (an issue on every other application: 20,000 hosts give 10,000 issues), served in-process with the
 * result cache off, so every answer is read and serialised again. Times GET /issues unpaged and a page of
 * 100 at an offset of 5,000 (median of `rounds` requests each, after one warm-up) and answers the bytes;
 * and a page of 100 applications at the same offset, the list that reads the most stored JSON per row
 * (details, ancestors and task results).
 * `node bench/lib/issues-probe.ts [hosts=20000] [sqlite|postgres] [rounds=7]`
 */
import { startServer } from "../../src/app/server.ts";
import { loadConfig } from "../../src/core/config.ts";
import { buildRun, fixtureCounts } from "../../test/helpers/result-fixtures.ts";
import { createTestStore } from "../../test/helpers/stores.ts";

const KEYS = { access: "SLBENCHISSUESKEY01", secret: "bench-issues-secret-0123456789abcdef" };
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export async function issuesProbe(hosts: number, dialect: "sqlite" | "postgres", rounds: number) {
  const store = await createTestStore(dialect);
  const server = await startServer(
    loadConfig(
      {},
      {
        ...store.config,
        port: 0,
        host: "127.0.0.1",
        logLevel: "silent",
        resultCacheBytes: 0,
        schedulerIntervalSeconds: 86_400,
        dnsServers: ["127.0.0.1:53"],
        bootstrapAccessKey: KEYS.access,
        bootstrapSecretKey: KEYS.secret,
      },
    ),
  );
  try {
    const auth = { SERVICE_ACCESS_KEY: KEYS.access, SERVICE_SECRET_KEY: KEYS.secret };
    const created = await fetch(`${server.url}/api/collections`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ name: "issues", seeds: [{ type: "Domain", name: "corp.example" }] }),
    });
    if (!created.ok) throw new Error(`creating the collection failed: ${await created.text()}`);
    const row = await server.services.store.db
      .selectFrom("collections")
      .select("id")
      .where("name", "=", "issues")
      .executeTakeFirstOrThrow();
    const collection = { collectionId: row.id, name: "issues" };
    const started = performance.now();
    await buildRun(server.services.store.db, collection, { hosts });
    const built = (performance.now() - started) / 1000;
    const time = async (path: string) => {
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i <= rounds; i++) {
        const begun = performance.now();
        const response = await fetch(`${server.url}/api/collections/issues/${path}`, {
          headers: auth,
        });
        const body = await response.arrayBuffer();
        if (!response.ok) throw new Error(`${path}: ${response.status} ${Buffer.from(body).toString()}`);
        bytes = body.byteLength;
        if (i > 0) times.push(performance.now() - begun);
      }
      return { ms: median(times), bytes };
    };
    return {
      dialect,
      issues: fixtureCounts(hosts).issues,
      builtSeconds: Math.round(built),
      unpaged: await time("issues"),
      page: await time("issues?limit=100&offset=5000"),
      applicationsPage: await time("applications?limit=100&offset=5000"),
    };
  } finally {
    await server.close();
    await store.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [hosts = "20000", dialect = "sqlite", rounds = "7"] = process.argv.slice(2);
  console.log(
    JSON.stringify(await issuesProbe(Number(hosts), dialect as "sqlite" | "postgres", Number(rounds))),
  );
}
