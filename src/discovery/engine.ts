/**
 * The discovery engine: the RunWork a run executes. It turns seeds into the first tasks, runs one module
 * on one entity per task, stages what the module found (with scope and provenance), and answers the
 * follow-up tasks: every module consuming a new entity's kind, if the entity is in scope, may be
 * explored, and lies within the depth limit. The run machinery drops repeated task keys
 * (`module:Kind:name`), so the same work never happens twice in a run. `finish` merges the run's staged
 * findings into the collection's results.
 *
 * Depth counts discovery steps away from the seeds. Looking closer at the same asset is not a step: the
 * addresses a name resolves to, the services of an address, the certificate of a service and the block
 * of an address keep their parent's depth, so a depth limit cuts chains of names, not views of a host.
 */
import type { Counter, MetricsRegistry } from "../api/metrics.ts";
import type { Config } from "../config.ts";
import { setBounded } from "../core/bounded-map.ts";
import { strings } from "../core/details.ts";
import { entityTypeName } from "../core/formats.ts";
import type { Seed } from "../core/seeds.ts";
import type { RunInfo, RunWork, TaskRecord, TaskSpec } from "../runs/work.ts";
import type { CollectionsRepository } from "../store/collections.ts";
import {
  type Ancestor,
  type EntitiesRepository,
  mergeDetails,
  type StagedEntity,
  type StagedSighting,
  type StagedWork,
} from "../store/entities.ts";
import { blockAddresses } from "./addresses.ts";
import {
  type DiscoveryContext,
  type DiscoveryModule,
  type DiscoverySettings,
  discoveryLimits,
  type EntityKind,
  type EntityRef,
  type FoundEntity,
} from "./module.ts";
import { MODULES } from "./modules.ts";
import { parsePortSpec } from "./port-lists.ts";
import { parseServiceName, servicePrefix } from "./ports.ts";
import { NAME_KINDS, Scope } from "./scope.ts";
import { Throttle } from "./throttle.ts";

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

/** Largest seed block expanded into addresses: 4,096 addresses (a /20 of IPv4). */
const MAX_BLOCK_ADDRESSES = 4096;

const SEED_KIND: Record<Seed["type"], EntityKind> = {
  Domain: "Domain",
  DnsRecord: "DnsRecord",
  Nameserver: "Nameserver",
  IpAddress: "IpAddress",
  NetBlock: "NetBlock",
  Uri: "Uri",
};

export function discoverySettings(config: Config): DiscoverySettings {
  return {
    dnsServers: config.dnsServers,
    ports: parsePortSpec(config.ports),
    wordlist: config.dnsWordlist,
    timeoutMs: config.timeoutMs,
    concurrency: config.concurrency,
    perHostConcurrency: config.perHostConcurrency,
    rateLimit: config.rateLimit,
    probeEngine: config.probeEngine,
    limits: discoveryLimits(config),
  };
}

export interface EngineDependencies {
  config: Config;
  collections: CollectionsRepository;
  entities: EntitiesRepository;
  /** Default: every registered module (src/discovery/modules.ts). */
  modules?: readonly DiscoveryModule[];
}

const sameRef = (a: EntityRef, b: EntityRef) => a.kind === b.kind && a.name === b.name;

export class DiscoveryEngine implements RunWork {
  readonly #dependencies: EngineDependencies;
  readonly #modules: readonly DiscoveryModule[];
  readonly #byName: Map<string, DiscoveryModule>;
  readonly #settings: DiscoverySettings;
  readonly #throttle: Throttle;
  #errors: Counter = { inc() {} };
  /** Scope per run, from the collection's seeds, built once per run and process. */
  readonly #scopes = new Map<number, Promise<Scope>>();

  constructor(dependencies: EngineDependencies) {
    this.#dependencies = dependencies;
    this.#modules = dependencies.modules ?? MODULES;
    this.#byName = new Map(this.#modules.map((module) => [module.name, module]));
    this.#settings = discoverySettings(dependencies.config);
    this.#throttle = new Throttle(this.#settings);
  }

  instrument(metrics: MetricsRegistry): void {
    this.#errors = metrics.counter(
      "sightline_discovery_errors_total",
      "Discovery modules that failed on an entity (the run goes on and notes it), by module.",
    );
  }

  async plan(run: RunInfo): Promise<TaskSpec[]> {
    const seeds = await this.#dependencies.collections.seeds(run.collectionId);
    const scope = await this.#scope(run);
    const notes: string[] = [];
    if (seeds.length === 0)
      notes.push(`Collection ${run.collectionName} has no seeds; there was nothing to discover.`);
    const entities: FoundEntity[] = [];
    for (const seed of seeds) entities.push(...seedEntities(seed, notes));
    const staged = entities.map(
      (entity): StagedEntity => ({
        kind: entity.kind,
        name: entity.name,
        details: { ...entity.details, seed: true },
        scoped: true,
        hidden: false,
        depth: 0,
        aliases: [],
        ancestors: [],
      }),
    );
    await this.#dependencies.entities.stage(run.id, run.collectionId, {
      entities: staged,
      findings: [],
      notes,
    });
    return entities.flatMap((entity) => this.#tasksFor(entity, 0, [], scope));
  }

  async execute(task: TaskRecord, run: RunInfo, signal: AbortSignal): Promise<TaskSpec[]> {
    const module = this.#byName.get(task.kind);
    if (!module) throw new Error(`No discovery module named "${task.kind}" (task ${task.key}).`);
    const payload = task.payload as DiscoveryPayload;
    const scope = await this.#scope(run);
    const parent: EntityRef = { kind: payload.entity.kind, name: payload.entity.name };

    const found = new Map<string, FoundEntity>();
    const work: StagedWork = { entities: [], findings: [], notes: [] };
    const context: DiscoveryContext = {
      signal,
      depth: task.depth,
      throttle: this.#throttle,
      settings: this.#settings,
      emit(entity) {
        const key = `${entity.kind}\u0000${entity.name}`;
        const previous = found.get(key);
        found.set(
          key,
          previous
            ? {
                ...previous,
                details: mergeDetails(previous.details ?? {}, entity.details ?? {}),
                aliases: [...(previous.aliases ?? []), ...(entity.aliases ?? [])],
                hidden: (previous.hidden ?? false) && (entity.hidden ?? false),
              }
            : entity,
        );
      },
      raise(issue) {
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
      },
      note(message) {
        work.notes.push(message);
      },
      mayTouch: (address) => scope.mayTouch(address),
    };
    try {
      await module.run(payload.entity, context);
    } catch (error) {
      // One entity a module cannot handle (a malformed certificate, a protocol surprise) must not fail
      // the run: what it found so far is kept and the run says what went wrong.
      if (signal.aborted) return [];
      this.#errors.inc({ module: module.name });
      work.notes.push(`${module.name} failed on ${parent.kind} ${parent.name}: ${(error as Error).message}`);
    }

    const taskResult = {
      name: task.key,
      task: module.name,
      entity_type: entityTypeName(parent.kind),
      entity_name: parent.name,
      depth: task.depth,
    };
    const lineage = [...payload.ancestors, { name: parent.name, type: entityTypeName(parent.kind) }];
    const followUps: TaskSpec[] = [];
    for (const emitted of found.values()) {
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
      if (!self && scoped) followUps.push(...this.#tasksFor(entity, depth, ancestors, scope));
    }
    await this.#dependencies.entities.stage(run.id, run.collectionId, work);
    if (signal.aborted) return [];
    followUps.push(...(await this.#virtualHostTasks(run, work.entities, scope)));
    return followUps;
  }

  async finish(run: RunInfo): Promise<void> {
    await this.#dependencies.entities.finishRun(run.id, run.collectionId);
    this.#scopes.delete(run.id);
  }

  /** A task per module consuming the entity's kind, unless the name may not be explored or depth is spent. */
  #tasksFor(entity: FoundEntity, depth: number, ancestors: Ancestor[], scope: Scope): TaskSpec[] {
    if (NAME_KINDS.has(entity.kind) && !scope.mayExploreName(entity.name)) return [];
    return this.#modules
      .filter((module) => module.consumes.includes(entity.kind))
      .flatMap((module) => this.#task(module, entity, depth, ancestors));
  }

  #task(module: DiscoveryModule, entity: FoundEntity, depth: number, ancestors: Ancestor[]): TaskSpec[] {
    if (depth >= this.#dependencies.config.depth) return [];
    const payload: DiscoveryPayload = {
      entity: { kind: entity.kind, name: entity.name, details: entity.details ?? {} },
      ancestors,
    };
    if (module.wants && !module.wants(payload.entity)) return [];
    const work = module.workKey?.(payload.entity) ?? `${entity.kind}:${entity.name}`;
    return [{ key: `${module.name}:${work}`, kind: module.name, payload, depth }];
  }

  /**
   * Virtual-host tasks for what this task staged: names newly seen resolving to an address, paired with
   * the services the run knows on it, and services newly seen, paired with the names known to resolve
   * to their address. The task's rows are committed before the lookups, so of two tasks finishing at
   * once the later one sees the other's rows: no pair is missed, and a pair made twice is one task key.
   */
  async #virtualHostTasks(run: RunInfo, staged: StagedEntity[], scope: Scope): Promise<TaskSpec[]> {
    const modules = this.#modules.filter((module) => module.virtualHosts);
    if (modules.length === 0) return [];
    const newNames = new Map<string, Set<string>>();
    const newServices = new Map<string, StagedEntity[]>();
    for (const entity of staged) {
      if (entity.kind === "IpAddress") {
        const names = strings(entity.details.resolutions).filter((name) => virtualHostName(name, scope));
        if (names.length > 0)
          newNames.set(entity.name, new Set([...(newNames.get(entity.name) ?? []), ...names]));
      } else if (entity.kind === "NetworkService" && entity.scoped) {
        const address = serviceAddress(entity);
        if (address) newServices.set(address, [...(newServices.get(address) ?? []), entity]);
      }
    }
    if (newNames.size === 0 && newServices.size === 0) return [];
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
      return modules
        .filter((module) => module.consumes.includes("NetworkService"))
        .flatMap((module) => this.#task(module, entity, service.depth, ancestors));
    });
  }

  #scope(run: RunInfo): Promise<Scope> {
    let scope = this.#scopes.get(run.id);
    if (!scope) {
      const { scanAllow, scanDeny } = this.#dependencies.config;
      scope = this.#dependencies.collections
        .seeds(run.collectionId)
        .then((seeds) => new Scope(seeds, { scanAllow, scanDeny }));
      // Runs that fail never reach finish; keep the cache small.
      setBounded(this.#scopes, run.id, scope, 64);
      for (const module of this.#modules) module.runStarting?.(this.#settings);
    }
    return scope;
  }
}

/** A name to probe as a virtual host: explorable, and not a wildcard owner ("*.wild.test"). */
const virtualHostName = (name: string, scope: Scope) =>
  !name.startsWith("*.") && scope.coversName(name) && scope.mayExploreName(name);

/** The address of a service, from its details or its name ("1.2.3.4:80/tcp"). */
const serviceAddress = (service: { name: string; details: Record<string, unknown> }) =>
  typeof service.details.ip_address === "string"
    ? service.details.ip_address
    : parseServiceName(service.name)?.address;

/** The entities a seed stands for: itself, a URI's host, a small block's addresses. */
function seedEntities(seed: Seed, notes: string[]): FoundEntity[] {
  const entity: FoundEntity = { kind: SEED_KIND[seed.type], name: seed.name };
  if (seed.type === "Uri") {
    const host = new URL(seed.name).hostname.replace(/^\[|\]$/g, "");
    const isAddress = /^[\d.]+$/.test(host) || host.includes(":");
    return [entity, { kind: isAddress ? "IpAddress" : "DnsRecord", name: host }];
  }
  if (seed.type === "NetBlock") {
    const addresses = blockAddresses(seed.name, MAX_BLOCK_ADDRESSES);
    if (!addresses) {
      notes.push(
        `NetBlock ${seed.name} holds more than ${MAX_BLOCK_ADDRESSES} addresses; it is recorded but its addresses are not scanned. Seed smaller blocks to scan them.`,
      );
      return [entity];
    }
    return [entity, ...addresses.map((name): FoundEntity => ({ kind: "IpAddress", name }))];
  }
  return [entity];
}
