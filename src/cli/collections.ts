/**
 * Client commands for collections and their results, through the public API of a running server:
 *   sightline collections list|show|create|update|add-seeds|delete-seed|delete-seeds|delete
 *   sightline results <collection> <kind> [--json | --jsonl | --format table|json|jsonl|csv]
 * Seeds come from `--seed TYPE:NAME` (repeatable), bare `--seed NAME` (type detected), or `--seeds-file`
 * (one per line, `TYPE NAME`, `TYPE,NAME` or a bare name; `#` comments, blank lines and a `type,name`
 * header skipped); `-` in place of a seed or a file reads such lines from standard input. Every line is
 * read by `parseSeedText` (src/core/seeds.ts), as the dashboard reads them.
 */
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { Readable, type Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import type { Command } from "commander";
import { readableNumbers } from "../core/formats.ts";
import { parseSeedText, SEED_TYPES, type Seed } from "../core/seeds.ts";
import { csvLine } from "../results/stream.ts";
import {
  ApiClient,
  type ClientOptions,
  clientSettings,
  collectionPath,
  pathSegment,
  withClientOptions,
} from "./api-client.ts";
import {
  CliError,
  chosenFormat,
  type DataOptions,
  printedForScripts,
  show,
  withJsonLines,
} from "./output.ts";
import { printOverview } from "./overview.ts";
import { resultTable } from "./result-tables.ts";

type Options = ClientOptions & DataOptions;
type SeedOptions = Options & { seed: string[]; seedsFile?: string; team?: string; scanRate?: string };

/** The result kinds the API serves under /api/collections/{name}/. */
export const RESULT_KINDS = [
  "overview",
  "recent",
  "applications",
  "connections",
  "domains",
  "hosts",
  "issues",
  "netblocks",
  "products",
  "services",
  "vulnerabilities",
] as const;

/** A seed from one line a person wrote (`Domain:example.com`, `Domain example.com` or a bare value). */
function seedFromText(line: string, where: string): Seed | undefined {
  const parsed = parseSeedText(line);
  if (parsed?.type) return { type: parsed.type, name: parsed.value };
  if (!parsed) return undefined;
  throw new CliError(
    `${where}: cannot tell what "${parsed.value}" is; write it as TYPE:NAME with TYPE one of ${SEED_TYPES.join(", ")}`,
    2,
  );
}

/** Seeds of a text with one per line; lines that hold none (blank, comments, a header) are skipped. */
function seedsOfLines(content: string, where: string): Seed[] {
  const seeds: Seed[] = [];
  content.split(/\r\n|\r|\n/).forEach((line, i) => {
    const seed = seedFromText(line, `${where} line ${i + 1}`);
    if (seed) seeds.push(seed);
  });
  return seeds;
}

/** More than the API takes in one request (10,000 seeds) could ever need. */
const MAX_STDIN_BYTES = 16 * 1024 * 1024;

/** Standard input's seeds (for `-`), read once however many options name it. */
let stdinSeeds: Promise<Seed[]> | undefined;
function seedsOfStandardInput(): Promise<Seed[]> {
  stdinSeeds ??= (async () => {
    if (process.stdin.isTTY)
      process.stderr.write("Reading seeds from standard input, one per line; end with Ctrl-D.\n");
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_STDIN_BYTES)
        throw new CliError("Standard input holds more than 16 MB of seeds; give them in parts", 2);
      chunks.push(chunk);
    }
    return seedsOfLines(Buffer.concat(chunks).toString("utf8"), "standard input");
  })();
  return stdinSeeds;
}

async function collectSeeds(options: SeedOptions): Promise<Seed[]> {
  const seeds = options.seed
    .map((text, i) => {
      if (text === "-") return undefined;
      const seed = seedFromText(text, `--seed #${i + 1}`);
      if (!seed)
        throw new CliError(`--seed #${i + 1} holds no seed; give one as TYPE:NAME or a bare name`, 2);
      return seed;
    })
    .filter((seed) => seed !== undefined);
  if (options.seedsFile && options.seedsFile !== "-") {
    let content: string;
    try {
      content = readFileSync(options.seedsFile, "utf8");
    } catch (error) {
      throw new CliError(
        `Cannot read ${options.seedsFile}: ${(error as NodeJS.ErrnoException).code ?? error}`,
        2,
      );
    }
    seeds.push(...seedsOfLines(content, options.seedsFile));
  }
  if (options.seed.includes("-") || options.seedsFile === "-") seeds.push(...(await seedsOfStandardInput()));
  return seeds;
}

const repeat = (value: string, previous: string[]) => [...previous, value];

function seedOptions(command: Command): Command {
  return withClientOptions(command)
    .option(
      "--seed <seed>",
      "a seed as TYPE:NAME or a bare name (repeatable); - reads seeds from standard input",
      repeat,
      [],
    )
    .option("--seeds-file <file>", "seeds, one per line (TYPE NAME or a bare name); - for standard input")
    .option("--json", "print JSON");
}

type ProfileOptions = {
  profile?: string;
  ports?: string;
  udp?: boolean;
  wordlist?: string;
  depth?: string;
  rate?: string;
  exposureChecks?: boolean;
  templateLibrary?: boolean;
};

/** The scan-profile options of `collections create` and `collections update`. */
function profileOptions(command: Command): Command {
  return command
    .option("--profile <preset>", "scan profile preset: quick, default or thorough")
    .option(
      "--ports <ports>",
      'TCP ports: top1000 (the default), top100 or a list such as "22,80,443,8000-8100"',
    )
    .option("--udp", "run the UDP pass")
    .option("--no-udp", "skip the UDP pass")
    .option("--wordlist <list>", "subdomain brute force: off, small or large")
    .option("--depth <steps>", "how far discovery follows from a seed (1-10)")
    .option("--rate <per-second>", "network operations per second across a run (0 = unlimited)")
    .option("--exposure-checks", "run the exposure checks")
    .option("--no-exposure-checks", "skip the exposure checks")
    .option("--template-library", "run Sightline's template library")
    .option("--no-template-library", "skip Sightline's template library");
}

const wholeNumber = (text: string, option: string): number => {
  if (!/^\d+$/.test(text.trim())) throw new CliError(`${option} must be a whole number, not "${text}"`, 2);
  return Number(text);
};

/** The profile fields the options set (the server checks their values and says what is wrong). */
function profileFrom(options: ProfileOptions): Record<string, unknown> {
  const profile: Record<string, unknown> = {};
  if (options.profile !== undefined) profile.preset = options.profile;
  if (options.ports !== undefined) profile.ports = options.ports;
  if (options.udp !== undefined) profile.udp = options.udp;
  if (options.wordlist !== undefined) profile.dns_wordlist = options.wordlist;
  if (options.depth !== undefined) profile.depth = wholeNumber(options.depth, "--depth");
  if (options.rate !== undefined) profile.rate_limit = wholeNumber(options.rate, "--rate");
  if (options.exposureChecks !== undefined) profile.exposure_checks = options.exposureChecks;
  if (options.templateLibrary !== undefined) profile.template_library = options.templateLibrary;
  return profile;
}

/** A profile as a person reads it: "preset thorough, ports 22,443, UDP off, depth 2". */
export function describeProfile(profile: Record<string, unknown> | null): string {
  if (!profile) return "none (the server's settings)";
  const onOff = (value: unknown) => (value ? "on" : "off");
  const words: Record<string, (value: unknown) => string> = {
    preset: (value) => `preset ${value}`,
    ports: (value) => `ports ${value}`,
    udp: (value) => `UDP ${onOff(value)}`,
    dns_wordlist: (value) => `brute-force wordlist ${value}`,
    depth: (value) => `depth ${value}`,
    rate_limit: (value) => (value === 0 ? "no rate limit" : `${value} operations a second`),
    exposure_checks: (value) => `exposure checks ${onOff(value)}`,
    template_library: (value) => `template library ${onOff(value)}`,
  };
  return Object.entries(profile)
    .map(([key, value]) => words[key]?.(value) ?? `${key} ${value}`)
    .join(", ");
}

/** Flattens a result into rows: the hosts object becomes one row per IP. */
export function resultRows(kind: string, result: unknown): Array<Record<string, unknown>> {
  if (Array.isArray(result))
    return result.map((item) => (typeof item === "object" && item ? item : { value: item }));
  if (result && typeof result === "object") {
    if (kind === "hosts") return Object.entries(result).map(([ip, host]) => ({ ip, ...(host as object) }));
    return [result as Record<string, unknown>];
  }
  return [];
}

/**
 * RFC 4180 CSV with a header row of every key seen (the server's exports use the same fields), with plain
 * numbers where the wire has decimal-exponent strings (443, not "0.443e3").
 */
export function toCsv(rows: Array<Record<string, unknown>>): string {
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  return [columns, ...rows.map((row) => columns.map((column) => readableNumbers(row[column], column)))]
    .map(csvLine)
    .join("");
}

/**
 * Deleting a collection cannot be undone: the person types its name (on a terminal, or one line on
 * standard input); anything else, or no input at all, leaves it in place.
 */
async function confirmByName(collection: string): Promise<void> {
  process.stderr.write(
    `Deleting collection ${collection} also deletes its seeds, runs and results; it cannot be undone.\nType the collection's name to delete it: `,
  );
  const lines = createInterface({ input: process.stdin, terminal: false });
  const typed = await new Promise<string | undefined>((resolve) => {
    lines.once("line", (line) => resolve(line.trim()));
    lines.once("close", () => resolve(undefined));
  });
  lines.close();
  if (typed === collection) return;
  throw new CliError(
    typed === undefined
      ? `Nothing was typed, so ${collection} was kept; type its name when asked, or pass --yes.`
      : `"${typed}" is not "${collection}", so ${collection} was kept; type its name exactly, or pass --yes.`,
    2,
  );
}

export function registerCollectionCommands(program: Command): void {
  const collections = program
    .command("collections")
    .description("manage collections and seeds (through the API)");

  withJsonLines(
    withClientOptions(collections.command("list").description("the collections of all your teams")),
  ).action(async (options: Options) => {
    const names = await new ApiClient(clientSettings(options)).get<string[]>("/api/collections");
    if (!printedForScripts(options, names))
      for (const name of names.length ? names : ["(none)"]) console.log(name);
  });

  withClientOptions(
    collections.command("show <collection>").description("a collection's team, scan rate and seeds"),
  )
    .option("--json", "print JSON")
    .action(async (collection: string, options: Options) => {
      const result = await new ApiClient(clientSettings(options)).get<
        { seeds: Seed[] } & Record<string, unknown>
      >(collectionPath(collection));
      if (printedForScripts(options, result)) return;
      const { seeds, ...rest } = result;
      show({
        ...rest,
        scan_profile: describeProfile(result.scan_profile as Record<string, unknown> | null),
      });
      console.log("");
      show(seeds, ["type", "name"]);
      const total = Number(result.seeds_total ?? seeds.length);
      if (total > seeds.length) console.log(`(the first ${seeds.length} of ${total} seeds)`);
    });

  profileOptions(
    seedOptions(collections.command("create <collection>").description("create a collection with its seeds")),
  )
    .option("--team <id>", "the team that owns it (default: your default team)")
    .option("--scan-rate <rate>", "auto, on_demand, daily, weekly or monthly")
    .action(async (collection: string, options: SeedOptions & ProfileOptions) => {
      const body: Record<string, unknown> = { name: collection, seeds: await collectSeeds(options) };
      if (options.team !== undefined) body.team_id = options.team;
      if (options.scanRate !== undefined) body.scan_rate = options.scanRate;
      const profile = profileFrom(options);
      if (Object.keys(profile).length > 0) body.scan_profile = profile;
      const result = await new ApiClient(clientSettings(options)).post<{ seed_count: number }>(
        "/api/collections",
        body,
      );
      if (!printedForScripts(options, result))
        console.log(`Created collection ${collection} with ${result.seed_count} seeds.`);
    });

  seedOptions(collections.command("add-seeds <collection>").description("add seeds (those present are kept)"))
    .option("--scan-rate <rate>", "also change the scan rate")
    .action(async (collection: string, options: SeedOptions) => {
      const seeds = await collectSeeds(options);
      if (seeds.length === 0 && options.scanRate === undefined)
        throw new CliError("Nothing to add: give --seed or --seeds-file", 2);
      const body: Record<string, unknown> = { seeds };
      if (options.scanRate !== undefined) body.scan_rate = options.scanRate;
      const result = await new ApiClient(clientSettings(options)).post<{
        seeds_added: number;
        seed_count: number;
      }>(collectionPath(collection), body);
      if (!printedForScripts(options, result))
        console.log(`Added ${result.seeds_added} new seeds to ${collection}; it has ${result.seed_count}.`);
    });

  profileOptions(
    withClientOptions(
      collections
        .command("update <collection>")
        .description("change a collection's scan rate or scan profile (the fields given; the rest is kept)"),
    ),
  )
    .option("--scan-rate <rate>", "auto, on_demand, daily, weekly or monthly")
    .option("--reset-profile", "drop the scan profile: runs use the server's settings")
    .option("--json", "print JSON")
    .action(
      async (
        collection: string,
        options: Options & ProfileOptions & { scanRate?: string; resetProfile?: boolean },
      ) => {
        const changes = profileFrom(options);
        if (options.resetProfile && Object.keys(changes).length > 0)
          throw new CliError(
            "--reset-profile drops the whole profile; give it without other profile options",
            2,
          );
        if (!options.resetProfile && Object.keys(changes).length === 0 && options.scanRate === undefined)
          throw new CliError(
            "Nothing to change: give --scan-rate, a profile option (--profile, --ports, …) or --reset-profile",
            2,
          );
        const client = new ApiClient(clientSettings(options));
        const body: Record<string, unknown> = {};
        if (options.scanRate !== undefined) body.scan_rate = options.scanRate;
        if (options.resetProfile) body.scan_profile = null;
        else if (Object.keys(changes).length > 0) {
          // The API replaces a profile whole: the options given change only their own fields.
          const current = await client.get<{ scan_profile: Record<string, unknown> | null }>(
            collectionPath(collection),
          );
          body.scan_profile = { ...(current.scan_profile ?? {}), ...changes };
        }
        await client.post(collectionPath(collection), body);
        const result = await client.get<{ scan_rate: string; scan_profile: Record<string, unknown> | null }>(
          collectionPath(collection),
        );
        if (printedForScripts(options, { scan_rate: result.scan_rate, scan_profile: result.scan_profile }))
          return;
        console.log(
          `Updated ${collection}: scan rate ${result.scan_rate}; scan profile ${describeProfile(result.scan_profile)}.`,
        );
      },
    );

  withClientOptions(
    collections.command("delete-seeds <collection>").description("delete all seeds of a collection"),
  )
    .option("--json", "print JSON")
    .action(async (collection: string, options: Options) => {
      const result = await new ApiClient(clientSettings(options)).request<{ seeds_deleted: number }>(
        "DELETE",
        collectionPath(collection, "/seeds"),
      );
      if (!printedForScripts(options, result))
        console.log(`Deleted ${result.seeds_deleted} seeds from ${collection}.`);
    });

  withClientOptions(
    collections
      .command("delete-seed <collection> <seed>")
      .description(
        "delete one seed, given as TYPE:NAME or a bare name; - deletes each seed on standard input",
      ),
  )
    .option("--json", "print JSON (with -: a list, one answer per seed)")
    .action(async (collection: string, text: string, options: Options) => {
      const seeds = text === "-" ? await seedsOfStandardInput() : [seedFromText(text, "The seed")];
      if (seeds.length === 0 || seeds[0] === undefined)
        throw new CliError(
          text === "-"
            ? "Standard input holds no seed; give one per line as TYPE:NAME or a bare name"
            : "Give the seed to delete as TYPE:NAME or a bare name",
          2,
        );
      const client = new ApiClient(clientSettings(options));
      const results: unknown[] = [];
      for (const seed of seeds as Seed[]) {
        const result = await client.request<{ seed_count: number }>(
          "DELETE",
          collectionPath(collection, `/seeds/${pathSegment(seed.type)}/${pathSegment(seed.name)}`),
        );
        results.push(result);
        if (!options.json)
          console.log(
            `Deleted ${seed.type} ${seed.name} from ${collection}; it has ${result.seed_count} seeds.`,
          );
      }
      if (options.json) printedForScripts(options, text === "-" ? results : results[0]);
    });

  withClientOptions(
    collections
      .command("delete <collection>")
      .description("delete a collection with its runs and results (asks you to type its name, or --yes)"),
  )
    .option("--yes", "delete without asking (for scripts)")
    .option("--json", "print JSON")
    .action(async (collection: string, options: Options & { yes?: boolean }) => {
      if (!options.yes) await confirmByName(collection);
      const result = await new ApiClient(clientSettings(options)).request<{
        runs_deleted: number;
        seeds_deleted: number;
      }>("DELETE", collectionPath(collection));
      if (!printedForScripts(options, result))
        console.log(
          `Deleted collection ${collection} with its ${result.seeds_deleted} seeds, ${result.runs_deleted} runs and their results.`,
        );
    });

  withJsonLines(
    withClientOptions(
      program
        .command("results <collection> <kind>")
        .description(`read results of the latest finished run; kind: ${RESULT_KINDS.join(", ")}`)
        .option("--format <format>", "table (default), json, jsonl or csv")
        .option("--wide", "tables: every field, not the few most useful"),
    ),
    {
      json: "print the API's result as JSON (--format json)",
      jsonl: "print a list one item per line, streamed from the server (--format jsonl; hosts: {ip, …})",
    },
  ).action(
    async (
      collection: string,
      kind: string,
      options: ClientOptions & DataOptions & { format?: string; wide?: boolean },
    ) => {
      if (!(RESULT_KINDS as readonly string[]).includes(kind))
        throw new CliError(`Unknown result kind "${kind}"; choose one of ${RESULT_KINDS.join(", ")}`, 2);
      const format = chosenFormat(options, "table");
      if (!["table", "json", "jsonl", "csv"].includes(format))
        throw new CliError(`--format must be table, json, jsonl or csv, not "${format}"`, 2);
      const client = new ApiClient(clientSettings(options));
      if (format === "jsonl") {
        if (kind === "overview")
          throw new CliError("The overview is one object, not a list: read it with --json", 2);
        // The server's NDJSON export: the list's items as they are read, never held whole here.
        const response = await client.download(collectionPath(collection, `/${kind}?format=ndjson`));
        const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
        try {
          return await pipeline(body, process.stdout as Writable, { end: false });
        } catch (error) {
          // The reader stopped reading (`| head`): it has what it wanted, which is no error.
          if ((error as NodeJS.ErrnoException).code !== "EPIPE") throw error;
          return;
        }
      }
      // The issues table shows a finding seen through several names of one service once, as the API
      // groups it; --wide and the json and csv outputs keep one item per entity.
      const grouped = kind === "issues" && format === "table" && !options.wide;
      const result = await client.get<unknown>(
        collectionPath(collection, `/${kind}${grouped ? "?group=finding" : ""}`),
      );
      if (format === "json") return void printedForScripts({ json: true }, result);
      if (kind === "overview" && format === "table")
        return printOverview(collection, result as Parameters<typeof printOverview>[1]);
      const rows = resultRows(kind, result);
      if (format === "csv") return void process.stdout.write(toCsv(rows));
      const table = resultTable(kind, rows, options.wide);
      show(table.rows, table.columns);
    },
  );
}
