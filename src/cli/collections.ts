/**
 * Client commands for collections and their results, through the public API of a running server:
 *   sightline collections list|show|create|update|add-seeds|delete-seed|delete-seeds|delete
 *   sightline results <collection> <kind> [--format table|json|csv]
 * Seeds come from `--seed TYPE:NAME` (repeatable), bare `--seed NAME` (type detected), or `--seeds-file`
 * (one per line, `TYPE NAME`, `TYPE,NAME` or a bare name; `#` comments, blank lines and a `type,name`
 * header skipped). Every line is read by `parseSeedText` (src/core/seeds.ts), as the dashboard reads them.
 */
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
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
import { CliError, output } from "./output.ts";
import { printOverview } from "./overview.ts";
import { resultTable } from "./result-tables.ts";

type Options = ClientOptions & { json?: boolean };
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

/** The columns a terminal table shows, for kinds whose items have more than a screen holds. */
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

function collectSeeds(options: SeedOptions): Seed[] {
  const seeds = options.seed.map((text, i) => {
    const seed = seedFromText(text, `--seed #${i + 1}`);
    if (!seed) throw new CliError(`--seed #${i + 1} holds no seed; give one as TYPE:NAME or a bare name`, 2);
    return seed;
  });
  if (options.seedsFile) {
    let content: string;
    try {
      content = readFileSync(options.seedsFile, "utf8");
    } catch (error) {
      throw new CliError(
        `Cannot read ${options.seedsFile}: ${(error as NodeJS.ErrnoException).code ?? error}`,
        2,
      );
    }
    content.split(/\r\n|\r|\n/).forEach((line, i) => {
      const seed = seedFromText(line, `${options.seedsFile} line ${i + 1}`);
      if (seed) seeds.push(seed);
    });
  }
  return seeds;
}

const repeat = (value: string, previous: string[]) => [...previous, value];

function seedOptions(command: Command): Command {
  return withClientOptions(command)
    .option("--seed <seed>", "a seed as TYPE:NAME or a bare name (repeatable)", repeat, [])
    .option("--seeds-file <file>", "seeds, one per line (TYPE NAME or a bare name)")
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
    .option("--ports <ports>", 'TCP ports: top100, top1000 or a list such as "22,80,443,8000-8100"')
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

  withClientOptions(collections.command("list").description("the collections of all your teams"))
    .option("--json", "print JSON")
    .action(async (options: Options) => {
      const names = await new ApiClient(clientSettings(options)).get<string[]>("/api/collections");
      if (options.json) output(true, names);
      else for (const name of names.length ? names : ["(none)"]) console.log(name);
    });

  withClientOptions(
    collections.command("show <collection>").description("a collection's team, scan rate and seeds"),
  )
    .option("--json", "print JSON")
    .action(async (collection: string, options: Options) => {
      const result = await new ApiClient(clientSettings(options)).get<
        { seeds: Seed[] } & Record<string, unknown>
      >(collectionPath(collection));
      if (options.json) return output(true, result);
      const { seeds, ...rest } = result;
      output(false, {
        ...rest,
        scan_profile: describeProfile(result.scan_profile as Record<string, unknown> | null),
      });
      console.log("");
      output(false, seeds, ["type", "name"]);
      const total = Number(result.seeds_total ?? seeds.length);
      if (total > seeds.length) console.log(`(the first ${seeds.length} of ${total} seeds)`);
    });

  profileOptions(
    seedOptions(collections.command("create <collection>").description("create a collection with its seeds")),
  )
    .option("--team <id>", "the team that owns it (default: your default team)")
    .option("--scan-rate <rate>", "auto, on_demand, daily, weekly or monthly")
    .action(async (collection: string, options: SeedOptions & ProfileOptions) => {
      const body: Record<string, unknown> = { name: collection, seeds: collectSeeds(options) };
      if (options.team !== undefined) body.team_id = options.team;
      if (options.scanRate !== undefined) body.scan_rate = options.scanRate;
      const profile = profileFrom(options);
      if (Object.keys(profile).length > 0) body.scan_profile = profile;
      const result = await new ApiClient(clientSettings(options)).post<{ seed_count: number }>(
        "/api/collections",
        body,
      );
      if (options.json) output(true, result);
      else console.log(`Created collection ${collection} with ${result.seed_count} seeds.`);
    });

  seedOptions(collections.command("add-seeds <collection>").description("add seeds (those present are kept)"))
    .option("--scan-rate <rate>", "also change the scan rate")
    .action(async (collection: string, options: SeedOptions) => {
      const seeds = collectSeeds(options);
      if (seeds.length === 0 && options.scanRate === undefined)
        throw new CliError("Nothing to add: give --seed or --seeds-file", 2);
      const body: Record<string, unknown> = { seeds };
      if (options.scanRate !== undefined) body.scan_rate = options.scanRate;
      const result = await new ApiClient(clientSettings(options)).post<{
        seeds_added: number;
        seed_count: number;
      }>(collectionPath(collection), body);
      if (options.json) output(true, result);
      else
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
        if (options.json)
          return output(true, { scan_rate: result.scan_rate, scan_profile: result.scan_profile });
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
      if (options.json) output(true, result);
      else console.log(`Deleted ${result.seeds_deleted} seeds from ${collection}.`);
    });

  withClientOptions(
    collections
      .command("delete-seed <collection> <seed>")
      .description("delete one seed, given as TYPE:NAME or a bare name"),
  )
    .option("--json", "print JSON")
    .action(async (collection: string, text: string, options: Options) => {
      const seed = seedFromText(text, "The seed");
      if (!seed) throw new CliError("Give the seed to delete as TYPE:NAME or a bare name", 2);
      const result = await new ApiClient(clientSettings(options)).request<{ seed_count: number }>(
        "DELETE",
        collectionPath(collection, `/seeds/${pathSegment(seed.type)}/${pathSegment(seed.name)}`),
      );
      if (options.json) output(true, result);
      else
        console.log(
          `Deleted ${seed.type} ${seed.name} from ${collection}; it has ${result.seed_count} seeds.`,
        );
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
      if (options.json) output(true, result);
      else
        console.log(
          `Deleted collection ${collection} with its ${result.seeds_deleted} seeds, ${result.runs_deleted} runs and their results.`,
        );
    });

  withClientOptions(
    program
      .command("results <collection> <kind>")
      .description(`read results of the latest finished run; kind: ${RESULT_KINDS.join(", ")}`)
      .option("--format <format>", "table, json or csv", "table")
      .option("--wide", "tables: every field, not the few most useful"),
  ).action(
    async (collection: string, kind: string, options: ClientOptions & { format: string; wide?: boolean }) => {
      if (!(RESULT_KINDS as readonly string[]).includes(kind))
        throw new CliError(`Unknown result kind "${kind}"; choose one of ${RESULT_KINDS.join(", ")}`, 2);
      if (!["table", "json", "csv"].includes(options.format))
        throw new CliError(`--format must be table, json or csv, not "${options.format}"`, 2);
      // The issues table shows a finding seen through several names of one service once, as the API
      // groups it; --wide and the json and csv outputs keep one item per entity.
      const grouped = kind === "issues" && options.format === "table" && !options.wide;
      const result = await new ApiClient(clientSettings(options)).get<unknown>(
        collectionPath(collection, `/${kind}${grouped ? "?group=finding" : ""}`),
      );
      if (options.format === "json") return output(true, result);
      if (kind === "overview" && options.format === "table")
        return printOverview(collection, result as Parameters<typeof printOverview>[1]);
      const rows = resultRows(kind, result);
      if (options.format === "csv") return void process.stdout.write(toCsv(rows));
      const table = resultTable(kind, rows, options.wide);
      output(false, table.rows, table.columns);
    },
  );
}
