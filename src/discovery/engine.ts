/**
 * The discovery engine: the RunWork a run executes. It turns seeds into the first tasks, runs one module
 * on one entity per task (an address's or a service's modules share one, SHARED_TASK_KINDS), stages what
 * the modules found (with scope and provenance), and answers the follow-up tasks: every module consuming
 * a new entity's kind, if the entity is in scope, may be explored, and lies within the depth limit. The
 * run machinery drops repeated task keys (`module:Kind:name`, `a+b:Kind:name`), so the same work never
 * happens twice in a run. `finish` merges the run's staged
 * findings into the collection's results.
 *
 * Depth counts discovery steps away from the seeds. Looking closer at the same asset is not a step: the
 * addresses a name resolves to, the services of an address, the certificate of a service and the block
 * of an address keep their parent's depth, so a depth limit cuts chains of names, not views of a host.
 */

import { blockSize, blockSlice } from "../core/addresses.ts";
import { setBounded } from "../core/bounded-map.ts";
import type { Config } from "../core/config.ts";
import { strings } from "../core/details.ts";
import type { EntityKind, EntityRef, FoundEntity } from "../core/entities.ts";
import { entityTypeName } from "../core/formats.ts";
import type { Counter, Histogram, Metrics } from "../core/metrics.ts";
import { eachPaced } from "../core/pace.ts";
import { type RunSettings, runSettingsFrom } from "../core/run-settings.ts";
import type { RunInfo, RunWork, TaskOutcome, TaskRecord, TaskSpec } from "../core/run-work.ts";
import { NAME_KINDS, Scope } from "../core/scope.ts";
import type { Seed } from "../core/seeds.ts";
import { serviceEndpoint, servicePrefix } from "../core/service-names.ts";
import {
  describeSourceStatus,
  KEYED_SOURCE_IDS,
  SOURCE_IDS,
  sourceKeyKey,
  sourceUrlKey,
} from "../core/sources.ts";
import type { CollectionsRepository } from "../store/collections.ts";
import {
  type Ancestor,
  type EntitiesRepository,
  type StagedEntity,
  type StagedSighting,
  type StagedWork,
  stagingRows,
} from "../store/entities.ts";
import { type RunResultsRequest, saveRunResultsHere, saveRunResultsOnThread } from "../store/run-results.ts";
import { RunSourcesRepository } from "../store/run-sources.ts";
import {
  type DiscoveryModule,
  type DiscoverySettings,
  discoveryLimits,
  type SourceAccess,
} from "./module.ts";
import { LocalModules, type ModuleOutput, type ModuleRunner, type RunDescription } from "./module-run.ts";
import { sourceModuleName } from "./modules/passive-sources.ts";
import { PERMUTATIONS } from "./modules/permutations.ts";
import { MODULES } from "./modules.ts";
import { parsePortSpec } from "./port-lists.ts";

/** What a discovery task carries: the entity to look at and how it was reached. */
export interface DiscoveryPayload {
  entity: FoundEntity;
  ancestors: Ancestor[];
}

/** Kind pairs where the child is a closer view of the parent's asset (no depth step). */
const PARTS = new Set([
  "IpAddress>NetworkService",
  "NetworkService>SslCertificate",
  "IpAddress>NetBlock",
  "NetworkService>Uri",
]);

/**
 * A seeded block larger than this is expanded lazily, a slice at a time: each slice task stages its
 * addresses and queues their tasks, then the next slice after them, so a /16 is not 65,536 rows before
 * the first probe and the run's pending tasks stay about one slice's worth ahead of the scan.
 */
const BLOCK_SLICE = 256;
/** The task kind of one slice of a seeded block (the engine's own, not a module). */
const BLOCK_SLICE_TASK = "block-slice";

/**
 * Kinds whose modules share one task per entity (those with the default work key): a block has one
 * address and a few services per live host, and each task costs the store a few statements and the
 * queue a slot's turn, so a /20's 29,585 tasks became 11,921. Names keep a task per module: theirs
 * can take long (a wordlist), and the others' follow-ups would wait for it.
 */
const SHARED_TASK_KINDS: ReadonlySet<EntityKind> = new Set(["IpAddress", "NetworkService"]);
/** Joins the modules of a shared task in its kind: `dns-reverse+netblocks+ports+udp`. */
const MODULE_JOIN = "+";

interface BlockSlicePayload {
  block: string;
  start: number;
}

const SEED_KIND: Record<Seed["type"], EntityKind> = {
  Domain: "Domain",
  DnsRecord: "DnsRecord",
  Nameserver: "Nameserver",
  IpAddress: "IpAddress",
  NetBlock: "NetBlock",
  Uri: "Uri",
};

/**
 * What the modules of a run are given: the run's own settings, and from this process only how its port
 * scan runs (`probeEngine`), which changes how fast it goes, not what it finds.
 */
export function discoverySettings(
  settings: RunSettings,
  probeEngine = "auto",
  config?: Config,
): DiscoverySettings {
  return {
    dnsServers: settings.dnsServers,
    ports: parsePortSpec(settings.ports),
    wordlist: settings.dnsWordlist,
    wordlistLines: settings.dnsWordlistLines,
    timeoutMs: settings.timeoutMs,
    concurrency: settings.concurrency,
    perHostConcurrency: settings.perHostConcurrency,
    rateLimit: settings.rateLimit,
    probeEngine,
    hostDiscovery: settings.hostDiscovery !== "off",
    hostDiscoveryTimeoutMs: settings.hostDiscoveryTimeoutMs,
    hostDiscoveryMinTimeoutMs: settings.hostDiscoveryMinTimeoutMs,
    limits: discoveryLimits(settings),
    templates: {
      builtIn: settings.templateLibrary !== "off",
      directories: settings.templates,
      tags: settings.templateTags,
      severities: settings.templateSeverities,
      allow: settings.templateAllow.map((tag) => tag.toLowerCase()),
    },
    sources: config && sourceAccess(settings, config),
    permutations: settings.permutations ?? 0,
    permutationWords: settings.permutationWordLines,
  };
}

/** The run's choice of passive sources, with this process's URLs and keys of them. */
function sourceAccess(settings: RunSettings, config: Config): SourceAccess {
  return {
    chosen: settings.sources ?? [],
    urls: Object.fromEntries(SOURCE_IDS.map((id) => [id, config[sourceUrlKey(id)]])),
    keys: Object.fromEntries(KEYED_SOURCE_IDS.map((id) => [id, config[sourceKeyKey(id)]])),
    timeoutMs: settings.sourceTimeoutMs ?? config.sourceTimeoutMs,
    maxBytes: settings.sourceMaxBytes ?? config.sourceMaxBytes,
    retries: settings.sourceRetries ?? config.sourceRetries,
    maxNames: settings.sourceMaxNames ?? config.sourceMaxNames,
    requestsPerMinute: config.sourceRequestsPerMinute,
  };
}

/** Why a signal aborted, as an error to throw. */
const abortReason = (signal: AbortSignal) =>
  signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason ?? "aborted"));

/** A task's sightings that may pair as virtual hosts, by address, and the modules the pairs are for. */
interface VirtualHostCandidates {
  modules: DiscoveryModule[];
  newNames: Map<string, Set<string>>;
  newServices: Map<string, StagedEntity[]>;
}

/** What a process knows of a run it works on, built once per run and process. */
interface RunContext {
  scope: Scope;
  /** What the modules are given of the run (plain data: it may go to another thread). */
  description: RunDescription;
  depth: number;
  /** The largest seeded block whose addresses are scanned. */
  maxBlockAddresses: number;
  /** Modules the run's settings switch off (its scan profile's UDP, brute force, exposure checks). */
  modulesOff: ReadonlySet<string>;
}

/** The modules a run's settings switch off, by name. */
export function modulesSwitchedOff(settings: RunSettings): Set<string> {
  const off = new Set<string>();
  if (settings.udp === "off") off.add("udp");
  if (settings.exposureChecks === "off") off.add("exposures");
  if (settings.dnsWordlist === "off") off.add("dns-brute");
  if (settings.permutations === 0) off.add(PERMUTATIONS);
  if (settings.sources)
    for (const id of SOURCE_IDS) if (!settings.sources.includes(id)) off.add(sourceModuleName(id));
  return off;
}

export interface EngineDependencies {
  config: Config;
  collections: CollectionsRepository;
  entities: EntitiesRepository;
  /** Default: every registered module (src/discovery/modules.ts). */
  modules?: readonly DiscoveryModule[];
  /**
   * Where the modules run (default: in this thread). A runner of its own (a worker thread) must run
   * modules of the same names as `modules`.
   */
  runner?: ModuleRunner;
  /** From how many tasks a run's results are saved on a thread of their own (default FINISH_THREAD_FROM). */
  finishThreadFrom?: number;
}

/**
 * A run of this many tasks or more saves its results on a thread of its own (store/run-results.ts): the
 * thread's start costs about half a second, a /22's merge (about 3,000 tasks) about as much.
 */
export const FINISH_THREAD_FROM = 2_000;

const sameRef = (a: EntityRef, b: EntityRef) => a.kind === b.kind && a.name === b.name;

export class DiscoveryEngine implements RunWork {
  readonly #dependencies: EngineDependencies;
  readonly #modules: readonly DiscoveryModule[];
  readonly #byName: Map<string, DiscoveryModule>;
  #errors: Counter = { inc() {} };
  #moduleSeconds: Histogram = { observe() {} };
  /** Scope and settings per run, built once per run and process. */
  readonly #runs = new Map<number, Promise<RunContext>>();
  readonly #runner: ModuleRunner;
  /** Made on first use: an engine asked only how its tasks behave (`waits`) needs no store. */
  #sources: RunSourcesRepository | undefined;
  /** This process's own settings, for runs created before runs carried theirs. */
  #ownSettings: RunSettings | undefined;

  constructor(dependencies: EngineDependencies) {
    this.#dependencies = dependencies;
    this.#modules = dependencies.modules ?? MODULES;
    this.#byName = new Map(this.#modules.map((module) => [module.name, module]));
    this.#runner = dependencies.runner ?? new LocalModules(this.#modules);
  }

  /** Lets go of the module runner (a worker thread). */
  close(): Promise<void> {
    return this.#runner.close();
  }

  instrument(metrics: Metrics): void {
    this.#errors = metrics.counter(
      "sightline_discovery_errors_total",
      "Discovery modules that failed on an entity (the run goes on and notes it), by module.",
      ["module"],
    );
    this.#moduleSeconds = metrics.histogram(
      "sightline_discovery_module_seconds",
      "How long a module took on one entity (its network waits included), by module: where a run's time goes.",
      [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      ["module"],
    );
  }

  waits(kind: string): boolean {
    return kind.split(MODULE_JOIN).some((name) => this.#byName.get(name)?.waits === true);
  }

  async plan(run: RunInfo): Promise<TaskSpec[]> {
    const seeds = await this.#dependencies.collections.seeds(run.collectionId);
    const context = await this.#run(run);
    const notes: string[] = [];
    if (seeds.length === 0)
      notes.push(`Collection ${run.collectionName} has no seeds; there was nothing to discover.`);
    const entities: FoundEntity[] = [];
    const slices: TaskSpec[] = [];
    for (const seed of seeds) {
      const { found, large } = seedEntities(seed, notes, context.maxBlockAddresses);
      entities.push(...found);
      if (large) slices.push(blockSliceTask(seed.name, 0));
    }
    await this.#dependencies.entities.stage(run.id, run.collectionId, {
      entities: entities.map(seedSighting),
      findings: [],
      notes,
      noteKind: "plan",
    });
    return [...entities.flatMap((entity) => this.#tasksFor(entity, 0, [], context)), ...slices];
  }

  /** One slice of a large seeded block: its addresses as seeds, their tasks, then the next slice. */
  async #expandSlice(task: TaskRecord, run: RunInfo): Promise<TaskSpec[]> {
    const { block, start } = task.payload as BlockSlicePayload;
    const context = await this.#run(run);
    const size = blockSize(block);
    const addresses = blockSlice(block, start, Math.min(BLOCK_SLICE, size - start));
    const entities = addresses.map((name): FoundEntity => ({ kind: "IpAddress", name }));
    await this.#dependencies.entities.stage(run.id, run.collectionId, {
      entities: entities.map(seedSighting),
      findings: [],
      notes: [],
    });
    const followUps = entities.flatMap((entity) => this.#tasksFor(entity, 0, [], context));
    if (start + BLOCK_SLICE < size) followUps.push(blockSliceTask(block, start + BLOCK_SLICE));
    return followUps;
  }

  async execute(task: TaskRecord, run: RunInfo, signal: AbortSignal): Promise<TaskSpec[] | TaskOutcome> {
    if (task.kind === BLOCK_SLICE_TASK) return this.#expandSlice(task, run);
    const modules = task.kind.split(MODULE_JOIN).map((name) => {
      const module = this.#byName.get(name);
      if (!module) throw new Error(`No discovery module named "${name}" (task ${task.key}).`);
      return module;
    });
    const payload = task.payload as DiscoveryPayload;
    const runContext = await this.#run(run);
    const parent: EntityRef = { kind: payload.entity.kind, name: payload.entity.name };

    // The modules of a shared task run side by side, each as its own task would have.
    const outputs = await Promise.all(
      modules.map(async (module) => {
        const started = performance.now();
        const output = await this.#runner.run(
          { module: module.name, entity: payload.entity, depth: task.depth },
          runContext.description,
          signal,
        );
        this.#moduleSeconds.observe({ module: module.name }, (performance.now() - started) / 1000);
        return { module, output };
      }),
    );
    // A task cut short by its signal (a cancel, the time limit, a shutdown) has not done its work: it
    // fails with the signal's reason, so the run machinery hands it back or drops it. Answering no
    // follow-ups would have marked it done with its work lost (a shutdown's grace running out).
    if (signal.aborted && outputs.some(({ output }) => output.error !== undefined)) throw abortReason(signal);
    // One entity a module cannot handle (a malformed certificate, a protocol surprise) must not fail
    // the run: what it found so far is kept and the run says what went wrong.
    const work: StagedWork = { entities: [], findings: [], notes: [], noteKind: modules[0].name };
    const lineage = [...payload.ancestors, { name: parent.name, type: entityTypeName(parent.kind) }];
    const followUps: TaskSpec[] = [];
    for (const { module, output } of outputs) {
      for (const issue of output.issues)
        work.findings.push({
          name: issue.name,
          entityKind: issue.entity.kind,
          entityName: issue.entity.name,
          prettyName: issue.prettyName,
          severity: issue.severity,
          confidence: issue.confidence,
          category: issue.category,
          description: issue.description,
          remediation: issue.remediation,
          references: issue.references,
          details: issue.details,
          scoped: true,
        });
      const notes = [...output.notes];
      if (output.error !== undefined) {
        this.#errors.inc({ module: module.name });
        notes.push(`${module.name} failed on ${parent.kind} ${parent.name}: ${output.error}`);
      }
      work.notes.push(...notes.map((message) => ({ kind: module.name, message })));
      // Provenance names the module's own work (what its task's key would be), shared task or not.
      const taskResult = {
        name: modules.length > 1 ? `${module.name}:${parent.kind}:${parent.name}` : task.key,
        task: module.name,
        entity_type: entityTypeName(parent.kind),
        entity_name: parent.name,
        depth: task.depth,
      };
      await this.#sightings(
        output.found,
        { task, payload, parent, lineage, taskResult },
        runContext,
        work,
        followUps,
      );
    }
    await this.#recordSources(run, outputs, work);
    // What the task found is written with its completion (RunsRepository.completeTask), a statement or
    // commit fewer, unless it may pair with what other tasks found as a virtual host: those look-ups read
    // the run's staging, so its own rows must be there first (see #virtualHostTasks).
    const pairing = await this.#virtualHostCandidates(work.entities, runContext);
    if (!pairing) return { followUps, found: await stagingRows(run.id, run.collectionId, work) };
    await this.#dependencies.entities.stage(run.id, run.collectionId, work);
    if (signal.aborted) throw abortReason(signal);
    followUps.push(...(await this.#virtualHostTasks(run, pairing, runContext)));
    return followUps;
  }

  /**
   * The passive sources' statuses of a task, written to the run's source ledger with a note each:
   * `new` counts the live names no other task of the run had staged before this one.
   */
  async #recordSources(
    run: RunInfo,
    outputs: Array<{ module: DiscoveryModule; output: ModuleOutput }>,
    work: StagedWork,
  ): Promise<void> {
    const statuses = outputs.flatMap(({ output }) => output.sources ?? []);
    if (statuses.length === 0) return;
    const live = [...new Set(statuses.flatMap((status) => status.live))];
    const known =
      live.length === 0
        ? new Set<string>()
        : new Set(
            (await this.#dependencies.entities.staged(run.id, [...NAME_KINDS], { names: live })).map(
              (sighting) => sighting.name,
            ),
          );
    const recorded = statuses.map(({ live: names, ...status }) => ({
      ...status,
      new: names.filter((name) => !known.has(name)).length,
    }));
    this.#sources ??= new RunSourcesRepository(this.#dependencies.entities.db);
    await this.#sources.record(run.id, run.collectionId, recorded);
    for (const status of recorded)
      work.notes.push({
        kind: sourceModuleName(status.source),
        message: `${describeSourceStatus(status)} (asked about ${status.target}).`,
      });
  }

  /** Stages what one module found on a task's entity and adds the follow-up tasks of what is new. */
  async #sightings(
    found: FoundEntity[],
    from: {
      task: TaskRecord;
      payload: DiscoveryPayload;
      parent: EntityRef;
      lineage: Ancestor[];
      taskResult: StagedEntity["taskResult"];
    },
    runContext: RunContext,
    work: StagedWork,
    followUps: TaskSpec[],
  ): Promise<void> {
    const { task, payload, parent, lineage, taskResult } = from;
    const { scope } = runContext;
    // Paced: a zone transfer's answer is tens of thousands of entities, each checked against the scope.
    await eachPaced(found, (emitted) => {
      const seedKind = NAME_KINDS.has(emitted.kind) ? scope.seedKindOf(emitted.name) : undefined;
      const entity = seedKind ? { ...emitted, kind: seedKind } : emitted;
      const self = sameRef(entity, parent);
      const closer =
        self ||
        PARTS.has(`${parent.kind}>${entity.kind}`) ||
        (entity.aliases ?? []).some((a) => sameRef(a, parent));
      const depth = closer ? task.depth : task.depth + 1;
      const scoped = NAME_KINDS.has(entity.kind) ? scope.coversName(entity.name) : true;
      const ancestors = self ? payload.ancestors : lineage;
      work.entities.push({
        kind: entity.kind,
        name: entity.name,
        details: entity.details ?? {},
        scoped,
        hidden: entity.hidden ?? false,
        depth,
        aliases: entity.aliases ?? [],
        ancestors,
        taskResult,
      });
      if (!self && scoped) followUps.push(...this.#tasksFor(entity, depth, ancestors, runContext));
    });
  }

  async finish(run: RunInfo): Promise<void> {
    const { entities, config } = this.#dependencies;
    const { description } = await this.#run(run);
    // Its third parties are judged by the run's own scope (its seeds as it started), kept with the run.
    const request: RunResultsRequest = {
      runId: run.id,
      collectionId: run.collectionId,
      seeds: description.seeds,
      scanAllow: description.scanAllow,
      scanDeny: description.scanDeny,
    };
    const onThread = (run.tasks ?? 0) >= (this.#dependencies.finishThreadFrom ?? FINISH_THREAD_FROM);
    // Forgotten first: before a save on a thread of its own, the discovery thread may end and give its
    // memory back.
    this.#runner.forget(run.id, { release: onThread });
    if (onThread) await saveRunResultsOnThread(entities.db, request, config.databaseUrl);
    else await saveRunResultsHere(entities.db, request);
    this.#runs.delete(run.id);
  }

  /** The tasks of the modules consuming the entity's kind, unless the name may not be explored or depth is spent. */
  #tasksFor(entity: FoundEntity, depth: number, ancestors: Ancestor[], run: RunContext): TaskSpec[] {
    if (NAME_KINDS.has(entity.kind) && !run.scope.mayExploreName(entity.name)) return [];
    const modules = this.#modules.filter(
      (module) => module.consumes.includes(entity.kind) && !run.modulesOff.has(module.name),
    );
    return this.#tasks(modules, entity, depth, ancestors, run.depth);
  }

  /**
   * A task per module that wants the entity (its key `module:work`), except that on the kinds of
   * SHARED_TASK_KINDS the modules with the default work key share one (`a+b:Kind:name`).
   */
  #tasks(
    modules: readonly DiscoveryModule[],
    entity: FoundEntity,
    depth: number,
    ancestors: Ancestor[],
    maxDepth: number,
  ): TaskSpec[] {
    if (depth >= maxDepth) return [];
    const payload: DiscoveryPayload = {
      entity: { kind: entity.kind, name: entity.name, details: entity.details ?? {} },
      ancestors,
    };
    const wanting = modules.filter((module) => !module.wants || module.wants(payload.entity));
    const shared = SHARED_TASK_KINDS.has(entity.kind) ? wanting.filter((module) => !module.workKey) : [];
    const together = shared.length > 1 ? shared : [];
    const tasks: TaskSpec[] = wanting
      .filter((module) => !together.includes(module))
      .map((module) => {
        const work = module.workKey?.(payload.entity) ?? `${entity.kind}:${entity.name}`;
        return { key: `${module.name}:${work}`, kind: module.name, payload, depth };
      });
    if (together.length > 0) {
      const kind = together.map((module) => module.name).join(MODULE_JOIN);
      tasks.push({ key: `${kind}:${entity.kind}:${entity.name}`, kind, payload, depth });
    }
    return tasks;
  }

  /**
   * What of a task's sightings may pair as a virtual host: names newly seen resolving to an address, and
   * services newly seen (by their address); undefined when nothing may, or no module consumes the pairs.
   */
  async #virtualHostCandidates(
    staged: StagedEntity[],
    context: RunContext,
  ): Promise<VirtualHostCandidates | undefined> {
    const { scope } = context;
    const modules = this.#modules.filter((module) => module.virtualHosts);
    if (modules.length === 0) return undefined;
    const newNames = new Map<string, Set<string>>();
    const newServices = new Map<string, StagedEntity[]>();
    await eachPaced(staged, (entity) => {
      if (entity.kind === "IpAddress") {
        const names = strings(entity.details.resolutions).filter((name) => virtualHostName(name, scope));
        if (names.length > 0)
          newNames.set(entity.name, new Set([...(newNames.get(entity.name) ?? []), ...names]));
      } else if (entity.kind === "NetworkService" && entity.scoped) {
        const address = serviceAddress(entity);
        if (address) newServices.set(address, [...(newServices.get(address) ?? []), entity]);
      }
    });
    if (newNames.size === 0 && newServices.size === 0) return undefined;
    return { modules, newNames, newServices };
  }

  /**
   * Virtual-host tasks for what this task staged: names newly seen resolving to an address, paired with
   * the services the run knows on it, and services newly seen, paired with the names known to resolve
   * to their address. The task's rows are committed before the lookups (a task with candidates stages on
   * its own, before its completion), so of two tasks finishing at once the later one sees the other's
   * rows: no pair is missed, and a pair made twice is one task key.
   */
  async #virtualHostTasks(
    run: RunInfo,
    candidates: VirtualHostCandidates,
    context: RunContext,
  ): Promise<TaskSpec[]> {
    const { scope } = context;
    const { modules, newNames, newServices } = candidates;
    const { entities } = this.#dependencies;
    const knownServices = await entities.staged(run.id, ["NetworkService"], {
      prefixes: [...newNames.keys()].map(servicePrefix),
    });
    const knownNames = await entities.staged(run.id, ["IpAddress"], { names: [...newServices.keys()] });

    const pairs: Array<{ service: StagedSighting | StagedEntity; address: string; name: string }> = [];
    for (const service of knownServices) {
      const address = serviceAddress(service);
      if (!address || !service.scoped) continue;
      for (const name of newNames.get(address) ?? []) pairs.push({ service, address, name });
    }
    for (const { name: address, details } of knownNames) {
      const names = strings(details.resolutions).filter((name) => virtualHostName(name, scope));
      for (const service of newServices.get(address) ?? [])
        for (const name of names) pairs.push({ service, address, name });
    }
    if (pairs.length === 0) return [];
    // An application is reached from its name: the name's own provenance, then the address it resolves to.
    const provenance = new Map<string, StagedSighting>();
    for (const sighting of await entities.staged(run.id, [...NAME_KINDS], {
      names: [...new Set(pairs.map((pair) => pair.name))],
    })) {
      const known = provenance.get(sighting.name);
      if (!known || sighting.depth < known.depth) provenance.set(sighting.name, sighting);
    }
    return pairs.flatMap(({ service, address, name }) => {
      const entity: FoundEntity = {
        kind: "NetworkService",
        name: service.name,
        details: { ...service.details, hostname: name },
      };
      const via = provenance.get(name);
      const ancestors = via
        ? [
            ...via.ancestors,
            { name, type: entityTypeName(via.kind as EntityKind) },
            { name: address, type: entityTypeName("IpAddress") },
          ]
        : service.ancestors;
      return this.#tasks(
        modules.filter(
          (module) => module.consumes.includes("NetworkService") && !context.modulesOff.has(module.name),
        ),
        entity,
        service.depth,
        ancestors,
        context.depth,
      );
    });
  }

  /** The run's scope (its seeds and scan lists) and settings, as fixed when the run was created. */
  #run(run: RunInfo): Promise<RunContext> {
    let context = this.#runs.get(run.id);
    if (!context) {
      // A setting a run does not carry (it was created by an older version) is this process's own.
      this.#ownSettings ??= runSettingsFrom(this.#dependencies.config);
      const stored: RunSettings = { ...this.#ownSettings, ...run.settings };
      const settings = discoverySettings(
        stored,
        this.#dependencies.config.probeEngine,
        this.#dependencies.config,
      );
      // The engine's own modules decide which tasks to make (`wants`): they get ready for the run here
      // even when they run elsewhere (a discovery thread has copies of its own).
      for (const module of this.#modules) module.runStarting?.(settings);
      const { scanAllow, scanDeny } = stored;
      context = this.#dependencies.collections.seeds(run.collectionId).then((seeds) => ({
        scope: new Scope(seeds, { scanAllow, scanDeny }),
        description: { id: run.id, settings, seeds, scanAllow, scanDeny },
        depth: stored.depth,
        maxBlockAddresses: stored.maxBlockAddresses,
        modulesOff: modulesSwitchedOff(stored),
      }));
      // Runs that fail never reach finish; keep the cache small.
      setBounded(this.#runs, run.id, context, 64);
    }
    return context;
  }
}

/** A name to probe as a virtual host: explorable, and not a wildcard owner ("*.wild.test"). */
const virtualHostName = (name: string, scope: Scope) =>
  !name.startsWith("*.") && scope.coversName(name) && scope.mayExploreName(name);

/** The address of a service, from its details or its name ("1.2.3.4:80/tcp"). */
const serviceAddress = (service: { name: string; details: Record<string, unknown> }) =>
  serviceEndpoint(service)?.address;

/** A seed's sighting: in scope, at depth 0. */
const seedSighting = (entity: FoundEntity): StagedEntity => ({
  kind: entity.kind,
  name: entity.name,
  details: { ...entity.details, seed: true },
  scoped: true,
  hidden: false,
  depth: 0,
  aliases: [],
  ancestors: [],
});

const blockSliceTask = (block: string, start: number): TaskSpec => ({
  key: `${BLOCK_SLICE_TASK}:${block}:${start}`,
  kind: BLOCK_SLICE_TASK,
  payload: { block, start } satisfies BlockSlicePayload,
  depth: 0,
});

/**
 * The entities a seed stands for: itself, a URI's host, a small block's addresses; `large` when the
 * seed is an IPv4 block to expand a slice at a time.
 */
function seedEntities(
  seed: Seed,
  notes: string[],
  maxBlock: number,
): { found: FoundEntity[]; large?: boolean } {
  const entity: FoundEntity = { kind: SEED_KIND[seed.type], name: seed.name };
  if (seed.type === "Uri") {
    const host = new URL(seed.name).hostname.replace(/^\[|\]$/g, "");
    const isAddress = /^[\d.]+$/.test(host) || host.includes(":");
    return { found: [entity, { kind: isAddress ? "IpAddress" : "DnsRecord", name: host }] };
  }
  if (seed.type === "NetBlock") {
    const size = blockSize(seed.name);
    if (size <= BLOCK_SLICE) return { found: [entity, ...blockSlice(seed.name, 0, size).map(address)] };
    // IPv6 blocks are not walked: even a /64 holds 2^64 addresses, almost all unused; hosts there are
    // found by their names (records, certificates, reverse zones), not by trying every address.
    if (seed.name.includes(":")) {
      notes.push(
        `NetBlock ${seed.name} is an IPv6 block larger than ${BLOCK_SLICE} addresses; it is recorded but not scanned address by address (IPv6 hosts are found by name). Seed its hosts' names or addresses to scan them.`,
      );
      return { found: [entity] };
    }
    if (size > maxBlock) {
      notes.push(
        `NetBlock ${seed.name} holds more than ${maxBlock} addresses (SIGHTLINE_MAX_BLOCK_ADDRESSES); it is recorded but its addresses are not scanned. Seed smaller blocks to scan them.`,
      );
      return { found: [entity] };
    }
    return { found: [entity], large: true };
  }
  return { found: [entity] };
}

const address = (name: string): FoundEntity => ({ kind: "IpAddress", name });
