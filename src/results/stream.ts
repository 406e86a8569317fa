/**
 * Result bodies written as they are read: the envelope `{"success":true,"message":"success","result":…}`
 * around items serialised one by one, or the same items as CSV or NDJSON, in chunks of a few tens of
 * kilobytes, optionally compressed. Memory holds one chunk and one batch of rows, whatever the size of
 * the result.
 *
 * Items are serialised by fast-json-stringify from the route's TypeBox item schema — the same serialiser
 * Fastify uses for whole responses — so a streamed body has exactly the schema's fields: extra fields
 * are dropped, a missing required one is an error rather than a silent gap.
 */

import { Readable } from "node:stream";
import { brotliCompressSync, constants, createBrotliCompress, createGzip, gzipSync } from "node:zlib";
import fastJson from "fast-json-stringify";
import { type TObject, type TSchema, Type } from "typebox";
import { readableNumbers } from "../core/formats.ts";
import { SEVERITIES } from "../core/severities.ts";

export const FORMATS = ["json", "csv", "ndjson"] as const;
export type Format = (typeof FORMATS)[number];

export const CONTENT_TYPES: Record<Format, string> = {
  json: "application/json; charset=utf-8",
  csv: "text/csv; charset=utf-8",
  ndjson: "application/x-ndjson; charset=utf-8",
};

/** Bytes gathered before a chunk is written: few writes, little held. */
const CHUNK_CHARS = 32 * 1024;

const serializers = new WeakMap<object, (value: unknown) => string>();

/** The compiled serialiser of a schema (compiled once per schema object). */
export function serializerOf(schema: TSchema): (value: unknown) => string {
  let serialize = serializers.get(schema);
  if (!serialize) {
    serialize = fastJson(schema as object) as (value: unknown) => string;
    serializers.set(schema, serialize);
  }
  return serialize;
}

/**
 * What a result endpoint streams. A list's items are its elements; a keyed result (hosts) streams
 * `[key, value]` pairs and exports them as rows with the key in column `key`.
 */
export type ResultBody =
  | { shape: "array"; item: TObject; items: AsyncIterable<unknown> }
  | { shape: "object"; item: TObject; key: string; items: AsyncIterable<[string, unknown]> };

/** The schema of one exported row: the item, or for a keyed result the key column then the value's fields. */
export function rowSchema(body: Pick<ResultBody, "shape" | "item"> & { key?: string }): TObject {
  if (body.shape === "array") return body.item;
  return Type.Object({ [body.key ?? "key"]: Type.String(), ...body.item.properties });
}

const rowsOf = (body: ResultBody): AsyncIterable<Record<string, unknown>> =>
  body.shape === "array"
    ? (body.items as AsyncIterable<Record<string, unknown>>)
    : (async function* () {
        for await (const [key, value] of body.items) yield { [body.key]: key, ...(value as object) };
      })();

/** A cell a spreadsheet would run as a formula (OWASP "CSV injection"): it starts with = + - @ tab or CR. */
const FORMULA_START = /^[=+\-@\t\r]/;
/** A plain number (a negative one starts with "-"), which is no formula and stays a number. */
const PLAIN_NUMBER = /^-?\d+(\.\d+)?(e-?\d+)?$/;

/**
 * A CSV field: nested values as JSON text, quoted when it holds a comma, quote or line break (RFC 4180).
 * Text from scanned sites (a page title "=HYPERLINK(…)") must open as text in a spreadsheet: a cell that
 * would start a formula gets OWASP's prefix, a single quote, and is quoted.
 */
export function csvField(value: unknown): string {
  let text =
    value === null || value === undefined
      ? ""
      : typeof value === "object"
        ? JSON.stringify(value)
        : String(value);
  if (FORMULA_START.test(text) && !PLAIN_NUMBER.test(text)) return `"'${text.replaceAll('"', '""')}"`;
  if (/[",\r\n]/.test(text)) text = `"${text.replaceAll('"', '""')}"`;
  return text;
}

export const csvLine = (values: unknown[]) => `${values.map(csvField).join(",")}\r\n`;

export const ENVELOPE_START = '{"success":true,"message":"success","result":';

/** A JSON array's elements (without the brackets), comma-separated, each by the item schema. */
export async function* jsonElements(items: AsyncIterable<unknown>, item: TSchema): AsyncGenerator<string> {
  const serialize = serializerOf(item);
  let first = true;
  for await (const value of items) {
    yield first ? serialize(value) : `,${serialize(value)}`;
    first = false;
  }
}

/** The body's text, piece by piece. */
async function* pieces(body: ResultBody, format: Format): AsyncGenerator<string> {
  if (format === "json") {
    if (body.shape === "array") {
      yield `${ENVELOPE_START}[`;
      yield* jsonElements(body.items, body.item);
      yield "]}";
      return;
    }
    const serialize = serializerOf(body.item);
    yield `${ENVELOPE_START}{`;
    let first = true;
    for await (const [key, value] of body.items) {
      yield `${first ? "" : ","}${JSON.stringify(key)}:${serialize(value)}`;
      first = false;
    }
    yield "}}";
    return;
  }
  const schema = rowSchema(body);
  if (format === "ndjson") {
    const serialize = serializerOf(schema);
    for await (const row of rowsOf(body)) yield `${serialize(row)}\n`;
    return;
  }
  const columns = Object.keys(schema.properties);
  yield csvLine(columns);
  for await (const row of rowsOf(body)) yield csvLine(columns.map((column) => csvValue(row[column], column)));
}

/**
 * A column's value as people and spreadsheets read it: plain numbers where JSON has decimal-exponent
 * strings, and an issue's severity as its word (`critical` … `informational`).
 */
export function csvValue(value: unknown, column: string): unknown {
  const plain = readableNumbers(value, column);
  if (column !== "severity" || typeof plain !== "number") return plain;
  return SEVERITIES[plain - 1] ?? plain;
}

/** The body's text in chunks of about CHUNK_CHARS. */
export function encodeResult(body: ResultBody, format: Format): AsyncGenerator<string> {
  return chunked(pieces(body, format));
}

/** Small pieces of text gathered into chunks of about CHUNK_CHARS. */
export async function* chunked(texts: AsyncIterable<string>): AsyncGenerator<string> {
  let chunk = "";
  for await (const piece of texts) {
    chunk += piece;
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = "";
    }
  }
  if (chunk) yield chunk;
}

export type Encoding = "br" | "gzip" | "identity";

/**
 * The compression to use for an Accept-Encoding header: brotli or gzip, whichever the client ranks
 * higher (brotli on a tie: smaller), or none. `q=0` refuses a coding; `*` stands for any not named.
 */
export function negotiateEncoding(header: string | undefined): Encoding {
  if (!header) return "identity";
  const ranks = new Map<string, number>();
  for (const part of header.split(",")) {
    const [name, ...parameters] = part.trim().toLowerCase().split(";");
    if (!name) continue;
    const q = parameters.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    const value = q === undefined ? 1 : Number(q);
    ranks.set(name.trim(), Number.isFinite(value) ? value : 0);
  }
  const rank = (coding: string) => ranks.get(coding) ?? ranks.get("*") ?? 0;
  const [br, gzip] = [rank("br"), rank("gzip")];
  if (br <= 0 && gzip <= 0) return "identity";
  return br >= gzip ? "br" : "gzip";
}

/**
 * Brotli at quality 4 (not the default 11, which costs tens of times more CPU for a few per cent) and
 * gzip at level 6 compress JSON results 5–20 times at a speed close to writing them.
 */
const BROTLI_OPTIONS = {
  params: { [constants.BROTLI_PARAM_QUALITY]: 4, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT },
};
const GZIP_OPTIONS = { level: 6 };

/** A readable of the chunks, compressed as asked. */
export function bodyStream(chunks: AsyncIterable<string>, encoding: Encoding): Readable {
  const source = Readable.from(chunks, { objectMode: false });
  if (encoding === "identity") return source;
  const compressor = encoding === "br" ? createBrotliCompress(BROTLI_OPTIONS) : createGzip(GZIP_OPTIONS);
  source.on("error", (error) => compressor.destroy(error));
  compressor.on("close", () => source.destroy());
  return source.pipe(compressor);
}

/**
 * A small body whole, compressed as asked on this thread (a millisecond or so for the largest that
 * `sendBody` gathers): through zlib's threads each step of a stream is a turn of the event loop, and while
 * a run works every turn waits behind the run's callbacks.
 */
export function wholeBody(text: string, encoding: Encoding): Buffer {
  const bytes = Buffer.from(text);
  if (encoding === "identity") return bytes;
  return encoding === "br" ? brotliCompressSync(bytes, BROTLI_OPTIONS) : gzipSync(bytes, GZIP_OPTIONS);
}
