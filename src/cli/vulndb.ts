/**
 * `sightline vulndb …`: the local vulnerability database. `import` loads NVD CVE 2.0 feeds and the
 * CISA KEV catalog (gzip or plain) with a progress bar; `status` counts what is there; `match` lists
 * the CVEs of a product CPE, as discovery would infer them.
 */
import { basename } from "node:path";
import type { Command } from "commander";
import { loadConfig } from "../core/config.ts";
import { parseCpe } from "../core/cpe.ts";
import { openStore, type Store } from "../store/database.ts";
import { migrateToLatest } from "../store/migrate.ts";
import { FeedError, type ImportReport, importFeedFile } from "../store/vuln-importer.ts";
import { VulnerabilityRepository } from "../store/vulns.ts";
import {
  CliError,
  type DataOptions,
  megabytes,
  printedForScripts,
  printJsonLine,
  show,
  stderrProgressBar,
  withJsonLines,
} from "./output.ts";

async function withStore<T>(work: (store: Store) => Promise<T>): Promise<T> {
  const store = openStore(loadConfig());
  try {
    await migrateToLatest(store);
    return await work(store);
  } finally {
    await store.close();
  }
}

async function importWithProgress(store: Store, file: string): Promise<ImportReport> {
  const bar = stderrProgressBar(`${basename(file)} [{bar}] {percentage}% | {done}/{size} MB`);
  let started = false;
  try {
    return await importFeedFile(store.db, file, {
      onProgress: (read, total) => {
        if (!started) {
          bar.start(total, 0, { done: "0.0", size: megabytes(total) });
          started = true;
        }
        bar.update(read, { done: megabytes(read), size: megabytes(total) });
      },
    });
  } catch (error) {
    if (error instanceof FeedError) throw new CliError(error.message);
    throw error;
  } finally {
    if (started) bar.stop();
  }
}

const FEED_NAMES = { nvd: "NVD CVE 2.0 feed", kev: "CISA KEV catalog", empty: "empty feed" };

export function registerVulndbCommands(program: Command): void {
  const vulndb = program
    .command("vulndb")
    .description("the local vulnerability database (NVD CVEs, CISA KEV)");
  withJsonLines(
    vulndb
      .command("import <files...>")
      .description("load NVD CVE 2.0 JSON feeds and the CISA KEV JSON catalog, gzip or plain; repeatable"),
    { jsonl: "print each file's report as a JSON line once it is loaded" },
  ).action(async (files: string[], options: DataOptions) => {
    await withStore(async (store) => {
      const reports: ImportReport[] = [];
      for (const file of files) {
        const report = await importWithProgress(store, file);
        reports.push(report);
        if (options.jsonl) printJsonLine(report);
        else if (!options.json) {
          const version = report.version ? ` ${report.version}` : "";
          console.log(
            `${file}: ${FEED_NAMES[report.kind]}${version}: ${report.added} added, ${report.updated} updated, ` +
              `${report.unchanged} unchanged, ${report.skipped} skipped`,
          );
        }
      }
      if (options.json) printedForScripts(options, reports);
    });
  });
  vulndb
    .command("status")
    .description("count the CVEs, match criteria and KEV entries, and list the last imports")
    .option("--json", "print JSON")
    .action(async (options: DataOptions) => {
      await withStore(async (store) => {
        const repository = new VulnerabilityRepository(store.db);
        const counts = await repository.counts();
        const imports = await repository.recentImports();
        if (printedForScripts(options, { ...counts, imports })) return;
        show(counts);
        console.log("");
        show(imports, ["imported_at", "source", "added", "updated", "unchanged", "skipped"]);
      });
    });
  withJsonLines(
    vulndb
      .command("match <cpe>")
      .description(
        "the CVEs whose criteria cover a product CPE, e.g. cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*",
      ),
  ).action(async (cpe: string, options: DataOptions) => {
    const parsed = parseCpe(cpe);
    if (!parsed)
      throw new CliError(`"${cpe}" is not a CPE 2.3 string (cpe:2.3:part:vendor:product:version:…)`, 2);
    if (parsed.version === "*" || parsed.version === "-")
      throw new CliError("the CPE needs a version to match CVEs against", 2);
    await withStore(async (store) => {
      const cves = await new VulnerabilityRepository(store.db).matchCpe(cpe);
      if (printedForScripts(options, cves)) return;
      show(
        cves.map((cve) => ({ ...cve, kev: cve.kev ? `yes (${cve.kev.date_added})` : "" })),
        ["cve", "cvss_v3_score", "cvss_v2_score", "cwe", "kev", "criteria"],
      );
    });
  });
}
