/**
 * API key material. Two kinds of secret, told apart by the stored hash's scheme:
 * - generated secrets are random 256-bit values: a salted SHA-256 (`sha256$salt$digest`) is enough to
 *   store them (a slow hash would only slow every request, and guessing 2^256 values is out of reach);
 * - secrets chosen by people (the bootstrap secret) may be guessable: they are stored with scrypt
 *   (`scrypt$N$r$p$salt$digest`, node:crypto, run on libuv's thread pool, never on the event loop).
 * Comparison is constant-time. Hashes of both schemes verify, so keys stored before scrypt keep working.
 */
import { hash, randomBytes, scrypt, timingSafeEqual } from "node:crypto";

/** scrypt cost: N = 2^15, r = 8, p = 1 (OWASP's minimum is 2^17 with r 8 p 1 for passwords; a secret of at
 * least 32 characters needs less, and this keeps a verification near 50 ms on one core). */
const SCRYPT = { log2N: 15, r: 8, p: 1, keylen: 32 };

export function generateAccessKey(): string {
  return `SL${randomBytes(12).toString("hex").toUpperCase()}`;
}

export function generateSecretKey(): string {
  return randomBytes(32).toString("base64url");
}

/** The fast hash, for generated 256-bit secrets. */
export function hashSecret(secret: string, salt = randomBytes(16).toString("hex")): string {
  const digest = hash("sha256", salt + secret, "hex");
  return `sha256$${salt}$${digest}`;
}

function scryptDigest(secret: string, salt: string, log2N: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(
      secret,
      salt,
      SCRYPT.keylen,
      { N: 2 ** log2N, r, p, maxmem: 256 * 2 ** log2N * r + 1024 * 1024 },
      (error, key) => (error ? reject(error) : resolve(key)),
    ),
  );
}

/** The slow hash, for secrets chosen by people. */
export async function hashChosenSecret(
  secret: string,
  salt = randomBytes(16).toString("hex"),
): Promise<string> {
  const { log2N, r, p } = SCRYPT;
  const digest = await scryptDigest(secret, salt, log2N, r, p);
  return `scrypt$${log2N}$${r}$${p}$${salt}$${digest.toString("hex")}`;
}

/** Whether a stored hash is of the fast kind (and so may be checked on the event loop). */
export function isFastHash(stored: string): boolean {
  return stored.startsWith("sha256$");
}

/** A stored hash no real secret matches: checked when the access key is unknown, so both paths cost the same. */
export const DECOY_HASH = hashSecret(randomBytes(32).toString("hex"));

/** Checks a secret against a fast (sha256) hash, synchronously. */
export function verifyFastSecret(secret: string, stored: string): boolean {
  const [scheme, salt, digest] = stored.split("$");
  if (scheme !== "sha256" || !salt || !digest) return false;
  const expected = Buffer.from(digest, "hex");
  // One-shot hashing: every request checks its secret, and a Hash object per call cost more than the digest.
  const actual = hash("sha256", salt + secret, "buffer");
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** Checks a secret against a stored hash of either scheme. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  if (isFastHash(stored)) return verifyFastSecret(secret, stored);
  const [scheme, log2N, r, p, salt, digest] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !digest) return false;
  const cost = [Number(log2N), Number(r), Number(p)];
  if (!cost.every((n) => Number.isInteger(n) && n > 0) || cost[0] > 20) return false;
  const expected = Buffer.from(digest, "hex");
  const actual = await scryptDigest(secret, salt, cost[0], cost[1], cost[2]);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
