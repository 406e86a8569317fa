/**
 * One discovery module per passive source (src/discovery/sources/<id>.ts), all made the same way: the
 * source is asked about a domain (or an address) through the shared client, its names normalised; names
 * outside the collection's scope are recorded as they are (the engine marks them unscoped: connections,
 * never explored); names inside it are candidates, resolved (A, AAAA, CNAME) through the wildcard filter
 * before they become DnsRecord entities. A name the source knows and DNS no longer answers is kept on the
 * asked entity as a historical name (`historical_names`: name, source, when seen), not as a host. Every
 * ask reports the source's status, so a source that failed never reads as "no names".
 */

import { setBounded } from "../../core/bounded-map.ts";
import type { FoundEntity } from "../../core/entities.ts";
import { formatTimestamp } from "../../core/formats.ts";
import { emptyStatus, type SourceId, sourceInfo } from "../../core/sources.ts";
import { CandidateResolver } from "../candidates.ts";
import type { DiscoveryContext, DiscoveryModule, TargetSourceStatus } from "../module.ts";
import { DnsClient } from "../net/dns-client.ts";
import { SourceClient, SourceFailure } from "../net/source-client.ts";
import { PASSIVE_SOURCES } from "../sources/index.ts";
import { normaliseName } from "../sources/names.ts";
import type { PassiveSource } from "../sources/source.ts";

/** Pages asked of one source about one target. */
const MAX_PAGES = 20;
/** Historical names kept on one entity per source (the count is in the status). */
const MAX_HISTORICAL = 1000;
/**
 * Addresses a per-address source (InternetDB) is asked about per run and process: a seeded /16 would
 * otherwise be 65,536 requests at the source's pace, holding the run for days.
 */
export const MAX_ADDRESSES_PER_RUN = 256;
const addressesAsked = new Map<string, number>();

export const sourceModuleName = (id: string) => `source-${id}`;

export function passiveSourceModule(source: PassiveSource): DiscoveryModule {
  return {
    name: sourceModuleName(source.id),
    consumes: source.consumes,
    produces: ["DnsRecord"],
    waits: true,
    run: (entity, ctx) => askSource(source, entity, ctx),
  };
}

export const PASSIVE_SOURCE_MODULES: readonly DiscoveryModule[] =
  Object.values(PASSIVE_SOURCES).map(passiveSourceModule);

async function askSource(source: PassiveSource, entity: FoundEntity, ctx: DiscoveryContext): Promise<void> {
  const access = ctx.settings.sources;
  const id: SourceId = source.id;
  const info = sourceInfo(id);
  const status: TargetSourceStatus = { ...emptyStatus(id), target: entity.name, live: [] };
  if (!access?.chosen.includes(id)) {
    ctx.reportSource?.({ ...status, queried: false, reason: "not chosen for this run" });
    return;
  }
  if (entity.kind === "IpAddress") {
    const key = `${ctx.runId ?? 0} ${id}`;
    const asked = addressesAsked.get(key) ?? 0;
    setBounded(addressesAsked, key, asked + 1, 256);
    // Past the bound the source is not asked; the run is told once, not once per address.
    if (asked === MAX_ADDRESSES_PER_RUN)
      ctx.note(
        `${id} was asked about ${MAX_ADDRESSES_PER_RUN} addresses, the bound per run; the run's other addresses were not asked.`,
      );
    if (asked >= MAX_ADDRESSES_PER_RUN) return;
  }
  const client = new SourceClient({
    id,
    baseUrl: access.urls[id] ?? info.url,
    requestsPerMinute: access.requestsPerMinute || info.requestsPerMinute,
    timeoutMs: access.timeoutMs,
    maxBytes: access.maxBytes,
    retries: access.retries,
    signal: ctx.signal,
  });
  // The status is reported whatever happens after the ask: a module that stops on a surprise must not
  // leave its source reading as never asked.
  try {
    const raw = new Set<string>();
    let bounded = false;
    const targetDetails: Record<string, unknown> = {};
    try {
      await source.query({
        target: entity.name,
        key: access.keys[id] ?? "",
        client,
        maxPages: MAX_PAGES,
        add(names) {
          for (const name of names) {
            if (raw.size >= access.maxNames) {
              bounded = true;
              return false;
            }
            raw.add(name);
          }
          return true;
        },
        detail: (details) => Object.assign(targetDetails, details),
      });
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      status.failure =
        error instanceof SourceFailure
          ? error.reason
          : `parse error: ${String((error as Error).message).slice(0, 120)}`;
    }
    status.requests = client.requests;
    status.answered = client.answered;
    status.rateLimited = client.rateLimited;

    const names = new Set<string>();
    const refusals = new Map<string, string>();
    for (const candidate of raw) {
      const checked = normaliseName(candidate);
      if (checked.ok) names.add(checked.name);
      else {
        status.refused++;
        if (refusals.size < 3) refusals.set(printable(candidate), checked.reason);
      }
    }
    status.names = names.size;
    const covers = ctx.covers ?? (() => false);
    const inScope = [...names].filter((name) => name !== entity.name && covers(name));
    status.inScope = inScope.length + (names.has(entity.name) ? 1 : 0);
    for (const name of names)
      if (!covers(name)) ctx.emit({ kind: "DnsRecord", name, details: { sources: [id] } });

    const seen = formatTimestamp(new Date());
    const historical: Array<{ name: string; source: string; seen_at: string }> = [];
    let wildcards = 0;
    let unanswered = 0;
    await new CandidateResolver(new DnsClient(ctx)).resolve(inScope, (resolution) => {
      if (resolution.state === "live") {
        status.live.push(resolution.name);
        ctx.emit({ kind: "DnsRecord", name: resolution.name, details: { sources: [id] } });
      } else if (resolution.state === "gone") {
        status.historical++;
        if (historical.length < MAX_HISTORICAL)
          historical.push({ name: resolution.name, source: id, seen_at: seen });
      } else if (resolution.state === "wildcard") wildcards++;
      else unanswered++;
    });
    if (historical.length > 0 || Object.keys(targetDetails).length > 0)
      ctx.emit({
        kind: entity.kind,
        name: entity.name,
        details: { ...targetDetails, ...(historical.length > 0 ? { historical_names: historical } : {}) },
      });

    if (bounded)
      ctx.note(
        `${id} gave more than ${access.maxNames} names for ${entity.name}; the rest were dropped (SIGHTLINE_SOURCE_MAX_NAMES).`,
      );
    if (refusals.size > 0)
      ctx.note(
        `${id} gave ${status.refused} names for ${entity.name} that were refused, e.g. ${[...refusals]
          .map(([name, reason]) => `"${name}" (${reason})`)
          .join(", ")}.`,
      );
    if (wildcards > 0)
      ctx.note(
        `${wildcards} names ${id} gave under ${entity.name} answered like a wildcard and were dropped.`,
      );
    if (unanswered > 0)
      ctx.note(`${unanswered} names ${id} gave under ${entity.name} got no DNS answer; they were not kept.`);
  } catch (error) {
    if (!ctx.signal.aborted) status.failure ??= `error: ${(error as Error).message.slice(0, 120)}`;
    throw error;
  } finally {
    ctx.reportSource?.(status);
  }
}

/** A refused name as a note may show it: control characters escaped (JSON's way), at most 80 characters. */
const printable = (name: string) => JSON.stringify(name.slice(0, 80)).slice(1, -1);
