/**
 * One typed configuration: defaults, then `sightline.config.json` (optional, in the working directory or
 * at SIGHTLINE_CONFIG), then the environment. Checked once at start; every problem is a sentence. The
 * settings themselves are declared once, in config-schema.ts.
 */

import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import ipaddr from "ipaddr.js";
import { CONFIG_SCHEMA, type Config, type SettingSchema } from "./config-schema.ts";
import { SOURCE_IDS } from "./sources.ts";

export type { Config } from "./config-schema.ts";

const SETTINGS = CONFIG_SCHEMA.properties as unknown as Record<keyof Config, SettingSchema>;

/** Every setting's default, from the schema. */
export const DEFAULTS: Config = Object.fromEntries(
  Object.entries(SETTINGS).map(([key, schema]) => [key, schema.default]),
) as Config;

/** Environment variable → configuration key, from the schema. */
export const ENVIRONMENT: Record<string, keyof Config> = Object.fromEntries(
  Object.entries(SETTINGS).map(([key, schema]) => [schema.env, key as keyof Config]),
);

export class ConfigError extends Error {}

function isAddressOrCidr(value: string): boolean {
  if (ipaddr.isValid(value)) return true;
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return false;
  }
}

/** The named checks of list items (SettingMeta.itemCheck). */
const ITEM_CHECKS: Record<NonNullable<SettingSchema["itemCheck"]>["name"], (value: string) => boolean> = {
  "address-or-cidr": isAddressOrCidr,
  "address-cidr-or-name": (value) => isAddressOrCidr(value) || /^[a-z0-9.-]+$/i.test(value),
  resolver: (value) => /^(\[[0-9a-f:.]+\]|[0-9.]+)(:\d{1,5})?$/i.test(value),
  "template-severity": (value) => ["critical", "high", "medium", "low", "info"].includes(value.toLowerCase()),
  "intrusive-tag": (value) => ["intrusive", "dos", "fuzz", "bruteforce"].includes(value.toLowerCase()),
};

function coerce(key: keyof Config, raw: unknown, source: string): unknown {
  const schema = SETTINGS[key];
  if (schema.type === "array") {
    if (Array.isArray(raw)) return raw.map(String);
    if (typeof raw === "string")
      return raw
        .split(",")
        .map((part) => part.trim())
        .filter(Boolean);
    throw new ConfigError(`${source} must be a list (comma-separated in the environment)`);
  }
  if (schema.type === "integer") {
    const value = typeof raw === "number" ? raw : Number(String(raw).trim());
    if (!Number.isInteger(value) || value < 0)
      throw new ConfigError(`${source} must be a whole number ≥ 0, not "${raw}"`);
    return value;
  }
  if (typeof raw !== "string") throw new ConfigError(`${source} must be a string`);
  return raw;
}

/** The sentence that refuses one setting's value, or undefined when the schema accepts it. */
function refusal(key: keyof Config, value: unknown): string | undefined {
  const schema = SETTINGS[key];
  const name = schema.env;
  if (schema.type === "integer") {
    const number = value as number;
    const { minimum = 0, maximum } = schema as { minimum?: number; maximum?: number };
    const unit = schema.unit ? ` ${schema.unit}` : "";
    if (maximum !== undefined && (number < minimum || number > maximum))
      return `${name} must be ${minimum}–${maximum}${unit}, not ${number}`;
    if (number < minimum) return `${name} must be at least ${minimum}${unit}, not ${number}`;
    return undefined;
  }
  if (schema.type === "array") {
    const check = schema.itemCheck;
    const bad = check && (value as string[]).find((item) => !ITEM_CHECKS[check.name](item));
    return bad === undefined || !check ? undefined : `${name} entry "${bad}" must be ${check.meaning}`;
  }
  const options = (schema as { anyOf?: Array<{ const: string }> }).anyOf?.map((option) => option.const);
  if (options && !options.includes(value as string))
    return `${name} must be one of ${options.join(", ")}, not "${value}"`;
  const pattern = (schema as { pattern?: string }).pattern;
  if (pattern && !new RegExp(pattern).test(value as string))
    return `${name} must ${schema.patternMeaning ?? `match ${pattern}`}${schema.secret ? "" : `, not "${value}"`}`;
  return undefined;
}

/** What the schema cannot say: settings that depend on the file system or on each other. */
function checkTogether(config: Config): void {
  if (config.dnsWordlist !== "small" && config.dnsWordlist !== "large" && !existsSync(config.dnsWordlist))
    throw new ConfigError(
      `SIGHTLINE_DNS_WORDLIST must be small, large or a readable file, and "${config.dnsWordlist}" is none of them`,
    );
  for (const directory of config.templates)
    if (!existsSync(directory))
      throw new ConfigError(`SIGHTLINE_TEMPLATES entry "${directory}" is not a directory that can be read`);
  const unknownSources = config.sources.filter(
    (id) => id !== "none" && !(SOURCE_IDS as readonly string[]).includes(id),
  );
  if (unknownSources.length > 0)
    throw new ConfigError(
      `SIGHTLINE_SOURCES names unknown sources (${unknownSources.join(", ")}); known: none, ${SOURCE_IDS.join(", ")}`,
    );
  if (Boolean(config.bootstrapAccessKey) !== Boolean(config.bootstrapSecretKey))
    throw new ConfigError(
      "set both SIGHTLINE_BOOTSTRAP_ACCESS_KEY and SIGHTLINE_BOOTSTRAP_SECRET_KEY, or neither",
    );
  if (config.bootstrapSecretKey && config.bootstrapSecretKey.length < MIN_BOOTSTRAP_SECRET_LENGTH)
    throw new ConfigError(
      `SIGHTLINE_BOOTSTRAP_SECRET_KEY must be at least ${MIN_BOOTSTRAP_SECRET_LENGTH} characters long (it has ${config.bootstrapSecretKey.length}); generate one with: openssl rand -base64 32`,
    );
}

/** The shortest bootstrap secret accepted: a secret a person chose must not be guessable. */
export const MIN_BOOTSTRAP_SECRET_LENGTH = 32;

function check(config: Config): void {
  for (const key of Object.keys(SETTINGS) as Array<keyof Config>) {
    const sentence = refusal(key, config[key]);
    if (sentence) throw new ConfigError(sentence);
  }
  checkTogether(config);
}

/** Builds the configuration from defaults, the optional file, the environment and explicit overrides. */
export function loadConfig(
  environment: NodeJS.ProcessEnv = process.env,
  overrides: Partial<Config> = {},
): Config {
  const config: Record<string, unknown> = { ...DEFAULTS };
  const file = resolve(environment.SIGHTLINE_CONFIG ?? "sightline.config.json");
  if (existsSync(file)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, "utf8"));
    } catch (error) {
      throw new ConfigError(`${file} is not valid JSON: ${(error as Error).message}`);
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw new ConfigError(`${file} must hold a JSON object`);
    for (const [key, value] of Object.entries(parsed)) {
      if (!(key in DEFAULTS))
        throw new ConfigError(
          `${file} has unknown setting "${key}"; known: ${Object.keys(DEFAULTS).join(", ")}`,
        );
      config[key] = coerce(key as keyof Config, value, `${file}: ${key}`);
    }
  }
  for (const [variable, key] of Object.entries(ENVIRONMENT)) {
    const value = environment[variable];
    if (value !== undefined && value !== "") config[key] = coerce(key, value, variable);
  }
  Object.assign(config, overrides);
  check(config as unknown as Config);
  return config as unknown as Config;
}

/** docs/configuration.md, made from the schema (`npm run docs:config` writes it; a test checks it is current). */
export function configurationDocument(): string {
  const cell = (text: string) => text.replaceAll("|", "\\|");
  const shown = (schema: SettingSchema) => {
    if (
      schema.secret ||
      schema.default === "" ||
      (Array.isArray(schema.default) && schema.default.length === 0)
    )
      return "—";
    return `\`${Array.isArray(schema.default) ? schema.default.join(",") : String(schema.default)}\``;
  };
  const rows = Object.entries(SETTINGS).map(
    ([key, schema]) => `| \`${schema.env}\` | \`${key}\` | ${shown(schema)} | ${cell(schema.description)} |`,
  );
  return [
    "# Configuration",
    "",
    "<!-- Made by `npm run docs:config` from src/core/config-schema.ts; do not edit by hand. -->",
    "",
    "Defaults, then `sightline.config.json` in the working directory (or the file named by `SIGHTLINE_CONFIG`;",
    "keys as in the second column), then the environment. Everything is checked at start: a bad value stops",
    "the process with a sentence naming the variable. Lists are comma-separated in the environment and JSON",
    "arrays in the file.",
    "",
    "| variable | file key | default | meaning |",
    "|---|---|---|---|",
    ...rows,
    "",
  ].join("\n");
}
