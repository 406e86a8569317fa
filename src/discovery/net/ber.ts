/**
 * The few BER (ASN.1 basic encoding rules) shapes LDAP and SNMP need, written and read by hand: a
 * tag, a definite length (short or long form, at most 4 length bytes) and the value. Reading checks
 * every length against what arrived, so a truncated or lying answer reads as nothing.
 */

function encodeLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export const tlv = (tag: number, ...content: Buffer[]) => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), encodeLength(body.length), body]);
};

/** A non-negative INTEGER (minimal two's-complement bytes). */
export function integer(n: number): Buffer {
  const bytes: number[] = [];
  let rest = n;
  do {
    bytes.unshift(rest & 0xff);
    rest = Math.floor(rest / 256);
  } while (rest > 0);
  if (bytes[0] & 0x80) bytes.unshift(0);
  return tlv(0x02, Buffer.from(bytes));
}

export const octets = (text: string | Buffer) =>
  tlv(0x04, typeof text === "string" ? Buffer.from(text) : text);
export const enumerated = (n: number) => tlv(0x0a, Buffer.from([n]));

export interface Tlv {
  tag: number;
  value: Buffer;
  /** Offset just past this element. */
  end: number;
}

/** One element at `at`, or undefined when it has not all arrived (or is malformed). */
export function readTlv(bytes: Buffer, at: number): Tlv | undefined {
  if (at + 2 > bytes.length) return undefined;
  const tag = bytes[at];
  let size = bytes[at + 1];
  let start = at + 2;
  if (size & 0x80) {
    const count = size & 0x7f;
    if (count === 0 || count > 4 || start + count > bytes.length) return undefined;
    size = 0;
    for (let i = 0; i < count; i++) size = size * 256 + bytes[start + i];
    start += count;
  }
  if (start + size > bytes.length) return undefined;
  return { tag, value: bytes.subarray(start, start + size), end: start + size };
}

/** The elements inside a constructed value, in order (stopping at the first that is incomplete). */
export function children(value: Buffer): Tlv[] {
  const out: Tlv[] = [];
  for (let at = 0; at < value.length; ) {
    const element = readTlv(value, at);
    if (!element) break;
    out.push(element);
    at = element.end;
  }
  return out;
}

/** The value of an INTEGER element as a number (up to 6 bytes). */
export const integerValue = (element: Tlv | undefined) =>
  element ? element.value.subarray(0, 6).reduce((n, byte) => n * 256 + byte, 0) : undefined;
