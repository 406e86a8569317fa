/**
 * `vulndb import`: loads NVD CVE 2.0 feeds and the CISA KEV catalog, gzip or plain (told apart by the
 * gzip magic bytes), streaming, in batches, so a 100 MB feed needs a few MB of memory. Which feed a
 * file is comes from its records: NVD items carry `cve`, KEV items `cveID`.
 */

import { createReadStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import { pipeline, Transform } from "node:stream";
import { fileURLToPath } from "node:url";
import { createGunzip } from "node:zlib";
import type { Kysely } from "kysely";
import type { Database, VulnKevTable } from "./schema.ts";
import { streamArrayElements } from "./vuln-feed-stream.ts";
import { type CveRecord, kevItem, nvdItem } from "./vuln-records.ts";
import { emptyCounts, type ImportCounts, VulnerabilityRepository } from "./vulns.ts";

export type FeedKind = "nvd" | "kev" | "empty";

export interface ImportReport extends ImportCounts {
  file: string;
  kind: FeedKind;
  /** KEV's catalogVersion, NVD's timestamp, when the file has one. */
  version?: string;
}

export interface ImportOptions {
  /** Bytes of the file read so far, of its size (compressed bytes for a gzip file). */
  onProgress?: (read: number, total: number) => void;
  batchSize?: number;
  /** Recorded in the import log; defaults to the file path. */
  source?: string;
}

export class FeedError extends Error {}

async function isGzip(path: string): Promise<boolean> {
  const handle = await open(path, "r");
  try {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

export async function importFeedFile(
  db: Kysely<Database>,
  path: string,
  options: ImportOptions = {},
): Promise<ImportReport> {
  const size = (
    await stat(path).catch(() => {
      throw new FeedError(`${path}: no such file`);
    })
  ).size;
  const gzip = await isGzip(path);
  let read = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      read += chunk.length;
      options.onProgress?.(read, size);
      done(null, chunk);
    },
  });
  const raw = createReadStream(path, { highWaterMark: 1 << 20 });
  // pipeline destroys the last stream with any error on the way, so reading it surfaces the error.
  const bytes: AsyncIterable<Buffer> = gzip
    ? pipeline(raw, counter, createGunzip(), () => {})
    : pipeline(raw, counter, () => {});

  const repository = new VulnerabilityRepository(db);
  const batchSize = options.batchSize ?? 500;
  const report: ImportReport = { file: path, kind: "empty", ...emptyCounts() };
  const header: Record<string, string> = {};
  let cves: CveRecord[] = [];
  let rejected: string[] = [];
  let kev: VulnKevTable[] = [];
  const add = (counts: ImportCounts) => {
    report.added += counts.added;
    report.updated += counts.updated;
    report.unchanged += counts.unchanged;
    report.skipped += counts.skipped;
  };
  const flush = async () => {
    if (cves.length > 0 || rejected.length > 0) add(await repository.applyCves(cves, rejected));
    if (kev.length > 0) add(await repository.applyKev(kev));
    cves = [];
    rejected = [];
    kev = [];
  };

  try {
    const items = streamArrayElements(bytes, {
      key: "vulnerabilities",
      onHeader: (key, value) => {
        header[key] = value;
      },
    });
    for await (const item of items) {
      const kind = itemKind(item);
      if (kind && report.kind === "empty") report.kind = kind;
      if (kind === "nvd" && report.kind === "nvd") {
        const parsed = nvdItem(item);
        if (parsed.kind === "cve") cves.push(parsed.record);
        else if (parsed.kind === "rejected") rejected.push(parsed.cveId);
        else report.skipped++;
      } else if (kind === "kev" && report.kind === "kev") {
        const entry = kevItem(item);
        if (entry) kev.push(entry);
        else report.skipped++;
      } else report.skipped++;
      if (cves.length + rejected.length + kev.length >= batchSize) await flush();
    }
    await flush();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof SyntaxError || code === "Z_DATA_ERROR" || code === "Z_BUF_ERROR")
      throw new FeedError(`${path}: not a readable NVD or KEV JSON feed (${(error as Error).message})`);
    throw error;
  }
  if (report.kind === "empty" && !("catalogVersion" in header) && !("format" in header))
    throw new FeedError(`${path}: has no "vulnerabilities" records of NVD CVE 2.0 or CISA KEV`);
  report.version = header.catalogVersion ?? header.timestamp;
  await repository.recordImport(options.source ?? path, report);
  return report;
}

function itemKind(item: unknown): FeedKind | undefined {
  if (!item || typeof item !== "object") return undefined;
  if ("cve" in item) return "nvd";
  if ("cveID" in item) return "kev";
  return undefined;
}

/** The seed shipped with Sightline: a small NVD 2.0 feed of well-known CVEs (see vulndb/README.md). */
export const SEED_FEED = new URL("../../vulndb/seed.json", import.meta.url);

/** Loads the shipped seed when the database has no CVE yet; answers the report, or undefined. */
export async function loadSeedIfEmpty(db: Kysely<Database>): Promise<ImportReport | undefined> {
  if (!(await new VulnerabilityRepository(db).isEmpty())) return undefined;
  return importFeedFile(db, fileURLToPath(SEED_FEED), { source: "vulndb/seed.json" });
}
