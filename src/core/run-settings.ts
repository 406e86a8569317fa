/**
 * The discovery settings of one run: which resolvers it asks, what it may touch, which ports and names it
 * tries, how deep it goes, how hard it pushes and how much it reads. They are taken from the
 * configuration of the process that creates the run, stored with the run, and carried to every task,
 * so every worker — embedded or `sightline worker` anywhere — discovers with the same settings. A
 * worker's own environment only says how it connects (database, Redis) and how much it runs at once.
 */
import { readFileSync } from "node:fs";
import type { Config } from "./config.ts";
import type { ScanProfile } from "./scan-profile.ts";
import { chooseSources, sourceKeyKey } from "./sources.ts";

/** The configuration keys a run fixes when it is created. */
export const RUN_SETTING_KEYS = [
  "dnsServers",
  "scanAllow",
  "scanDeny",
  "ports",
  "dnsWordlist",
  "depth",
  "concurrency",
  "perHostConcurrency",
  "rateLimit",
  "timeoutMs",
  "httpMaxBodyBytes",
  "httpMaxHeaderBytes",
  "httpMaxRedirects",
  "bannerMaxBytes",
  "bannerTimeoutMs",
  "hostDiscovery",
  "udp",
  "exposureChecks",
  "hostDiscoveryTimeoutMs",
  "hostDiscoveryMinTimeoutMs",
  "dnsMaxRecords",
  "dnsMaxTxtLength",
  "axfrMaxRecords",
  "tlsMaxNames",
  "maxBlockAddresses",
  "templates",
  "templateLibrary",
  "templateTags",
  "templateSeverities",
  "templateAllow",
  "sources",
  "permutations",
  "sourceMaxBytes",
  "sourceTimeoutMs",
  "sourceRetries",
  "sourceMaxNames",
] as const satisfies readonly (keyof Config)[];

export type RunSettings = Pick<Config, (typeof RUN_SETTING_KEYS)[number]> & {
  /**
   * The lines of a wordlist file (`dnsWordlist` naming a file rather than `small` or `large`), read when
   * the run is created: a worker on another machine may not have the file, or another one under its name.
   */
  dnsWordlistLines?: string[];
  /** Why each passive source the run does not ask is not asked (no key, not chosen). */
  sourcesSkipped?: Record<string, string>;
  /** The words of a permutation word file (`permutationWords`), read when the run is created. */
  permutationWordLines?: string[];
  /** The collection's scan profile the run applied (its preset and every field it set), if it had one. */
  profile?: ScanProfile;
};

/** Shipped wordlists and `off`; anything else names a file. */
const NAMED_WORDLISTS = new Set(["small", "large", "off"]);

/** Largest wordlist file carried with a run (its lines travel in the run's row). */
export const MAX_WORDLIST_FILE_BYTES = 4 * 1024 * 1024;

/** The settings a run created now by a process with `config` uses. */
export function runSettingsFrom(config: Config): RunSettings {
  const settings: RunSettings = Object.fromEntries(
    RUN_SETTING_KEYS.map((key) => [key, structuredClone(config[key])]),
  ) as Pick<Config, (typeof RUN_SETTING_KEYS)[number]>;
  if (!NAMED_WORDLISTS.has(config.dnsWordlist)) {
    const text = readFileSync(config.dnsWordlist, "utf8");
    if (Buffer.byteLength(text) > MAX_WORDLIST_FILE_BYTES)
      throw new Error(
        `SIGHTLINE_DNS_WORDLIST "${config.dnsWordlist}" is larger than ${MAX_WORDLIST_FILE_BYTES / 1024 / 1024} MB; use a smaller list.`,
      );
    settings.dnsWordlistLines = text.split(/\r?\n/).filter((line) => line.trim() !== "");
  }
  // The choice is fixed with the run; the keys it depends on stay the server's and are not stored.
  const { chosen, skipped } = chooseSources(config.sources, (id) => config[sourceKeyKey(id)] !== "");
  settings.sources = chosen;
  settings.sourcesSkipped = skipped;
  if (config.permutationWords) {
    const text = readFileSync(config.permutationWords, "utf8");
    if (Buffer.byteLength(text) > MAX_WORDLIST_FILE_BYTES)
      throw new Error(
        `SIGHTLINE_PERMUTATION_WORDS "${config.permutationWords}" is larger than ${MAX_WORDLIST_FILE_BYTES / 1024 / 1024} MB; use a smaller list.`,
      );
    settings.permutationWordLines = text
      .split(/\r?\n/)
      .map((line) => line.trim().toLowerCase())
      .filter((line) => line !== "");
  }
  return settings;
}

/** The settings as the API shows them (snake_case; a wordlist file's lines counted, not listed). */
export function describeRunSettings(settings: RunSettings) {
  return {
    dns_servers: settings.dnsServers,
    scan_allow: settings.scanAllow,
    scan_deny: settings.scanDeny,
    ports: settings.ports,
    dns_wordlist: settings.dnsWordlist,
    dns_wordlist_lines: settings.dnsWordlistLines?.length ?? null,
    depth: settings.depth,
    concurrency: settings.concurrency,
    per_host_concurrency: settings.perHostConcurrency,
    rate_limit: settings.rateLimit,
    timeout_ms: settings.timeoutMs,
    http_max_body_bytes: settings.httpMaxBodyBytes,
    http_max_header_bytes: settings.httpMaxHeaderBytes,
    http_max_redirects: settings.httpMaxRedirects,
    banner_max_bytes: settings.bannerMaxBytes,
    banner_timeout_ms: settings.bannerTimeoutMs,
    host_discovery: settings.hostDiscovery,
    udp: settings.udp ?? "on",
    exposure_checks: settings.exposureChecks ?? "on",
    host_discovery_timeout_ms: settings.hostDiscoveryTimeoutMs,
    host_discovery_min_timeout_ms: settings.hostDiscoveryMinTimeoutMs,
    dns_max_records: settings.dnsMaxRecords,
    dns_max_txt_length: settings.dnsMaxTxtLength,
    axfr_max_records: settings.axfrMaxRecords,
    tls_max_names: settings.tlsMaxNames,
    max_block_addresses: settings.maxBlockAddresses,
    templates: settings.templates,
    template_library: settings.templateLibrary,
    template_tags: settings.templateTags,
    template_severities: settings.templateSeverities,
    template_allow: settings.templateAllow,
    sources: settings.sources,
    permutations: settings.permutations,
    permutation_words: settings.permutationWordLines?.length ?? null,
    source_max_bytes: settings.sourceMaxBytes,
    source_timeout_ms: settings.sourceTimeoutMs,
    source_retries: settings.sourceRetries,
    source_max_names: settings.sourceMaxNames,
    ...(settings.profile ? { profile: settings.profile } : {}),
  };
}
