/**
 * The discovery settings of one run: which resolvers it asks, what it may touch, which ports and names it
 * tries, how deep it goes, how hard it pushes and how much it reads. They are taken from the
 * configuration of the process that creates the run, stored with the run, and carried to every task,
 * so every worker — embedded or `sightline worker` anywhere — discovers with the same settings. A
 * worker's own environment only says how it connects (database, Redis) and how much it runs at once.
 */
import { readFileSync } from "node:fs";
import type { Config } from "./config.ts";
import { resolveProfile, type ScanProfile } from "./scan-profile.ts";
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

export type RunSettingKey = (typeof RUN_SETTING_KEYS)[number];

export type RunSettings = Pick<Config, RunSettingKey> & {
  /**
   * The lines of a wordlist file (`dnsWordlist` naming a file rather than `small` or `large`), read when
   * the run is created: a worker on another machine may not have the file, or another one under its name.
   */
  dnsWordlistLines?: string[];
  /** The collection's scan profile the run applied (its preset and every field it set), if it had one. */
  profile?: ScanProfile;
  /** Why each passive source the run does not ask is not asked (no key, not chosen). */
  sourcesSkipped?: Record<string, string>;
  /** The words of a permutation word file (`permutationWords`), read when the run is created. */
  permutationWordLines?: string[];
};

/** Shipped wordlists and `off`; anything else names a file. */
const NAMED_WORDLISTS = new Set(["small", "large", "off"]);

/** Largest wordlist file carried with a run (its lines travel in the run's row). */
export const MAX_WORDLIST_FILE_BYTES = 4 * 1024 * 1024;

/** The settings a run created now by a process with `config` uses. */
export function runSettingsFrom(config: Config): RunSettings {
  const settings: RunSettings = Object.fromEntries(
    RUN_SETTING_KEYS.map((key) => [key, structuredClone(config[key])]),
  ) as Pick<Config, RunSettingKey>;
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

/** A run setting's name on the wire: its configuration key in snake_case (`dnsWordlist` → `dns_wordlist`). */
export const wireName = (key: RunSettingKey) => key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/**
 * The settings as the API shows them: every run setting under its wire name, in RUN_SETTING_KEYS' order
 * (a setting newer than the run is absent), a wordlist file's lines counted after it, not listed, and
 * the profile the run applied.
 */
export function describeRunSettings(settings: RunSettings): Record<string, unknown> {
  const view: Record<string, unknown> = {};
  for (const key of RUN_SETTING_KEYS) {
    if (settings[key] !== undefined) view[wireName(key)] = settings[key];
    if (key === "dnsWordlist") view.dns_wordlist_lines = settings.dnsWordlistLines?.length ?? null;
    if (key === "permutations" && settings.permutations !== undefined)
      view.permutation_words = settings.permutationWordLines?.length ?? null;
  }
  if (settings.profile) view.profile = settings.profile;
  return view;
}

/** The settings of a run of a collection with `profile`, over the server's `settings`. */
export function applyProfile(settings: RunSettings, profile: ScanProfile | null | undefined): RunSettings {
  if (!profile) return settings;
  const fields = resolveProfile(profile);
  const applied: RunSettings = { ...settings, profile: { preset: profile.preset ?? "default", ...fields } };
  if (fields.ports !== undefined) applied.ports = fields.ports;
  if (fields.udp !== undefined) applied.udp = fields.udp ? "on" : "off";
  if (fields.dns_wordlist !== undefined) {
    applied.dnsWordlist = fields.dns_wordlist;
    delete applied.dnsWordlistLines;
  }
  if (fields.depth !== undefined) applied.depth = fields.depth;
  if (fields.rate_limit !== undefined) applied.rateLimit = fields.rate_limit;
  if (fields.exposure_checks !== undefined) applied.exposureChecks = fields.exposure_checks ? "on" : "off";
  if (fields.template_library !== undefined) applied.templateLibrary = fields.template_library ? "on" : "off";
  return applied;
}
