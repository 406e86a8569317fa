/**
 * One scan of a block by an embedded server on a fresh SQLite store, as a user would start it: a
 * collection seeded with the block, a run scheduled and polled to its end. For the benchmarks of
 * address space that does not answer (bench/silent.ts).
 */
import { startServer } from "../../src/app/server.ts";
import { type Config, loadConfig } from "../../src/core/config.ts";
import { createTestStore } from "../../test/helpers/stores.ts";
import { callApi } from "./api.ts";

const KEYS = { access: "SLBENCHSILENTKEY01", secret: "bench-silent-secret-0123456789abcdef" };

/**
 * Scans `block` (or several, seeded in that order) with the default settings but `settings`; answers the
 * run's time and task count.
 */
export async function scanBlock(
  block: string | string[],
  settings: Partial<Config>,
): Promise<{ seconds: number; tasks: number }> {
  const store = await createTestStore("sqlite");
  const server = await startServer(
    loadConfig(process.env, {
      ...store.config,
      port: 0,
      host: "127.0.0.1",
      logLevel: "silent",
      bootstrapAccessKey: KEYS.access,
      bootstrapSecretKey: KEYS.secret,
      dnsServers: ["127.0.0.1"],
      schedulerIntervalSeconds: 86_400,
      ...settings,
    }),
  );
  try {
    const api = (method: string, path: string, body?: unknown) =>
      callApi(server.url, KEYS, method, path, body);
    const seeds = [block].flat().map((name) => ({ type: "NetBlock", name }));
    await api("POST", "/api/collections", { name: "silent", seeds });
    const started = performance.now();
    const { id } = (await api("POST", "/api/collections/silent/schedule")) as { id: string };
    for (;;) {
      const run = (await api("GET", `/api/collections/silent/runs/${id}`)) as {
        status: string;
        tasks_total: number;
        error?: string;
      };
      if (run.status === "finished")
        return { seconds: (performance.now() - started) / 1000, tasks: run.tasks_total };
      if (!["queued", "started"].includes(run.status))
        throw new Error(`the run ended ${run.status}: ${run.error}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await server.close();
    await store.drop();
  }
}
