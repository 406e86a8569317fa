/**
 * A TLS ClientHello written by hand, and the server's first answer read: which protocol version and
 * cipher suite it picked, or that it refused. Node's OpenSSL will not offer SSLv3 at all (Debian builds
 * it without) and needs @SECLEVEL=0 for TLS 1.0/1.1, so the versions and ciphers a server still
 * accepts are asked this way instead: one ClientHello per question, the answer read up to its first
 * record (at most 16 KB and the deadline), and the connection closed before any key exchange.
 */
import { randomBytes } from "node:crypto";
import { converse } from "./conversation.ts";

export const TLS_VERSIONS = { SSLv3: 0x0300, TLSv1: 0x0301, "TLSv1.1": 0x0302, "TLSv1.2": 0x0303 } as const;
export type TlsVersionName = keyof typeof TLS_VERSIONS;

const VERSION_NAMES = new Map<number, TlsVersionName>(
  Object.entries(TLS_VERSIONS).map(([name, code]) => [code, name as TlsVersionName]),
);

/** What servers commonly accept at TLS 1.2 and before: ECDHE, DHE and RSA key exchange, AES, 3DES, RC4. */
export const BROAD_CIPHERS = [
  0xc02f, 0xc030, 0xc02b, 0xc02c, 0xc013, 0xc014, 0xc009, 0xc00a, 0x009e, 0x009f, 0x0033, 0x0039, 0x009c,
  0x009d, 0x002f, 0x0035, 0x003c, 0x003d, 0xc012, 0x0016, 0x000a, 0x0005, 0x0004,
];

/** Suites nobody should accept: NULL, anonymous, export-grade, DES, 3DES, RC4 (RFC 7465, SWEET32). */
export const WEAK_CIPHERS: Record<number, string> = {
  1: "NULL-MD5",
  2: "NULL-SHA",
  59: "NULL-SHA256",
  49158: "ECDHE-ECDSA-NULL-SHA",
  49168: "ECDHE-RSA-NULL-SHA",
  3: "EXP-RC4-MD5",
  6: "EXP-RC2-CBC-MD5",
  8: "EXP-DES-CBC-SHA",
  20: "EXP-EDH-RSA-DES-CBC-SHA",
  9: "DES-CBC-SHA",
  21: "EDH-RSA-DES-CBC-SHA",
  24: "ADH-RC4-MD5",
  27: "ADH-DES-CBC3-SHA",
  52: "ADH-AES128-SHA",
  58: "ADH-AES256-SHA",
  49176: "AECDH-AES128-SHA",
  49177: "AECDH-AES256-SHA",
  4: "RC4-MD5",
  5: "RC4-SHA",
  49169: "ECDHE-RSA-RC4-SHA",
  49159: "ECDHE-ECDSA-RC4-SHA",
  10: "DES-CBC3-SHA",
  22: "EDH-RSA-DES-CBC3-SHA",
  49170: "ECDHE-RSA-DES-CBC3-SHA",
  49160: "ECDHE-ECDSA-DES-CBC3-SHA",
};

const u16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const u24 = (n: number) => Buffer.from([(n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]);
const vector16 = (body: Buffer) => Buffer.concat([u16(body.length), body]);
const extension = (type: number, body: Buffer) => Buffer.concat([u16(type), vector16(body)]);

export function clientHello(version: number, ciphers: readonly number[]): Buffer {
  // The renegotiation SCSV lets servers that insist on secure renegotiation answer without extensions.
  const suites = Buffer.concat([...ciphers, 0x00ff].map(u16));
  const extensions =
    version === TLS_VERSIONS.SSLv3
      ? Buffer.alloc(0)
      : Buffer.concat([
          // supported_groups: x25519, secp256r1, secp384r1, secp521r1
          extension(0x000a, vector16(Buffer.concat([0x001d, 0x0017, 0x0018, 0x0019].map(u16)))),
          // ec_point_formats: uncompressed
          extension(0x000b, Buffer.from([1, 0])),
          // signature_algorithms: rsa_pss_rsae_sha256, ecdsa_secp256r1_sha256, rsa_pkcs1_sha256/384/512, rsa_pkcs1_sha1, ecdsa_sha1
          extension(
            0x000d,
            vector16(Buffer.concat([0x0804, 0x0403, 0x0401, 0x0501, 0x0601, 0x0201, 0x0203].map(u16))),
          ),
        ]);
  const body = Buffer.concat([
    u16(version),
    randomBytes(32),
    Buffer.from([0]), // no session id
    vector16(suites),
    Buffer.from([1, 0]), // null compression only
    extensions.length ? vector16(extensions) : Buffer.alloc(0),
  ]);
  const handshake = Buffer.concat([Buffer.from([1]), u24(body.length), body]);
  // Record layer version: 3.0 for SSLv3, 3.1 otherwise (what clients send for compatibility).
  return Buffer.concat([
    Buffer.from([22, 3, version === TLS_VERSIONS.SSLv3 ? 0 : 1]),
    u16(handshake.length),
    handshake,
  ]);
}

export type HelloAnswer =
  | { accepted: true; version: TlsVersionName | string; cipher: number; cipherName?: string }
  | { accepted: false; reason: string };

/** Reads a ServerHello (version and suite) or an alert from the start of a server's answer. */
export function parseServerHello(bytes: Buffer): HelloAnswer | undefined {
  if (bytes.length < 5) return undefined;
  const type = bytes[0];
  if (type === 21) return { accepted: false, reason: `alert ${bytes[6] ?? "?"}` };
  if (type !== 22 || bytes[1] !== 3) return { accepted: false, reason: "not TLS" };
  const recordLength = bytes.readUInt16BE(3);
  if (bytes.length < 5 + Math.min(recordLength, 4 + 38)) return undefined;
  const hello = bytes.subarray(5, 5 + recordLength);
  if (hello[0] !== 2 || hello.length < 4 + 38) return { accepted: false, reason: "no ServerHello" };
  const version = hello.readUInt16BE(4);
  const sessionLength = hello[4 + 34];
  const at = 4 + 35 + sessionLength;
  if (hello.length < at + 2) return undefined;
  const cipher = hello.readUInt16BE(at);
  return { accepted: true, version: VERSION_NAMES.get(version) ?? `0x${version.toString(16)}`, cipher };
}

export interface HelloOptions {
  host: string;
  port: number;
  timeoutMs: number;
  signal: AbortSignal;
}

/** Offers `ciphers` at `version`; answers the server's choice, a refusal, or undefined when unreachable. */
export async function helloProbe(
  options: HelloOptions,
  version: number,
  ciphers: readonly number[] = BROAD_CIPHERS,
): Promise<HelloAnswer | undefined> {
  return converse({ ...options, maxBytes: 16 * 1024 }, async (conversation) => {
    conversation.send(clientHello(version, ciphers));
    const answer = await conversation.read((bytes) => parseServerHello(bytes) !== undefined);
    return (
      parseServerHello(answer) ?? {
        accepted: false,
        reason: answer.length ? "truncated answer" : "no answer",
      }
    );
  });
}

/** Whether an accepted answer really is at `version` (a server may answer a higher or lower one). */
export const acceptedAt = (answer: HelloAnswer | undefined, version: TlsVersionName) =>
  answer?.accepted === true && answer.version === version;
