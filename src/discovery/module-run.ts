/**
 * Running one module on one entity, apart from what the engine does with the outcome. The engine
 * (engine.ts) decides scope, depth, follow-ups and staging on its own thread; a `ModuleRunner` only
 * runs modules: `LocalModules` here, in this thread, or `ModuleThread` (module-thread.ts) in a worker
 * thread of its own, so the network work of a run uses a second core and never holds the thread that
 * serves the API and writes the store.
 */
import { setBounded } from "../core/bounded-map.ts";
import type { FoundEntity, FoundIssue } from "../core/entities.ts";
import { Scope } from "../core/scope.ts";
import type { Seed } from "../core/seeds.ts";
import { mergeDetails } from "../store/entities.ts";
import type { DiscoveryContext, DiscoveryModule, DiscoverySettings, TargetSourceStatus } from "./module.ts";
import { Throttle } from "./net/throttle.ts";

/** What a module needs of its run: settings and what bounds its scope, all plain data. */
export interface RunDescription {
  id: number;
  settings: DiscoverySettings;
  seeds: Seed[];
  scanAllow: string[];
  scanDeny: string[];
}

export interface ModuleTask {
  /** The module's name (the task's kind). */
  module: string;
  entity: FoundEntity;
  depth: number;
}

export interface ModuleOutput {
  /** What it emitted, one entry per entity (repeated sightings merged in emission order). */
  found: FoundEntity[];
  issues: FoundIssue[];
  notes: string[];
  /** How the passive sources it asked fared (a passive-source module's). */
  sources?: TargetSourceStatus[];
  /** Why the module stopped early, when it threw (what it found before is kept). */
  error?: string;
}

export interface ModuleRunner {
  run(task: ModuleTask, run: RunDescription, signal: AbortSignal): Promise<ModuleOutput>;
  /**
   * The run has ended here: let go of what was kept for it. `release`: and of what is kept for any run,
   * if nothing else is going on (a large run's finish is about to take memory of its own).
   */
  forget(runId: number, options?: { release?: boolean }): void;
  close(): Promise<void>;
}

/** Runs the module with a collecting context; a module that throws keeps what it emitted before. */
export async function runModuleOn(
  module: DiscoveryModule,
  entity: FoundEntity,
  context: Omit<DiscoveryContext, "emit" | "raise" | "note" | "reportSource">,
): Promise<ModuleOutput> {
  const found = new Map<string, FoundEntity>();
  const output: ModuleOutput = { found: [], issues: [], notes: [] };
  try {
    await module.run(entity, {
      ...context,
      emit(emitted) {
        const key = `${emitted.kind}\u0000${emitted.name}`;
        const previous = found.get(key);
        found.set(
          key,
          previous
            ? {
                ...previous,
                details: mergeDetails(previous.details ?? {}, emitted.details ?? {}),
                aliases: [...(previous.aliases ?? []), ...(emitted.aliases ?? [])],
                hidden: (previous.hidden ?? false) && (emitted.hidden ?? false),
              }
            : emitted,
        );
      },
      raise: (issue) => output.issues.push(issue),
      note: (message) => output.notes.push(message),
      reportSource: (status) => {
        output.sources ??= [];
        output.sources.push(status);
      },
    });
  } catch (error) {
    output.error = (error as Error).message;
  }
  output.found = [...found.values()];
  return output;
}

interface LocalRun {
  settings: DiscoverySettings;
  scope: Scope;
  throttle: Throttle;
}

/** Runs modules in this thread, with one throttle per set of politeness limits shared by its runs. */
export class LocalModules implements ModuleRunner {
  readonly #byName: Map<string, DiscoveryModule>;
  readonly #modules: readonly DiscoveryModule[];
  readonly #runs = new Map<number, LocalRun>();
  readonly #throttles = new Map<string, Throttle>();

  constructor(modules: readonly DiscoveryModule[]) {
    this.#modules = modules;
    this.#byName = new Map(modules.map((module) => [module.name, module]));
  }

  run(task: ModuleTask, run: RunDescription, signal: AbortSignal): Promise<ModuleOutput> {
    const module = this.#byName.get(task.module);
    if (!module) return Promise.reject(new Error(`No discovery module named "${task.module}".`));
    const { settings, scope, throttle } = this.#run(run);
    return runModuleOn(module, task.entity, {
      signal,
      runId: run.id,
      depth: task.depth,
      throttle,
      settings,
      mayTouch: (address) => scope.mayTouch(address),
      covers: (name) => scope.coversName(name),
    });
  }

  forget(runId: number): void {
    this.#runs.delete(runId);
  }

  async close(): Promise<void> {}

  #run(run: RunDescription): LocalRun {
    let local = this.#runs.get(run.id);
    if (!local) {
      const { settings } = run;
      const limits = `${settings.concurrency}/${settings.perHostConcurrency}/${settings.rateLimit}`;
      let throttle = this.#throttles.get(limits);
      if (!throttle) {
        throttle = new Throttle(settings);
        setBounded(this.#throttles, limits, throttle, 16);
      }
      local = {
        settings,
        scope: new Scope(run.seeds, { scanAllow: run.scanAllow, scanDeny: run.scanDeny }),
        throttle,
      };
      // Runs that fail never reach finish; keep the cache small.
      setBounded(this.#runs, run.id, local, 64);
      for (const module of this.#modules) module.runStarting?.(settings);
    }
    return local;
  }
}
