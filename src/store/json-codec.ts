/**
 * How the results' JSON columns are stored (migration 017): entities' `details`, `ancestors` and
 * `task_results`, findings' `details`. They were two thirds of what a run keeps per host, and are very
 * repetitive — the same keys in every row, the same few shapes of value — so a value is compressed with
 * raw deflate primed with a preset dictionary of that vocabulary (json-dictionary.ts), which lets even a
 * row of a hundred bytes refer back to text it never contained.
 *
 * A stored value is bytes:
 * - FORMAT_1, then the raw deflate of the JSON's UTF-8 with DICTIONARY_1; or
 * - the JSON's UTF-8 as it is, where compression would not make it smaller (`[]`, `{}`, short lists).
 * JSON text never starts with a control character, so the first byte tells them apart; and a SQLite row
 * written before migration 017 holds the JSON as text, which `decodeJson` takes as it is. A later format
 * (another dictionary, say) gets its own first byte; FORMAT_1 and its dictionary must then stay readable.
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { DICTIONARY_1 } from "./json-dictionary.ts";

/** The first byte of a value compressed with DICTIONARY_1. */
const FORMAT_1 = 0x01;

/** Shorter than this, a value is stored as it is: a few bytes of JSON cannot shrink by much. */
const COMPRESS_FROM = 24;

const dictionary = Buffer.from(DICTIONARY_1, "utf8");

/**
 * The output buffer zlib fills, one or more per value. Node's default (16 KB) is an ArrayBuffer of its own
 * per call, outside the heap, and thousands of them in a row (a list read, the merge's writes) set off
 * full garbage collections whose cost grows with the heap: in a 400 MB heap a value took about 40 µs to
 * read. Chunks of 1 KB come from Buffer's shared pool: 4–15 µs a value, the larger ones in a few chunks.
 */
const CHUNK = 1024;

/**
 * zlib's state sized to the values, not to its defaults: an 8 KB window holds the dictionary (which must
 * stay under 7.9 KB: deflate reaches back the window less 262 bytes) and the value after it, and a
 * smaller hash table. A deflate then allocates about 50 KB instead of 256 KB, which in a busy server (one
 * deflate per value the merge writes) took twice the time. A value is read with the same window.
 */
const DEFLATE = { dictionary, windowBits: 13, memLevel: 5, chunkSize: CHUNK };
const INFLATE = { dictionary, windowBits: 13, chunkSize: CHUNK };

/** A JSON text as stored. */
export function encodeJson(json: string): Uint8Array {
  const plain = Buffer.from(json, "utf8");
  if (plain.length < COMPRESS_FROM) return plain;
  const deflated = deflateRawSync(plain, DEFLATE);
  if (deflated.length + 1 >= plain.length) return plain;
  const stored = Buffer.allocUnsafe(deflated.length + 1);
  stored[0] = FORMAT_1;
  deflated.copy(stored, 1);
  return stored;
}

/** A value as stored by any version (compressed or plain bytes, or the text of an older SQLite row), as JSON text. */
export function decodeJson(value: string | Uint8Array): string {
  if (typeof value === "string") return value;
  // node:sqlite answers a BLOB as a Uint8Array, pg a bytea as a Buffer: one view of the same bytes.
  const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (bytes[0] === FORMAT_1) return inflateRawSync(bytes.subarray(1), INFLATE).toString("utf8");
  return bytes.toString("utf8");
}

/** A stored value, parsed. */
// biome-ignore lint/suspicious/noExplicitAny: as JSON.parse, typed by the caller
export const parseStored = (value: string | Uint8Array): any => JSON.parse(decodeJson(value));
