/**
 * What one passive source is: its id (its catalogue entry, src/core/sources.ts), the kinds it is asked
 * about, and `query`, which makes the source's requests through the shared client (pacing, retries and
 * bounds are the client's) and hands over the names its answers hold. Turning names into candidates,
 * scope, resolution and the run's status are the passive-source module's (modules/passive-sources.ts).
 */
import type { SourceId } from "../../core/sources.ts";
import type { SourceClient } from "../net/source-client.ts";

export interface SourceQuery {
  /** The domain (or, for per-address sources, the address) asked about. */
  target: string;
  /** The source's key; "" for a keyless source. */
  key: string;
  client: SourceClient;
  /** Raw names from an answer; false once the run's bound on names is reached (stop paging). */
  add(names: Iterable<string>): boolean;
  /** Facts about the target itself (an address's ports and CPEs), recorded as its details. */
  detail(details: Record<string, unknown>): void;
  /** Pages asked at most per target. */
  maxPages: number;
}

export interface PassiveSource {
  id: SourceId;
  consumes: Array<"Domain" | "IpAddress">;
  query(query: SourceQuery): Promise<void>;
}

/** A JSON value's string items (a source's list of names), whatever else the list holds. */
export const stringsOf = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];

/** Labels a source gives relative to the domain (`www`, or "" for the apex), as names. */
export const underDomain = (labels: string[], domain: string) =>
  labels.map((label) => (label === "" ? domain : `${label}.${domain}`));

/** An object's field, when the value is an object. */
export const field = (value: unknown, name: string): unknown =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[name]
    : undefined;
