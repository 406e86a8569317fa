/**
 * `sightline ipdb …`: the IP database (ASN, network owner, block, country) discovery looks addresses up
 * in. `update --from <file>` checks an MMDB file (GeoLite2, DB-IP lite, ipinfo lite, …) and installs it
 * under the data directory, where the server and workers find it at their next start; `status` says what
 * is in use.
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { loadConfig } from "../core/config.ts";
import {
  installedDatabaseFolder,
  type MmdbContent,
  mmdbDatabases,
  openMmdb,
  useIpDatabases,
} from "../discovery/ip-database.ts";
import { CliError, printedForScripts, show } from "./output.ts";

const CONTENT_WORDS: Record<MmdbContent, string> = {
  asn: "autonomous systems",
  country: "countries",
  "asn+country": "autonomous systems and countries",
};
const FILE_NAMES: Record<MmdbContent, string> = {
  asn: "asn.mmdb",
  country: "country.mmdb",
  "asn+country": "asn-country.mmdb",
};

const day = (date: Date) => date.toISOString().slice(0, 10);

export function registerIpdbCommands(program: Command): void {
  const ipdb = program
    .command("ipdb")
    .description("the IP database discovery reads ASN, network owner, block and country from");
  ipdb
    .command("update")
    .description("check an MMDB file (GeoLite2-ASN/Country/City, DB-IP lite, ipinfo lite) and install it")
    .requiredOption("--from <file>", "the .mmdb file to install (or .mmdb.gz)")
    .option("--json", "print JSON")
    .action((options: { from: string; json?: boolean }) => {
      const config = loadConfig();
      let database: ReturnType<typeof openMmdb>;
      try {
        database = openMmdb(resolve(options.from));
      } catch (error) {
        throw new CliError((error as Error).message);
      }
      const folder = installedDatabaseFolder(config.dataDir);
      mkdirSync(folder, { recursive: true });
      const target = join(folder, FILE_NAMES[database.content]);
      // Copied under another name, then renamed: a process starting meanwhile never reads half a file.
      const partial = `${target}.partial`;
      try {
        writeFileSync(partial, database.bytes);
        renameSync(partial, target);
      } finally {
        rmSync(partial, { force: true });
      }
      const installed = {
        installed: target,
        type: database.type,
        holds: CONTENT_WORDS[database.content],
        built: day(database.built),
        description: database.description,
      };
      if (printedForScripts(options, installed)) return;
      console.log(
        `Installed ${database.type} (${CONTENT_WORDS[database.content]}, built ${installed.built}) as ${target}. The server and workers use it from their next start.`,
      );
      if (database.description) console.log(`Its licence and attribution: ${database.description}`);
      if (database.content !== "asn+country")
        console.log(
          `It provides ${CONTENT_WORDS[database.content]} only: ${database.content === "asn" ? "countries" : "autonomous systems, owners and blocks"} still come from another installed file or the bundled data.`,
        );
      if (config.ipDatabase.length > 0)
        console.log(
          `Note: SIGHTLINE_IP_DATABASE is set (${config.ipDatabase.join(", ")}) and is used instead of the installed files.`,
        );
    });
  ipdb
    .command("status")
    .description("the IP databases in use")
    .option("--json", "print JSON")
    .action((options: { json?: boolean }) => {
      const config = loadConfig();
      useIpDatabases(config);
      let databases: ReturnType<typeof mmdbDatabases>;
      try {
        databases = mmdbDatabases();
      } catch (error) {
        throw new CliError((error as Error).message);
      }
      const rows = databases.map((database) => ({
        file: database.file,
        type: database.type,
        holds: CONTENT_WORDS[database.content],
        built: day(database.built),
      }));
      if (printedForScripts(options, { bundled: rows.length === 0, databases: rows })) return;
      if (rows.length === 0)
        return console.log(
          "No MMDB database is configured: the bundled ip-location-db data answers (its npm updates have stopped). Install a maintained one with `sightline ipdb update --from <file.mmdb>` or set SIGHTLINE_IP_DATABASE.",
        );
      show(rows, ["file", "type", "holds", "built"]);
    });
}
