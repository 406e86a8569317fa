/**
 * What the store costs per discovery task, on each dialect: a task's start, what it found (two staged
 * entities) and its completion, written the three ways the run machinery can write them —
 * - apart: the start, the staging and the completion, a statement (or commit) each;
 * - staging with the completion: the start, then what it found in the completion's statement or
 *   transaction (a task whose sightings may pair as virtual hosts still stages apart);
 * - riding: the completion (with what it found) in the next task's start, one statement or commit
 *   (runs/riding-completions.ts; tasks without follow-ups, in the embedded queue).
 * Reported per task: wall time, Sightline's CPU, and PostgreSQL's server CPU where it runs on this
 * machine; and each way against "apart", the limit it is measured by.
 *
 * Run alone: node bench/run.ts bookkeeping
 */
import { stagingRows } from "../src/store/entities.ts";
import { servicesWithCollection } from "../test/helpers/server.ts";
import { dialects } from "../test/helpers/stores.ts";
import { postgresCpuSeconds } from "./lib/process-cpu.ts";
import type { Scenario } from "./run.ts";

const TASKS = 3000;
const WAYS = ["apart", "staging with the completion", "riding"] as const;
type Way = (typeof WAYS)[number];

const sighting = (name: string) => ({
  kind: "DnsRecord",
  name,
  details: { resolutions: ["192.0.2.1"], ttl: 300 },
  scoped: true,
  hidden: false,
  depth: 1,
  aliases: [],
  ancestors: [{ name: "acme.test", type: "Domain" }],
});

async function measure(dialect: "sqlite" | "postgres", way: Way) {
  const { services, collectionId, close } = await servicesWithCollection(dialect);
  try {
    const { runs, entities } = services;
    const run = (await runs.create(collectionId, "forced", 1))!;
    const tasks = Array.from({ length: TASKS }, (_, i) => ({
      key: `leaf:${i}`,
      kind: "leaf",
      payload: { entity: { kind: "IpAddress", name: `198.51.${i >> 8}.${i & 255}` } },
      depth: 1,
    }));
    await runs.start(run.id, tasks, new Date(Date.now() + 3_600_000).toISOString());
    const ids = await runs.unfinishedTaskIds(run.id);
    const found = (i: number) =>
      stagingRows(run.id, collectionId, {
        entities: [sighting(`h${i}.acme.test`), sighting(`www.h${i}.acme.test`)],
        findings: [],
        notes: [],
      });
    const database = postgresCpuSeconds();
    const cpu = process.cpuUsage();
    const started = performance.now();
    if (way === "riding") {
      let last: { runId: number; taskId: number; found: Awaited<ReturnType<typeof found>> } | undefined;
      for (const [i, id] of ids.entries()) {
        if (last) await runs.completeAndBegin([last], "bench", { taskId: id });
        else await runs.beginTask(id, "bench");
        last = { runId: run.id, taskId: id, found: await found(i) };
      }
      if (last) await runs.completeAndBegin([last], "bench");
    } else
      for (const [i, id] of ids.entries()) {
        await runs.beginTask(id, "bench");
        if (way === "apart") {
          await entities.stageRows(await found(i));
          await runs.completeTask(run.id, id, [], "bench");
        } else await runs.completeTask(run.id, id, [], "bench", await found(i));
      }
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const databaseAfter = postgresCpuSeconds();
    const done = await runs.get(run.id);
    if (done?.tasks_done !== TASKS)
      throw new Error(`${way} on ${dialect}: ${done?.tasks_done} tasks counted done`);
    await runs.end(run.id, "cancelled", null);
    return {
      wall: (seconds * 1e6) / TASKS,
      cpu: (used.user + used.system) / TASKS,
      database:
        dialect === "postgres" && database !== undefined && databaseAfter !== undefined
          ? ((databaseAfter - database) * 1e6) / TASKS
          : undefined,
    };
  } finally {
    await close();
  }
}

export const scenario: Scenario = {
  name: "bookkeeping",
  async run() {
    const lines = [
      `A discovery task's writes to the store — its start, what it found (two staged entities) and its completion — for ${TASKS} tasks one after another, written three ways: apart (a statement or commit each), what it found in the completion's statement or transaction, and the completion riding with the next task's start. Per task: wall time, Sightline's CPU, PostgreSQL's server CPU (all of it, on this machine); the last column is the CPU (Sightline's and the database's together) against "apart".`,
      "",
      "| store | way | wall per task | Sightline CPU per task | database CPU per task | CPU against apart |",
      "|---|---|---:|---:|---:|---:|",
    ];
    for (const { dialect, skip } of await dialects()) {
      if (skip) {
        lines.push(`| ${dialect} | skipped: ${skip} | | | | |`);
        continue;
      }
      let apart: number | undefined;
      for (const way of WAYS) {
        const measured = await measure(dialect, way);
        const total = measured.cpu + (measured.database ?? 0);
        apart ??= total;
        lines.push(
          `| ${dialect} | ${way} | ${measured.wall.toFixed(0)} µs | ${measured.cpu.toFixed(0)} µs | ${measured.database === undefined ? "–" : `${measured.database.toFixed(0)} µs`} | ${(total / apart).toFixed(2)} |`,
        );
      }
    }
    return lines.join("\n");
  },
};
