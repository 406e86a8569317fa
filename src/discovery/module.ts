/**
 * What a discovery capability is (after BBOT and Intrigue Core): a module that consumes entities of
 * some kinds and produces new entities, details and issues. Modules never schedule each other; the
 * engine (src/discovery/engine.ts) owns queues, scope, depth and de-duplication.
 */
import type { Config } from "../core/config.ts";
import type { EntityKind, FoundEntity, FoundIssue } from "../core/entities.ts";
import type { SourceStatus } from "../core/sources.ts";
import type { Throttle } from "./net/throttle.ts";
import type { TemplateSettings } from "./templates/library.ts";

export interface DiscoveryContext {
  /** The run's abort signal (cancel, time limit, shutdown). Every network operation honours it. */
  signal: AbortSignal;
  /** The run's id (what a module keeps per run, such as a budget, is keyed by it). */
  runId?: number;
  /** Distance of the entity from the seeds: 0 for a seed. */
  depth: number;
  /** The politeness limits (global and per-host concurrency, rate) of the run's settings, shared by the runs of this process with the same limits; wrap every network operation. */
  throttle: Throttle;
  /** The run's discovery settings (resolvers, ports, limits, timeouts), fixed when it was created. */
  settings: DiscoverySettings;
  emit(entity: FoundEntity): void;
  raise(issue: FoundIssue): void;
  /** A note on the run (a seed that did not resolve, a name server that timed out). */
  note(message: string): void;
  /**
   * May this address be connected to, or this host name be sent a request (deny and allow lists)? Every
   * spelling of an address counts as the address it reaches (IPv4-mapped, NAT64).
   */
  mayTouch(address: string): boolean;
  /** Whether a name lies in the collection's scope (what the engine will mark scoped). */
  covers?(name: string): boolean;
  /** How a passive source fared on this entity, for the run's per-source status. */
  reportSource?(status: TargetSourceStatus): void;
}

/** A source's status for one entity it was asked about, with the live names it gave (for `new`). */
export interface TargetSourceStatus extends SourceStatus {
  target: string;
  live: string[];
}

/**
 * How this process reaches the passive sources: which run (the run's choice), their base URLs and keys
 * (this process's settings: keys never travel with a run nor reach its stored settings), and bounds.
 */
export interface SourceAccess {
  chosen: string[];
  urls: Record<string, string>;
  keys: Record<string, string>;
  timeoutMs: number;
  maxBytes: number;
  retries: number;
  maxNames: number;
  /** Requests per minute to every source; 0: each source's published limit. */
  requestsPerMinute: number;
}

export interface DiscoverySettings {
  dnsServers: string[];
  ports: number[];
  /** `small`, `large` or a path: the subdomain brute-force wordlist. */
  wordlist: string;
  /** A wordlist file's lines as read when the run was created (the path may not exist on this worker). */
  wordlistLines?: string[];
  timeoutMs: number;
  concurrency: number;
  perHostConcurrency: number;
  rateLimit: number;
  /** The port scan's probes: `auto` (native when built, the default) or `js` (SIGHTLINE_PROBE_ENGINE). */
  probeEngine?: string;
  limits: DiscoveryLimits;
  /**
   * Probe an address's most common ports first and leave it if none answers (SIGHTLINE_HOST_DISCOVERY);
   * default on.
   */
  hostDiscovery?: boolean;
  /** How long host discovery waits for each of its ports (SIGHTLINE_HOST_DISCOVERY_TIMEOUT_MS); default the timeout. */
  hostDiscoveryTimeoutMs?: number;
  /**
   * The shortest wait host discovery learns from a network's answers (SIGHTLINE_HOST_DISCOVERY_MIN_TIMEOUT_MS);
   * without it, the whole of hostDiscoveryTimeoutMs.
   */
  hostDiscoveryMinTimeoutMs?: number;
  /** Which nuclei-format templates run (SIGHTLINE_TEMPLATES and friends); default: the built-in library. */
  templates?: TemplateSettings;
  /** The passive sources (absent: none run). */
  sources?: SourceAccess;
  /** Permuted names resolved per domain (0: none), and the words they join (absent: the shipped ones). */
  permutations?: number;
  permutationWords?: string[];
}

/**
 * Caps that keep a hostile target (an endless body, a gzip bomb, a flood of records or names) from
 * holding a run's memory or time; each is a setting (src/core/config-schema.ts, docs/configuration.md).
 */
export type DiscoveryLimits = Pick<Config, (typeof LIMIT_KEYS)[number]>;

const LIMIT_KEYS = [
  "httpMaxBodyBytes",
  "httpMaxHeaderBytes",
  "httpMaxRedirects",
  "bannerMaxBytes",
  "bannerTimeoutMs",
  "dnsMaxRecords",
  "dnsMaxTxtLength",
  "axfrMaxRecords",
  "tlsMaxNames",
] as const;

export function discoveryLimits(config: DiscoveryLimits): DiscoveryLimits {
  return Object.fromEntries(LIMIT_KEYS.map((key) => [key, config[key]])) as DiscoveryLimits;
}

export interface DiscoveryModule {
  name: string;
  consumes: EntityKind[];
  produces: EntityKind[];
  /**
   * Name-based virtual hosts answer differently per name, so such a module runs on a NetworkService once
   * for its address and once for every name that resolves to that address: the engine pairs names and
   * services as either becomes known, and hands the module the service with `details.hostname` set.
   */
  virtualHosts?: boolean;
  /**
   * Its tasks mostly wait on the network, whatever the target: a port scan or UDP pass of an address
   * that never answers waits out its timeout while computing nothing. The embedded queue runs such tasks
   * beside its task slots (the throttle still bounds their connections), so a block of mostly unused
   * addresses does not hold every slot.
   */
  waits?: boolean;
  /** Whether there is work for this entity at all (web probing: web services only); default yes. */
  wants?(entity: FoundEntity): boolean;
  /**
   * What identifies one unit of this module's work (default `<Kind>:<name>`): the engine runs one task
   * per key and run, so two entities that lead to the same work (a service and a URI of the same
   * host and port) lead to one task. A module without one shares its task with the other modules of an
   * address or a service (SHARED_TASK_KINDS in engine.ts).
   */
  workKey?(entity: FoundEntity): string;
  run(entity: FoundEntity, context: DiscoveryContext): Promise<void>;
  /**
   * Called once per run in each process that works on it, when its first task there starts: to get
   * ready (start threads, load data `wants` needs) while the run's first tasks go on. The engine calls it
   * on its own copies, and the thread that runs modules on its copies.
   */
  runStarting?(settings: DiscoverySettings): void;
}
