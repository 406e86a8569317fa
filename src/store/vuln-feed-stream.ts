/**
 * Streams the elements of one array of a large JSON document (NVD's and KEV's `vulnerabilities`)
 * without holding the document: bytes are scanned for structure, and each element's bytes are parsed
 * on their own. Structural characters are ASCII, and UTF-8 never uses ASCII bytes inside a multi-byte
 * character, so scanning bytes is safe.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;

export interface ArrayStreamOptions {
  /** The top-level key whose array is streamed. */
  key: string;
  /** Called with each top-level string member seen (e.g. KEV's catalogVersion). */
  onHeader?: (key: string, value: string) => void;
}

export async function* streamArrayElements(
  source: AsyncIterable<Buffer | string>,
  options: ArrayStreamOptions,
): AsyncGenerator<unknown> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let inArray = false;
  let elementStart = -1;
  let pieces: Buffer[] = [];
  // Top-level strings (keys and values) are short; they are collected byte by byte.
  let topString: number[] | undefined;
  let lastTopString: string | undefined;
  let pendingKey: string | undefined;
  let sawRoot = false;

  for await (const input of source) {
    const chunk = typeof input === "string" ? Buffer.from(input) : input;
    if (elementStart >= 0) elementStart = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (inString) {
        if (topString) topString.push(byte);
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) escaped = true;
        else if (byte === QUOTE) {
          inString = false;
          if (topString) {
            topString.pop();
            const text = JSON.parse(`"${Buffer.from(topString).toString("utf8")}"`) as string;
            topString = undefined;
            if (pendingKey !== undefined) {
              options.onHeader?.(pendingKey, text);
              pendingKey = undefined;
            } else lastTopString = text;
          }
        }
        continue;
      }
      if (byte === QUOTE) {
        inString = true;
        if (depth === 1) topString = [];
      } else if (byte === COLON && depth === 1) {
        pendingKey = lastTopString;
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        if (depth === 0) {
          if (byte !== OPEN_OBJECT) throw new SyntaxError("the feed is not a JSON object");
          sawRoot = true;
        }
        if (depth === 1) {
          if (byte === OPEN_ARRAY && pendingKey === options.key) inArray = true;
          pendingKey = undefined;
        } else if (depth === 2 && inArray && byte === OPEN_OBJECT) {
          elementStart = i;
          pieces = [];
        }
        depth++;
      } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        depth--;
        if (depth < 0) throw new SyntaxError("unbalanced brackets in the feed");
        if (depth === 2 && elementStart >= 0) {
          pieces.push(chunk.subarray(elementStart, i + 1));
          elementStart = -1;
          yield JSON.parse(Buffer.concat(pieces).toString("utf8"));
          pieces = [];
        } else if (depth === 1 && inArray) inArray = false;
      } else if (depth === 1 && pendingKey !== undefined && byte > 0x20 && byte !== 0x2c) {
        // A number, boolean or null member: not a header we keep.
        pendingKey = undefined;
      }
    }
    if (elementStart >= 0) pieces.push(chunk.subarray(elementStart));
  }
  if (!sawRoot) throw new SyntaxError("the feed is empty or not JSON");
  if (depth !== 0 || inString) throw new SyntaxError("the feed ends in the middle of a JSON value");
}
