/**
 * `sightline sources`: the passive sources the server can ask, whether each has its key (never the
 * key: the server does not answer it), whether runs ask it, and how it fared in the latest run of your
 * collections that asked it.
 */
import type { Command } from "commander";
import { ApiClient, type ClientOptions, clientSettings, withClientOptions } from "./api-client.ts";
import { type DataOptions, output, printedForScripts, withJsonLines } from "./output.ts";
import { type RunSourceLine, sourceStatusText } from "./runs.ts";

interface SourceListing {
  source: string;
  keyed: boolean;
  key_set: boolean;
  chosen: boolean;
  reason: string | null;
  rate_limit: string;
  last_run: number | null;
  last_status: RunSourceLine | null;
}

export function registerSourceCommands(program: Command): void {
  withJsonLines(
    withClientOptions(
      program
        .command("sources")
        .description("the passive sources: key set or not (never the key), asked or not, their last status"),
    ),
  ).action(async (options: ClientOptions & DataOptions) => {
    const client = new ApiClient(clientSettings(options));
    const sources = await client.get<SourceListing[]>("/api/sources");
    if (printedForScripts(options, sources)) return;
    output(
      {},
      sources.map((source) => ({
        source: source.source,
        key: source.keyed ? (source.key_set ? "set" : "not set") : "none needed",
        asked: source.chosen ? "yes" : `no: ${source.reason}`,
        rate: source.rate_limit,
        last: source.last_status
          ? `run ${source.last_run}: ${sourceStatusText(source.last_status)}`
          : "never asked",
      })),
      ["source", "key", "asked", "rate", "last"],
    );
  });
}
