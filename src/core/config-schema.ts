/**
 * Every setting, declared once: its JSON Schema (TypeBox) with its default, bounds, environment variable
 * and description. The `Config` type, the checks and their sentences (config.ts), the environment mapping
 * and docs/configuration.md (`npm run docs:config`) are all made from this one object.
 */
import { type Static, type TSchema, Type } from "typebox";
import {
  KEYED_SOURCE_IDS,
  type KeyedSourceId,
  SOURCE_IDS,
  type SourceId,
  type SourceKeyPart,
  sourceInfo,
  sourceKeyKey,
  sourceUrlKey,
} from "./sources.ts";

/** What a setting carries beside its JSON Schema. */
export interface SettingMeta {
  /** The environment variable that sets it. */
  env: string;
  description: string;
  /** The unit named in a sentence about its bounds ("bytes", "seconds"). */
  unit?: string;
  /** What a pattern asks for, as the end of "<VARIABLE> must …", for the sentence that refuses a value. */
  patternMeaning?: string;
  /** A check of each list item, named (see ITEM_CHECKS in config.ts), with what it asks for in words. */
  itemCheck?: {
    name: "address-or-cidr" | "address-cidr-or-name" | "resolver" | "template-severity" | "intrusive-tag";
    meaning: string;
  };
  /** Its value is never repeated in a sentence nor its default shown in docs/configuration.md (it may hold a password). */
  secret?: boolean;
}

const whole = (value: number, meta: SettingMeta & { minimum?: number; maximum?: number }) =>
  Type.Integer({ default: value, minimum: meta.minimum ?? 0, ...meta });
const text = (value: string, meta: SettingMeta & { pattern?: string; enum?: string[] }) =>
  meta.enum
    ? Type.Union(
        meta.enum.map((option) => Type.Literal(option)),
        { default: value, ...meta },
      )
    : Type.String({ default: value, ...meta });
const list = (meta: SettingMeta) => Type.Array(Type.String(), { default: [], ...meta });

const KiB = 1024;
const MiB = 1024 * KiB;

export const CONFIG_SCHEMA = Type.Object(
  {
    port: whole(8080, {
      env: "PORT",
      maximum: 65535,
      description: "HTTP port of `sightline serve` (0 picks a free one).",
    }),
    host: text("127.0.0.1", {
      env: "HOST",
      description:
        "Address the API listens on: loopback by default, as a service holding a map of weak spots should not open itself on every interface unasked; 0.0.0.0 serves every interface.",
    }),
    dataDir: text("./data", {
      env: "SIGHTLINE_DATA_DIR",
      description: "Where the SQLite file, the result cache and other local files live.",
    }),
    databaseUrl: text("", {
      env: "DATABASE_URL",
      pattern: "^(postgres(ql)?://.*)?$",
      patternMeaning: "start with postgres:// or postgresql://",
      secret: true,
      description:
        "`postgres://…` selects PostgreSQL (its commits do not wait for the disk unless the URL sets `options`: docs/operations.md); empty keeps SQLite in the data directory.",
    }),
    redisUrl: text("", {
      env: "REDIS_URL",
      pattern: "^(rediss?://.*)?$",
      patternMeaning: "start with redis:// or rediss://",
      secret: true,
      description:
        "`redis://…` selects the BullMQ queue and `sightline worker` processes; empty runs in-process.",
    }),
    dnsServers: list({
      env: "SIGHTLINE_DNS_SERVERS",
      itemCheck: { name: "resolver", meaning: "an IP address with an optional :port" },
      description: "Resolvers as `ip[:port]`, comma-separated; empty uses the system's.",
    }),
    scanAllow: list({
      env: "SIGHTLINE_SCAN_ALLOW",
      description:
        "CIDRs and names discovery may touch although denied by default (e.g. `127.0.0.0/8` for the lab).",
    }),
    scanDeny: list({
      env: "SIGHTLINE_SCAN_DENY",
      description: "CIDRs and names never touched, on top of the built-in deny list.",
    }),
    ports: text("top1000", {
      env: "SIGHTLINE_PORTS",
      pattern: "^\\s*(top100|top1000|\\d{1,5}(-\\d{1,5})?(\\s*,\\s*\\d{1,5}(-\\d{1,5})?)*)\\s*$",
      patternMeaning: 'be top100, top1000 or a list such as "22,80,443,8000-8100"',
      description:
        "Ports scanned on every address: `top1000` (nmap's 1,000 most frequent and the exposed-datastore ports), `top100` or a list like `22,80,443,8000-8100`.",
    }),
    dnsWordlist: text("small", {
      env: "SIGHTLINE_DNS_WORDLIST",
      description:
        "Subdomain brute-force words: `small` (shipped default), `large` (shipped), `off` (no brute force), or a file with one label a line.",
    }),
    depth: whole(4, {
      env: "SIGHTLINE_DEPTH",
      minimum: 1,
      maximum: 10,
      description: "How far discovery follows from a seed.",
    }),
    concurrency: whole(200, {
      env: "SIGHTLINE_CONCURRENCY",
      minimum: 1,
      description: "Network operations at once per run.",
    }),
    perHostConcurrency: whole(64, {
      env: "SIGHTLINE_PER_HOST_CONCURRENCY",
      minimum: 1,
      description: "Network operations at once per target host.",
    }),
    rateLimit: whole(0, {
      env: "SIGHTLINE_RATE_LIMIT",
      description: "Network operations per second across a run (0 = unlimited).",
    }),
    timeoutMs: whole(3000, {
      env: "SIGHTLINE_TIMEOUT_MS",
      minimum: 1,
      unit: "milliseconds",
      description:
        "Per-operation timeout: a connection, a DNS query, a whole HTTP exchange, a TLS handshake.",
    }),
    httpMaxBodyBytes: whole(512 * KiB, {
      env: "SIGHTLINE_HTTP_MAX_BODY_BYTES",
      minimum: 1024,
      unit: "bytes",
      description:
        "Bytes of an HTTP response body kept, after decompression; never more is read off the wire.",
    }),
    httpMaxHeaderBytes: whole(64 * KiB, {
      env: "SIGHTLINE_HTTP_MAX_HEADER_BYTES",
      minimum: 1024,
      unit: "bytes",
      description: "A larger HTTP response header section fails the request.",
    }),
    httpMaxRedirects: whole(5, {
      env: "SIGHTLINE_HTTP_MAX_REDIRECTS",
      description: "Same-host redirects followed from one URL (0 follows none).",
    }),
    bannerMaxBytes: whole(1024, {
      env: "SIGHTLINE_BANNER_MAX_BYTES",
      minimum: 16,
      unit: "bytes",
      description: "Bytes of a service's greeting kept by the port scan.",
    }),
    hostDiscovery: text("on", {
      env: "SIGHTLINE_HOST_DISCOVERY",
      enum: ["on", "off"],
      description:
        "Before scanning an address's whole port list (more than 8 ports), probe up to 8 of its most common ports first, and leave an address that neither answers nor refuses any of them (`on`, as nmap does before a scan), or scan every port of every address (`off`, nmap's -Pn).",
    }),
    hostDiscoveryTimeoutMs: whole(1000, {
      env: "SIGHTLINE_HOST_DISCOVERY_TIMEOUT_MS",
      minimum: 1,
      unit: "milliseconds",
      description:
        "How long host discovery waits for each of its ports to answer or refuse (at most the timeout): an address in use answers within a round trip, so an unused one is left sooner. The ports of an address that answered are probed again with the whole timeout.",
    }),
    hostDiscoveryMinTimeoutMs: whole(250, {
      env: "SIGHTLINE_HOST_DISCOVERY_MIN_TIMEOUT_MS",
      minimum: 1,
      unit: "milliseconds",
      description:
        "The shortest wait host discovery learns: once 8 addresses of a network (an IPv4 /16, an IPv6 /48) have answered, its others are waited for their round trip as those answers show it (the smoothed time and four times its variation, as nmap times its probes), at least this long and at most SIGHTLINE_HOST_DISCOVERY_TIMEOUT_MS. The UDP pass leaves an address that neither answers nor refuses any of its questions after the same wait (at most SIGHTLINE_BANNER_TIMEOUT_MS). Set it to the larger of those two timeouts to always wait the whole of each.",
    }),
    udp: text("on", {
      env: "SIGHTLINE_UDP",
      enum: ["on", "off"],
      description:
        "The UDP pass: each address is asked the well-known UDP questions (DNS, NTP, SNMP, …): `on` or `off`. A collection's scan profile may set it for its own runs.",
    }),
    exposureChecks: text("on", {
      env: "SIGHTLINE_EXPOSURE_CHECKS",
      enum: ["on", "off"],
      description:
        "The active exposure checks (one read-only exchange per identified service that proves an exposure, docs/exposures.md): `on` or `off`. A collection's scan profile may set it for its own runs.",
    }),
    bannerTimeoutMs: whole(1500, {
      env: "SIGHTLINE_BANNER_TIMEOUT_MS",
      minimum: 1,
      unit: "milliseconds",
      description: "How long the port scan waits for a greeting once connected.",
    }),
    discoveryThread: text("auto", {
      env: "SIGHTLINE_DISCOVERY_THREAD",
      enum: ["auto", "on", "off"],
      description:
        "Where discovery modules run: `on` in a worker thread of their own (the network work of runs on a second core, never in the way of the API and the store's writes), `off` in the main thread, `auto` on when the machine has more than one core.",
    }),
    probeEngine: text("auto", {
      env: "SIGHTLINE_PROBE_ENGINE",
      enum: ["auto", "js"],
      description:
        "Port scan probes: `auto` uses the native engine `npm ci` builds when it loads, else Node's sockets; `js` always Node's sockets.",
    }),
    dnsMaxRecords: whole(100, {
      env: "SIGHTLINE_DNS_MAX_RECORDS",
      minimum: 1,
      unit: "record",
      description: "Records of one type kept per DNS name (more addresses are not scanned).",
    }),
    dnsMaxTxtLength: whole(4096, {
      env: "SIGHTLINE_DNS_MAX_TXT_LENGTH",
      minimum: 255,
      unit: "characters",
      description: "Characters of one TXT record kept.",
    }),
    axfrMaxRecords: whole(20_000, {
      env: "SIGHTLINE_AXFR_MAX_RECORDS",
      minimum: 1,
      unit: "record",
      description: "Records read from one zone transfer.",
    }),
    tlsMaxNames: whole(500, {
      env: "SIGHTLINE_TLS_MAX_NAMES",
      minimum: 1,
      unit: "name",
      description: "DNS names taken from one certificate (subject and alternative names).",
    }),
    templates: list({
      env: "SIGHTLINE_TEMPLATES",
      description:
        "More directories of nuclei-format templates to run, comma-separated (a checkout of the public nuclei-templates works; docs/templates.md).",
    }),
    templateLibrary: text("on", {
      env: "SIGHTLINE_TEMPLATE_LIBRARY",
      enum: ["on", "off"],
      description: "Sightline's own template library (templates/): `on` or `off`.",
    }),
    templateTags: list({
      env: "SIGHTLINE_TEMPLATE_TAGS",
      description: "Only templates with at least one of these tags run; empty: every tag.",
    }),
    templateSeverities: list({
      env: "SIGHTLINE_TEMPLATE_SEVERITIES",
      itemCheck: { name: "template-severity", meaning: "one of critical, high, medium, low, info" },
      description: "Only templates of these severities run (critical, high, medium, low, info); empty: all.",
    }),
    templateAllow: list({
      env: "SIGHTLINE_TEMPLATE_ALLOW",
      itemCheck: { name: "intrusive-tag", meaning: "one of intrusive, dos, fuzz, bruteforce" },
      description:
        "Templates tagged intrusive, dos, fuzz or bruteforce run only when their tag is listed here; empty: none of them.",
    }),
    // A seeded block is expanded lazily, a slice of 256 addresses at a time behind the scan, so the bound is
    // about the run's length, not its memory. IPv6 blocks are never walked address by address: even a /64
    // holds 2^64 addresses, almost all unused; IPv6 hosts are found by their names.
    maxBlockAddresses: whole(65_536, {
      env: "SIGHTLINE_MAX_BLOCK_ADDRESSES",
      minimum: 1,
      unit: "address",
      description:
        "Largest seeded IPv4 block whose addresses are scanned (65,536: a /16); a larger block is recorded, not scanned.",
    }),
    runTimeLimitSeconds: whole(3600, {
      env: "SIGHTLINE_RUN_TIME_LIMIT",
      minimum: 1,
      unit: "second",
      description: "A run still going after this many seconds fails; earlier results are kept.",
    }),
    runConcurrency: whole(2, {
      env: "SIGHTLINE_RUN_CONCURRENCY",
      minimum: 1,
      description: "Runs executing at once in-process.",
    }),
    bodyLimit: whole(MiB, {
      env: "SIGHTLINE_BODY_LIMIT",
      minimum: 1024,
      unit: "bytes",
      description: "Largest accepted request body.",
    }),
    authFailureLimit: whole(30, {
      env: "SIGHTLINE_AUTH_FAILURE_LIMIT",
      minimum: 1,
      unit: "failed attempt per minute",
      description:
        "Failed key checks a client may make per minute before it is answered 429; with `REDIS_URL`, counted across all servers sharing it.",
    }),
    trustProxy: list({
      env: "SIGHTLINE_TRUST_PROXY",
      itemCheck: { name: "address-or-cidr", meaning: "an IP address or CIDR of a reverse proxy" },
      description:
        "Reverse proxies (addresses or CIDRs) whose `X-Forwarded-For` names the client; empty trusts none.",
    }),
    metricsToken: text("", {
      env: "SIGHTLINE_METRICS_TOKEN",
      secret: true,
      description:
        "When set, GET /metrics asks for `Authorization: Bearer <token>`; empty leaves it open like /healthz.",
    }),
    logLevel: text("info", {
      env: "LOG_LEVEL",
      enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
      description: "Log level (pino).",
    }),
    bootstrapAccessKey: text("", {
      env: "SIGHTLINE_BOOTSTRAP_ACCESS_KEY",
      description:
        "With the secret below: the first admin key pair, used on a first start instead of a generated one.",
    }),
    bootstrapSecretKey: text("", {
      env: "SIGHTLINE_BOOTSTRAP_SECRET_KEY",
      secret: true,
      description:
        "The secret of the first admin key pair (set both or neither); at least 32 characters, stored with scrypt.",
    }),
    schedulerIntervalSeconds: whole(60, {
      env: "SIGHTLINE_SCHEDULER_INTERVAL",
      minimum: 1,
      unit: "second",
      description: "How often due runs are looked for.",
    }),
    taskConcurrency: whole(8, {
      env: "SIGHTLINE_TASK_CONCURRENCY",
      minimum: 1,
      description: "Tasks one process (the server in-process, or each worker) executes at once.",
    }),
    taskAttempts: whole(3, {
      env: "SIGHTLINE_TASK_ATTEMPTS",
      minimum: 1,
      description: "Tries of a failing task before its run fails.",
    }),
    queueStallSeconds: whole(30, {
      env: "SIGHTLINE_QUEUE_STALL_SECONDS",
      minimum: 1,
      unit: "second",
      description: "BullMQ lock duration and stalled-job check: how soon a dead worker's tasks are retried.",
    }),
    redisPrefix: text("sightline", {
      env: "SIGHTLINE_REDIS_PREFIX",
      pattern: "^[A-Za-z0-9_.-]+$",
      patternMeaning: "be letters, digits, _ . or -",
      description: "Namespace of the BullMQ keys in Redis (several installations can share one Redis).",
    }),
    shutdownGraceSeconds: whole(10, {
      env: "SIGHTLINE_SHUTDOWN_GRACE",
      unit: "seconds",
      description: "On SIGTERM/SIGINT, how long tasks in flight may finish before they are handed back.",
    }),
    runWorkModule: text("", {
      env: "SIGHTLINE_RUN_WORK_MODULE",
      description:
        "Testing/extension hook: a module exporting `createRunWork(services)` used instead of the built-in work.",
    }),
    webhookAllow: list({
      env: "SIGHTLINE_WEBHOOK_ALLOW",
      itemCheck: { name: "address-cidr-or-name", meaning: "an IP address, a CIDR block or a host name" },
      description:
        "CIDRs and names webhook URLs may point at although denied by default (loopback, private, metadata).",
    }),
    webhookTimeoutMs: whole(10_000, {
      env: "SIGHTLINE_WEBHOOK_TIMEOUT_MS",
      minimum: 100,
      unit: "milliseconds",
      description: "How long one webhook delivery attempt may take.",
    }),
    webhookAttempts: whole(6, {
      env: "SIGHTLINE_WEBHOOK_ATTEMPTS",
      minimum: 1,
      maximum: 20,
      description: "Attempts per webhook delivery before it is given up as failed.",
    }),
    webhookRetryMs: whole(30_000, {
      env: "SIGHTLINE_WEBHOOK_RETRY_MS",
      unit: "milliseconds",
      description: "Wait before the first retry of a webhook delivery; each later retry waits twice as long.",
    }),
    resultCacheBytes: whole(1024 * MiB, {
      env: "SIGHTLINE_RESULT_CACHE_BYTES",
      unit: "bytes",
      description:
        "Bytes of rendered result bodies kept in files under the data directory, per server process; 0 turns the result cache off.",
    }),
    resultCacheMemoryBytes: whole(64 * MiB, {
      env: "SIGHTLINE_RESULT_CACHE_MEMORY_BYTES",
      unit: "bytes",
      description:
        "Bytes of small rendered result bodies (each at most 1/16 of it) kept in memory, each from its second request; 0 keeps them all in files.",
    }),
    maxSeedsPerCollection: whole(100_000, {
      env: "SIGHTLINE_MAX_SEEDS",
      minimum: 1,
      unit: "seeds",
      description: "Seeds one collection may hold; adding beyond it answers 400 and adds nothing.",
    }),
    sources: list({
      env: "SIGHTLINE_SOURCES",
      description:
        "Passive sources a run asks (ids, see docs/sources.md), or `none`; empty: every keyless source plus every keyed one whose key is set.",
    }),
    permutations: whole(500, {
      env: "SIGHTLINE_PERMUTATIONS",
      unit: "names",
      description:
        "Permuted names (number increments, dash and dot joins, environment and service words) resolved per domain and run; 0 turns permutations off.",
    }),
    permutationWords: text("", {
      env: "SIGHTLINE_PERMUTATION_WORDS",
      description:
        "A file of words (one a line) permutations join to known labels; empty: the shipped environment and service words.",
    }),
    sourceMaxBytes: whole(8 * MiB, {
      env: "SIGHTLINE_SOURCE_MAX_BYTES",
      minimum: 1024,
      unit: "bytes",
      description: "Bytes of one passive source's answer read; a longer answer is cut there and noted.",
    }),
    sourceTimeoutMs: whole(30_000, {
      env: "SIGHTLINE_SOURCE_TIMEOUT_MS",
      minimum: 100,
      unit: "milliseconds",
      description: "Time one passive source's request may take, its whole body included.",
    }),
    sourceRetries: whole(3, {
      env: "SIGHTLINE_SOURCE_RETRIES",
      maximum: 10,
      description:
        "Retries of a passive source's request answered 429 or 5xx (with backoff, honouring Retry-After).",
    }),
    sourceRequestsPerMinute: whole(0, {
      env: "SIGHTLINE_SOURCE_REQUESTS_PER_MINUTE",
      description:
        "Requests per minute to each passive source; 0: each source's published limit (docs/sources.md).",
    }),
    sourceMaxNames: whole(100_000, {
      env: "SIGHTLINE_SOURCE_MAX_NAMES",
      minimum: 1,
      unit: "names",
      description: "Names kept from one passive source per seed; the rest are dropped and noted.",
    }),
    ...sourceSettings(),
    ipDatabase: list({
      env: "SIGHTLINE_IP_DATABASE",
      description:
        "MMDB files (GeoLite2, DB-IP lite, ipinfo lite; an ASN one and a country one, or one with both) for ASN, network owner, block and country; empty: those `sightline ipdb update` installed, else the bundled data.",
    }),
  },
  { additionalProperties: false },
);

export type Config = Static<typeof CONFIG_SCHEMA>;

type SourceSettings = { [Id in SourceId as `source${SourceKeyPart<Id>}Url`]: ReturnType<typeof text> } & {
  [Id in KeyedSourceId as `source${SourceKeyPart<Id>}Key`]: ReturnType<typeof text>;
};

/** Per source: its base URL and its key (a secret: never shown, never logged, never answered). */
function sourceSettings(): SourceSettings {
  const settings: Record<string, ReturnType<typeof text>> = {};
  for (const id of SOURCE_IDS) {
    const info = sourceInfo(id);
    settings[sourceUrlKey(id)] = text(info.url, {
      env: `SIGHTLINE_SOURCE_${id.toUpperCase()}_URL`,
      pattern: "^https?://[^\\s]+$",
      patternMeaning: "be an http:// or https:// URL",
      description: `Base URL of ${info.title} (a mirror, a proxy, a test server).`,
    });
  }
  for (const id of KEYED_SOURCE_IDS)
    settings[sourceKeyKey(id)] = text("", {
      env: `SIGHTLINE_SOURCE_${id.toUpperCase()}_KEY`,
      secret: true,
      description: `${sourceInfo(id).title}'s API key${id === "censys" ? " as `<API ID>:<secret>`" : ""}; the source runs only when it is set.`,
    });
  return settings as SourceSettings;
}
export type SettingSchema = TSchema & SettingMeta & { default: unknown; type?: string };
