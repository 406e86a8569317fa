/**
 * Web servers that answer every path alike — a single-page application's fallback, a WAF's block
 * page served with 200, a parked domain, a redirect of everything to a login — make any check that
 * asks for a path and accepts a 200 see a file that is not there. One request for a path no site has
 * (random, new each run) tells them apart: an application that answers it with a success or a redirect
 * is a catch-all, and what it answered is the baseline. A later answer to another path that reads like
 * the baseline (the same status, and the same body once the path it echoes is taken out, or the same
 * non-empty title at about the same length) proves nothing about that path.
 */
import { createHash, randomBytes } from "node:crypto";
import type { HttpClient, HttpExchange } from "../net/http-fetch.ts";
import { stableBody } from "../volatile.ts";

/** What a catch-all application answered for a path that does not exist, as kept in its details. */
export interface CatchAllBaseline {
  status: number;
  /** Where a redirect sent it, the asked path taken out (a login's `?next=`). */
  location?: string;
  length: number;
  title: string;
  /** SHA-256 of the body with the asked path and the tokens that change per visit taken out. */
  digest: string;
}

/** Bodies whose lengths differ by less than this share (or 100 bytes) read as the same page. */
const LENGTH_TOLERANCE = 0.1;

const titleOf = (body: string) =>
  (/<title[^>]*>([^<]{0,200})<\/title>/i.exec(body)?.[1] ?? "").replace(/\s+/g, " ").trim();

const decoded = (path: string) => {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
};

/** `text` without the path the exchange asked for (as sent, encoded and decoded): pages echo it. */
function withoutPath(exchange: HttpExchange, text: string): string {
  const url = new URL(exchange.url);
  const paths = [url.pathname + url.search, url.pathname, decoded(url.pathname)];
  for (const path of [...new Set(paths)].filter((p) => p.length > 1).sort((a, b) => b.length - a.length)) {
    text = text.split(path).join("").split(encodeURIComponent(path)).join("");
  }
  return text;
}

/** The body as compared: the asked path and the tokens that change per visit taken out. */
const comparable = (exchange: HttpExchange) =>
  stableBody(withoutPath(exchange, exchange.body.toString("utf8"))).text;

/** Where a redirect points, the asked path taken out. */
function locationOf(exchange: HttpExchange): string | undefined {
  const location = exchange.headers.find(([name]) => name === "location")?.[1];
  if (location === undefined) return undefined;
  try {
    return withoutPath(exchange, new URL(location, exchange.url).href);
  } catch {
    return location;
  }
}

const digestOf = (text: string) => createHash("sha256").update(text).digest("hex");

/** A path no application serves: new for every probe, so no cache or rule can know it. */
export const unlikelyPath = () => `/${randomBytes(8).toString("hex")}-not-here.html`;

/**
 * Asks the application at `origin` for a random path: its baseline when it answers with a success or
 * a redirect, undefined when it says the path is not there (or does not answer).
 */
export async function probeCatchAll(
  client: HttpClient,
  origin: string,
): Promise<CatchAllBaseline | undefined> {
  const path = unlikelyPath();
  let exchange: HttpExchange;
  try {
    exchange = await client.fetch(new URL(path, origin).href);
  } catch {
    return undefined;
  }
  if (exchange.status < 200 || exchange.status >= 400) return undefined;
  const body = comparable(exchange);
  const location = locationOf(exchange);
  return {
    status: exchange.status,
    ...(location ? { location } : {}),
    length: body.length,
    title: titleOf(body),
    digest: digestOf(body),
  };
}

/** The baseline kept in an application's details, when it is one (details come back as plain JSON). */
export function catchAllOf(details: Record<string, unknown> | undefined): CatchAllBaseline | undefined {
  const value = details?.catch_all as Partial<CatchAllBaseline> | undefined;
  return value && typeof value.status === "number" && typeof value.digest === "string"
    ? (value as CatchAllBaseline)
    : undefined;
}

/** Whether `exchange` reads like the catch-all's answer to a path that does not exist. */
export function answersLikeCatchAll(baseline: CatchAllBaseline, exchange: HttpExchange): boolean {
  if (exchange.status !== baseline.status) return false;
  if (baseline.status >= 300) return locationOf(exchange) === baseline.location;
  const body = comparable(exchange);
  if (digestOf(body) === baseline.digest) return true;
  // A page with a title (an HTML fallback) may carry a varying part the digest sees; a file has none.
  const tolerance = Math.max(100, baseline.length * LENGTH_TOLERANCE);
  return (
    baseline.title !== "" &&
    titleOf(body) === baseline.title &&
    Math.abs(body.length - baseline.length) <= tolerance
  );
}
