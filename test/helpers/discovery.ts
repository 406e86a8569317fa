/**
 * Discovery without the run machinery: a store with one collection, the engine over it, and a small
 * driver that does what the runs layer does with RunWork (plan → execute until no task is left, a key
 * seen twice dropped → finish), with a few tasks in flight at once.
 */

import { type Config, DEFAULTS, loadConfig } from "../../src/core/config.ts";
import type { FoundEntity, FoundIssue } from "../../src/core/entities.ts";
import type { RunInfo, RunWork, TaskRecord } from "../../src/core/run-work.ts";
import { Scope } from "../../src/core/scope.ts";
import type { Seed } from "../../src/core/seeds.ts";
import { DiscoveryEngine } from "../../src/discovery/engine.ts";
import {
  type DiscoveryLimits,
  type DiscoveryModule,
  type DiscoverySettings,
  discoveryLimits,
  type TargetSourceStatus,
} from "../../src/discovery/module.ts";
import { Throttle } from "../../src/discovery/net/throttle.ts";
import { AccountsRepository } from "../../src/store/accounts.ts";
import { CollectionsRepository } from "../../src/store/collections.ts";
import { openStore, type Store } from "../../src/store/database.ts";
import type { StagingRows } from "../../src/store/entities.ts";
import { migrateToLatest } from "../../src/store/migrate.ts";
import { EntitiesReader } from "./entities-reader.ts";
import { createTestStore, type TestStore } from "./stores.ts";

export interface DriveResult {
  tasks: TaskRecord[];
  finished: boolean;
}

/** Runs `work` to the end the way the run machinery does; `finish` is skipped when the signal aborted. */
export async function driveRun(
  work: RunWork,
  run: RunInfo,
  options: {
    concurrency?: number;
    signal?: AbortSignal;
    stageFound?: (found: unknown) => Promise<void>;
  } = {},
): Promise<DriveResult> {
  const signal = options.signal ?? new AbortController().signal;
  const seen = new Set<string>();
  const queue: TaskRecord[] = [];
  const done: TaskRecord[] = [];
  let nextId = 1;
  const enqueue = (specs: Awaited<ReturnType<RunWork["plan"]>>) => {
    for (const spec of specs) {
      if (seen.has(spec.key)) continue;
      seen.add(spec.key);
      queue.push({ ...spec, id: nextId++, runId: run.id, attempts: 0 });
    }
  };
  enqueue(await work.plan(run));
  let active = 0;
  await new Promise<void>((resolve, reject) => {
    const pump = () => {
      if (queue.length === 0 && active === 0) return resolve();
      while (active < (options.concurrency ?? 8) && queue.length > 0) {
        const task = queue.shift()!;
        active++;
        work
          .execute(task, run, signal)
          .then(async (result) => {
            const { followUps, found } = Array.isArray(result)
              ? { followUps: result, found: undefined }
              : result;
            // What the work left to be written with the task's completion (RunsRepository.completeTask).
            if (found) await options.stageFound?.(found);
            active--;
            done.push(task);
            if (!signal.aborted) enqueue(followUps);
            pump();
          })
          .catch((error) => {
            // A task cut short by the signal fails with its reason; the run machinery hands it back.
            if (!signal.aborted) return reject(error);
            active--;
            pump();
          });
      }
    };
    pump();
  });
  if (signal.aborted) return { tasks: done, finished: false };
  await work.finish(run);
  return { tasks: done, finished: true };
}

export interface DiscoveryFixture {
  store: Store;
  config: Config;
  collections: CollectionsRepository;
  entities: EntitiesReader;
  engine: DiscoveryEngine;
  collectionId: number;
  /** Runs discovery once to the end with a fresh run id. */
  run(options?: { signal?: AbortSignal }): Promise<{ run: RunInfo } & DriveResult>;
  close(): Promise<void>;
}

let runIds = 1000;

export async function discoveryFixture(
  dialect: "sqlite" | "postgres",
  seeds: Seed[],
  overrides: Partial<Config> = {},
  modules?: readonly DiscoveryModule[],
): Promise<DiscoveryFixture> {
  const testStore: TestStore = await createTestStore(dialect);
  // Passive sources are outside services: none is asked unless a test brings its fakes.
  const config = loadConfig(
    {},
    { ...testStore.config, logLevel: "silent", sources: ["none"], permutations: 0, ...overrides },
  );
  const store = openStore(config);
  await migrateToLatest(store);
  const accounts = new AccountsRepository(store.db);
  const collections = new CollectionsRepository(store.db);
  const entities = new EntitiesReader(store.db);
  const account = await accounts.createAccount("lab", "active");
  const team = await accounts.createTeam(account.id, "blue");
  const collection = (await collections.create(account.id, team.id, "lab", seeds))!;
  const engine = new DiscoveryEngine({ config, collections, entities, modules });
  return {
    store,
    config,
    collections,
    entities,
    engine,
    collectionId: collection.id,
    async run(options = {}) {
      const run: RunInfo = {
        id: runIds++,
        collectionId: collection.id,
        collectionName: "lab",
        accountId: account.id,
      };
      const stageFound = (found: unknown) => entities.stageRows(found as StagingRows);
      return {
        run,
        ...(await driveRun(engine, run, { concurrency: 16, signal: options.signal, stageFound })),
      };
    },
    async close() {
      await store.close();
      await testStore.drop();
    },
  };
}

export interface ModuleOutcome {
  entities: FoundEntity[];
  issues: FoundIssue[];
  notes: string[];
  /** What a passive-source module reported of its source. */
  sources: TargetSourceStatus[];
}

/** Runs one module on one entity with a collecting context: what a module test looks at. */
export async function runModule(
  module: DiscoveryModule,
  entity: FoundEntity,
  settings: Partial<Omit<DiscoverySettings, "limits">> & {
    limits?: Partial<DiscoveryLimits>;
    allow?: string[];
    depth?: number;
    signal?: AbortSignal;
    /** Shared limits across calls (a benchmark scanning many hosts at once); default a fresh one. */
    throttle?: Throttle;
    /** A scope shared across calls, as a run has one; default one allowing `allow`. */
    scope?: Scope;
    /** The run the call belongs to (what a module keeps per run is keyed by it). */
    runId?: number;
  } = {},
): Promise<ModuleOutcome> {
  const outcome: ModuleOutcome = { entities: [], issues: [], notes: [], sources: [] };
  const full: DiscoverySettings = {
    dnsServers: [],
    ports: [],
    wordlist: "small",
    timeoutMs: 1000,
    concurrency: 200,
    perHostConcurrency: 64,
    rateLimit: 0,
    ...settings,
    limits: { ...discoveryLimits(DEFAULTS), ...settings.limits },
  };
  const scope = settings.scope ?? labScope(settings.allow);
  await module.run(entity, {
    signal: settings.signal ?? new AbortController().signal,
    runId: settings.runId,
    depth: settings.depth ?? 1,
    throttle: settings.throttle ?? new Throttle(full),
    settings: full,
    emit: (found) => outcome.entities.push(found),
    raise: (issue) => outcome.issues.push(issue),
    note: (message) => outcome.notes.push(message),
    mayTouch: (address) => scope.mayTouch(address),
    covers: (name) => scope.coversName(name),
    reportSource: (status) => outcome.sources.push(status),
  });
  return outcome;
}

/** A scope with no seeds that may touch `allow` (by default the lab's loopback). */
export function labScope(allow = ["127.0.0.0/8"]): Scope {
  return new Scope([], { scanAllow: allow, scanDeny: [] });
}

/** The names of the emitted entities of one kind, sorted and de-duplicated. */
export function namesOf(outcome: ModuleOutcome, kind: string): string[] {
  return [...new Set(outcome.entities.filter((e) => e.kind === kind).map((e) => e.name))].sort();
}
