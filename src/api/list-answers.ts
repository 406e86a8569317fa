/**
 * What a result list's answer is made of besides its rows — its cache key (from which its ETag is made),
 * the link to the next page, the ETag check and the headers of a cached answer (results.ts).
 */
import { close } from "node:fs";
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import { type CachedBody, type CachedHeaders, type CacheHit, writeCachedFile } from "../results/cache.ts";
import type { Encoding } from "../results/stream.ts";
import type { CollectionRow } from "../store/collections.ts";
import type { Page, ResultRun } from "../store/result-queries.ts";

/**
 * What a list's answer is a function of. A finished run's results never change; besides the run, a list
 * reads at request time only the collection (`created_at` makes a collection deleted and made again
 * under the same name another key even where an id could come back) and, for connections, its seeds
 * (read for the key: `readsBesidesRun` in results.ts). Entity flags (hidden, scoped) are written by runs
 * only. The vulnerability database, which `sightline vulndb import` changes from another process, is
 * read by the vulnerabilities list, which is therefore not cached.
 */
export function resultCacheKey(
  path: string,
  collection: Pick<CollectionRow, "id" | "name" | "created_at" | "updated_at">,
  run: ResultRun,
  query: object,
  encoding: Encoding,
  besidesRun: unknown[] = [],
): string {
  const normalised = Object.entries(query)
    .filter(([, value]) => value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([
    path,
    collection.id,
    collection.name,
    collection.created_at,
    collection.updated_at,
    run.runId,
    run.finishedAt,
    normalised,
    encoding,
    besidesRun,
  ]);
}

/** The Link header to the page after this one, if there is more. */
export function nextPageLink(requestUrl: string, page: Page, total: number): string | undefined {
  if (page.limit === undefined) return undefined;
  const next = (page.offset ?? 0) + page.limit;
  if (next >= total) return undefined;
  const url = new URL(requestUrl, "http://placeholder");
  url.searchParams.set("limit", String(page.limit));
  url.searchParams.set("offset", String(next));
  return `<${url.pathname}${url.search}>; rel="next"`;
}

/** Whether an If-None-Match header names the ETag (weak comparison, as RFC 9110 asks for GET). */
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === "*") return true;
  return header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}

/** The headers a body carries whether it is read or cached. */
export function representationHeaders(headers: CachedHeaders): Record<string, string> {
  return {
    "content-type": headers.contentType,
    ...(headers.contentDisposition ? { "content-disposition": headers.contentDisposition } : {}),
    vary: "Accept-Encoding",
    ...(headers.contentEncoding ? { "content-encoding": headers.contentEncoding } : {}),
  };
}

/**
 * The headers of a cached answer: the page's, the ETag and `X-Cache: HIT`, and for a 200 its body's
 * (a 304, the client having it, carries no representation but `Vary`).
 */
export function cachedAnswerHeaders(
  entry: CachedBody,
  link: string | undefined,
  notModified: boolean,
): Record<string, string> {
  return {
    "x-total-count": String(entry.headers.total),
    ...(link ? { link } : {}),
    ...(notModified
      ? { vary: "Accept-Encoding" }
      : { ...representationHeaders(entry.headers), "content-length": String(entry.size) }),
    etag: entry.etag,
    "x-cache": "HIT",
  };
}

/**
 * Writes a cached answer to the raw response: 304 (no body; a file's descriptor is closed) or 200 with
 * its bytes, from memory or from its file in reused read buffers (writeCachedFile).
 */
export function writeCachedAnswer(
  response: ServerResponse,
  hit: CacheHit,
  notModified: boolean,
  headers: OutgoingHttpHeaders,
): void {
  response.writeHead(notModified ? 304 : 200, headers);
  if (notModified) {
    if (hit.fd !== undefined) close(hit.fd, () => {});
    response.end();
  } else if (hit.fd === undefined) response.end(hit.memory);
  else writeCachedFile(hit.fd, hit.entry.size, response);
}
