/**
 * One typed configuration: defaults, then `sightline.config.json` (optional, in the working directory or
 * at SIGHTLINE_CONFIG), then the environment. Checked once at start; every problem is a sentence.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import ipaddr from "ipaddr.js";

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** postgres://… selects PostgreSQL; empty means SQLite in dataDir. */
  databaseUrl: string;
  /** redis://… selects the BullMQ queue; empty means runs execute in-process. */
  redisUrl: string;
  /** Resolvers as host:port; empty means the system's. */
  dnsServers: string[];
  /** CIDRs and names scanning may touch even when denied by default (e.g. 127.0.0.0/8 for the lab). */
  scanAllow: string[];
  /** CIDRs and names never scanned, on top of the built-in deny list. */
  scanDeny: string[];
  /** `top100`, `top1000`, or a comma-separated list of ports and ranges. */
  ports: string;
  /** Subdomain brute-force words: `small` (shipped default), `large` (shipped), or a file with one label a line. */
  dnsWordlist: string;
  depth: number;
  concurrency: number;
  perHostConcurrency: number;
  /** Network operations per second across a run (0 = unlimited). */
  rateLimit: number;
  timeoutMs: number;
  /** Bytes of an HTTP response body kept (after decompression; the rest is not read). */
  httpMaxBodyBytes: number;
  /** Largest HTTP response header section accepted, in bytes. */
  httpMaxHeaderBytes: number;
  /** Redirects followed from one URL. */
  httpMaxRedirects: number;
  /** Bytes of a service's greeting kept by the port scan. */
  bannerMaxBytes: number;
  /** How long the port scan waits for a greeting once connected. */
  bannerTimeoutMs: number;
  /** Port scan probes: `auto` (the native engine when it was built, else JS) or `js`. */
  probeEngine: string;
  /** Records of one type kept per DNS name (addresses, name servers, mail exchangers, TXT, …). */
  dnsMaxRecords: number;
  /** Characters of one TXT record kept. */
  dnsMaxTxtLength: number;
  /** Records read from one zone transfer. */
  axfrMaxRecords: number;
  /** DNS names taken from one certificate (subject and alternative names). */
  tlsMaxNames: number;
  runTimeLimitSeconds: number;
  runConcurrency: number;
  /** Largest accepted request body in bytes. */
  bodyLimit: number;
  /** Failed authentication attempts a client may make per minute before it is answered 429. */
  authFailureLimit: number;
  /** Reverse proxies (addresses or CIDRs) whose X-Forwarded-For names the client; empty trusts none. */
  trustProxy: string[];
  /** When set, GET /metrics asks for `Authorization: Bearer <token>`; empty leaves it open like /healthz. */
  metricsToken: string;
  logLevel: string;
  bootstrapAccessKey: string;
  bootstrapSecretKey: string;
  schedulerIntervalSeconds: number;
  /** Tasks one process executes at once (in-process queue, or each BullMQ worker). */
  taskConcurrency: number;
  /** How often a failing task is tried before its run fails. */
  taskAttempts: number;
  /** BullMQ lock duration and stalled-job check interval: how soon a dead worker's tasks are retried. */
  queueStallSeconds: number;
  /** Namespace of the BullMQ keys in Redis (several installations can share one Redis). */
  redisPrefix: string;
  /** On SIGTERM/SIGINT, how long in-flight tasks may finish before they are handed back. */
  shutdownGraceSeconds: number;
  /** Testing/extension hook: a module exporting `createRunWork(services)` used instead of the built-in work. */
  runWorkModule: string;
  /** CIDRs and names webhook URLs may point at although denied by default (loopback, private, metadata). */
  webhookAllow: string[];
  /** How long one webhook delivery attempt may take. */
  webhookTimeoutMs: number;
  /** Attempts per webhook delivery before it is given up as failed. */
  webhookAttempts: number;
  /** Wait before the first retry of a webhook delivery; each later retry waits twice as long. */
  webhookRetryMs: number;
  /** Bytes of rendered result bodies kept in files under dataDir/result-cache; 0 turns the result cache off. */
  resultCacheBytes: number;
  /** Bytes of small rendered result bodies kept in memory (each at most 1/16 of it); 0 keeps all on disk. */
  resultCacheMemoryBytes: number;
}

export const DEFAULTS: Config = {
  port: 8080,
  host: "0.0.0.0",
  dataDir: "./data",
  databaseUrl: "",
  redisUrl: "",
  dnsServers: [],
  scanAllow: [],
  scanDeny: [],
  ports: "top100",
  dnsWordlist: "small",
  depth: 4,
  concurrency: 200,
  perHostConcurrency: 64,
  rateLimit: 0,
  timeoutMs: 3000,
  httpMaxBodyBytes: 512 * 1024,
  httpMaxHeaderBytes: 64 * 1024,
  httpMaxRedirects: 5,
  bannerMaxBytes: 1024,
  bannerTimeoutMs: 1500,
  probeEngine: "auto",
  dnsMaxRecords: 100,
  dnsMaxTxtLength: 4096,
  axfrMaxRecords: 20_000,
  tlsMaxNames: 500,
  runTimeLimitSeconds: 3600,
  runConcurrency: 2,
  bodyLimit: 1024 * 1024,
  authFailureLimit: 30,
  trustProxy: [],
  metricsToken: "",
  logLevel: "info",
  bootstrapAccessKey: "",
  bootstrapSecretKey: "",
  schedulerIntervalSeconds: 60,
  taskConcurrency: 8,
  taskAttempts: 3,
  queueStallSeconds: 30,
  redisPrefix: "sightline",
  shutdownGraceSeconds: 10,
  runWorkModule: "",
  webhookAllow: [],
  webhookTimeoutMs: 10_000,
  webhookAttempts: 6,
  webhookRetryMs: 30_000,
  resultCacheBytes: 1024 * 1024 * 1024,
  resultCacheMemoryBytes: 64 * 1024 * 1024,
};

/** Environment variable → configuration key. */
export const ENVIRONMENT: Record<string, keyof Config> = {
  PORT: "port",
  HOST: "host",
  SIGHTLINE_DATA_DIR: "dataDir",
  DATABASE_URL: "databaseUrl",
  REDIS_URL: "redisUrl",
  SIGHTLINE_DNS_SERVERS: "dnsServers",
  SIGHTLINE_SCAN_ALLOW: "scanAllow",
  SIGHTLINE_SCAN_DENY: "scanDeny",
  SIGHTLINE_PORTS: "ports",
  SIGHTLINE_DNS_WORDLIST: "dnsWordlist",
  SIGHTLINE_DEPTH: "depth",
  SIGHTLINE_CONCURRENCY: "concurrency",
  SIGHTLINE_PER_HOST_CONCURRENCY: "perHostConcurrency",
  SIGHTLINE_RATE_LIMIT: "rateLimit",
  SIGHTLINE_TIMEOUT_MS: "timeoutMs",
  SIGHTLINE_HTTP_MAX_BODY_BYTES: "httpMaxBodyBytes",
  SIGHTLINE_HTTP_MAX_HEADER_BYTES: "httpMaxHeaderBytes",
  SIGHTLINE_HTTP_MAX_REDIRECTS: "httpMaxRedirects",
  SIGHTLINE_BANNER_MAX_BYTES: "bannerMaxBytes",
  SIGHTLINE_BANNER_TIMEOUT_MS: "bannerTimeoutMs",
  SIGHTLINE_PROBE_ENGINE: "probeEngine",
  SIGHTLINE_DNS_MAX_RECORDS: "dnsMaxRecords",
  SIGHTLINE_DNS_MAX_TXT_LENGTH: "dnsMaxTxtLength",
  SIGHTLINE_AXFR_MAX_RECORDS: "axfrMaxRecords",
  SIGHTLINE_TLS_MAX_NAMES: "tlsMaxNames",
  SIGHTLINE_RUN_TIME_LIMIT: "runTimeLimitSeconds",
  SIGHTLINE_RUN_CONCURRENCY: "runConcurrency",
  SIGHTLINE_BODY_LIMIT: "bodyLimit",
  SIGHTLINE_AUTH_FAILURE_LIMIT: "authFailureLimit",
  SIGHTLINE_TRUST_PROXY: "trustProxy",
  SIGHTLINE_METRICS_TOKEN: "metricsToken",
  LOG_LEVEL: "logLevel",
  SIGHTLINE_BOOTSTRAP_ACCESS_KEY: "bootstrapAccessKey",
  SIGHTLINE_BOOTSTRAP_SECRET_KEY: "bootstrapSecretKey",
  SIGHTLINE_SCHEDULER_INTERVAL: "schedulerIntervalSeconds",
  SIGHTLINE_TASK_CONCURRENCY: "taskConcurrency",
  SIGHTLINE_TASK_ATTEMPTS: "taskAttempts",
  SIGHTLINE_QUEUE_STALL_SECONDS: "queueStallSeconds",
  SIGHTLINE_REDIS_PREFIX: "redisPrefix",
  SIGHTLINE_SHUTDOWN_GRACE: "shutdownGraceSeconds",
  SIGHTLINE_RUN_WORK_MODULE: "runWorkModule",
  SIGHTLINE_WEBHOOK_ALLOW: "webhookAllow",
  SIGHTLINE_WEBHOOK_TIMEOUT_MS: "webhookTimeoutMs",
  SIGHTLINE_WEBHOOK_ATTEMPTS: "webhookAttempts",
  SIGHTLINE_WEBHOOK_RETRY_MS: "webhookRetryMs",
  SIGHTLINE_RESULT_CACHE_BYTES: "resultCacheBytes",
  SIGHTLINE_RESULT_CACHE_MEMORY_BYTES: "resultCacheMemoryBytes",
};

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

function coerce(key: keyof Config, raw: unknown, source: string): unknown {
  const expected = DEFAULTS[key];
  if (Array.isArray(expected)) {
    if (Array.isArray(raw)) return raw.map(String);
    if (typeof raw === "string")
      return raw
        .split(",")
        .map((part) => part.trim())
        .filter(Boolean);
    throw new ConfigError(`${source} must be a list (comma-separated in the environment)`);
  }
  if (typeof expected === "number") {
    const value = typeof raw === "number" ? raw : Number(String(raw).trim());
    if (!Number.isInteger(value) || value < 0)
      throw new ConfigError(`${source} must be a whole number ≥ 0, not "${raw}"`);
    return value;
  }
  if (typeof raw !== "string") throw new ConfigError(`${source} must be a string`);
  return raw;
}

function check(config: Config): void {
  if (config.port > 65535)
    throw new ConfigError(`PORT must be 0–65535 (0 picks a free port), not ${config.port}`);
  if (config.databaseUrl && !/^postgres(ql)?:\/\//.test(config.databaseUrl))
    throw new ConfigError("DATABASE_URL must start with postgres:// or postgresql://");
  if (config.redisUrl && !/^rediss?:\/\//.test(config.redisUrl))
    throw new ConfigError("REDIS_URL must start with redis:// or rediss://");
  for (const server of config.dnsServers) {
    if (!/^(\[[0-9a-f:.]+\]|[0-9.]+)(:\d{1,5})?$/i.test(server))
      throw new ConfigError(
        `SIGHTLINE_DNS_SERVERS entry "${server}" must be an IP address with an optional :port`,
      );
  }
  if (!/^(top100|top1000|\d{1,5}(-\d{1,5})?(\s*,\s*\d{1,5}(-\d{1,5})?)*)$/.test(config.ports.trim()))
    throw new ConfigError(
      `SIGHTLINE_PORTS must be top100, top1000 or a list such as "22,80,443,8000-8100", not "${config.ports}"`,
    );
  if (config.dnsWordlist !== "small" && config.dnsWordlist !== "large" && !existsSync(config.dnsWordlist))
    throw new ConfigError(
      `SIGHTLINE_DNS_WORDLIST must be small, large or a readable file, and "${config.dnsWordlist}" is none of them`,
    );
  if (config.depth < 1 || config.depth > 10) throw new ConfigError("SIGHTLINE_DEPTH must be 1–10");
  if (config.concurrency < 1) throw new ConfigError("SIGHTLINE_CONCURRENCY must be at least 1");
  if (config.perHostConcurrency < 1)
    throw new ConfigError("SIGHTLINE_PER_HOST_CONCURRENCY must be at least 1");
  if (config.runConcurrency < 1) throw new ConfigError("SIGHTLINE_RUN_CONCURRENCY must be at least 1");
  if (config.runTimeLimitSeconds < 1)
    throw new ConfigError("SIGHTLINE_RUN_TIME_LIMIT must be at least 1 second");
  if (config.schedulerIntervalSeconds < 1)
    throw new ConfigError("SIGHTLINE_SCHEDULER_INTERVAL must be at least 1");
  if (config.taskConcurrency < 1) throw new ConfigError("SIGHTLINE_TASK_CONCURRENCY must be at least 1");
  if (config.taskAttempts < 1) throw new ConfigError("SIGHTLINE_TASK_ATTEMPTS must be at least 1");
  if (config.queueStallSeconds < 1)
    throw new ConfigError("SIGHTLINE_QUEUE_STALL_SECONDS must be at least 1 second");
  if (!/^[A-Za-z0-9_.-]+$/.test(config.redisPrefix))
    throw new ConfigError("SIGHTLINE_REDIS_PREFIX must be letters, digits, _ . or -");
  if (config.timeoutMs < 1) throw new ConfigError("SIGHTLINE_TIMEOUT_MS must be at least 1");
  if (config.probeEngine !== "auto" && config.probeEngine !== "js")
    throw new ConfigError(`SIGHTLINE_PROBE_ENGINE must be auto or js, not "${config.probeEngine}"`);
  const atLeast: Array<[keyof Config, string, number, string]> = [
    ["httpMaxBodyBytes", "SIGHTLINE_HTTP_MAX_BODY_BYTES", 1024, "bytes"],
    ["httpMaxHeaderBytes", "SIGHTLINE_HTTP_MAX_HEADER_BYTES", 1024, "bytes"],
    ["bannerMaxBytes", "SIGHTLINE_BANNER_MAX_BYTES", 16, "bytes"],
    ["bannerTimeoutMs", "SIGHTLINE_BANNER_TIMEOUT_MS", 1, "millisecond"],
    ["dnsMaxRecords", "SIGHTLINE_DNS_MAX_RECORDS", 1, "record"],
    ["dnsMaxTxtLength", "SIGHTLINE_DNS_MAX_TXT_LENGTH", 255, "characters"],
    ["axfrMaxRecords", "SIGHTLINE_AXFR_MAX_RECORDS", 1, "record"],
    ["tlsMaxNames", "SIGHTLINE_TLS_MAX_NAMES", 1, "name"],
  ];
  for (const [key, variable, minimum, unit] of atLeast)
    if ((config[key] as number) < minimum)
      throw new ConfigError(`${variable} must be at least ${minimum} ${unit}, not ${config[key]}`);
  if (config.bodyLimit < 1024) throw new ConfigError("SIGHTLINE_BODY_LIMIT must be at least 1024 bytes");
  if (config.authFailureLimit < 1)
    throw new ConfigError("SIGHTLINE_AUTH_FAILURE_LIMIT must be at least 1 failed attempt per minute");
  for (const proxy of config.trustProxy) {
    if (!isAddressOrCidr(proxy))
      throw new ConfigError(
        `SIGHTLINE_TRUST_PROXY entry "${proxy}" must be an IP address or CIDR of a reverse proxy`,
      );
  }
  for (const entry of config.webhookAllow) {
    if (!isAddressOrCidr(entry) && !/^[a-z0-9.-]+$/i.test(entry))
      throw new ConfigError(
        `SIGHTLINE_WEBHOOK_ALLOW entry "${entry}" must be an IP address, a CIDR block or a host name`,
      );
  }
  if (config.webhookTimeoutMs < 100)
    throw new ConfigError("SIGHTLINE_WEBHOOK_TIMEOUT_MS must be at least 100");
  if (config.webhookAttempts < 1 || config.webhookAttempts > 20)
    throw new ConfigError("SIGHTLINE_WEBHOOK_ATTEMPTS must be 1–20");
  if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(config.logLevel))
    throw new ConfigError("LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent");
  if (Boolean(config.bootstrapAccessKey) !== Boolean(config.bootstrapSecretKey))
    throw new ConfigError(
      "set both SIGHTLINE_BOOTSTRAP_ACCESS_KEY and SIGHTLINE_BOOTSTRAP_SECRET_KEY, or neither",
    );
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
