/**
 * API key material. Secrets are random 256-bit values, so a salted SHA-256 is enough to store them (a slow
 * password hash would only slow every request); comparison is constant-time.
 */
import { hash, randomBytes, timingSafeEqual } from "node:crypto";

export function generateAccessKey(): string {
  return `SL${randomBytes(12).toString("hex").toUpperCase()}`;
}

export function generateSecretKey(): string {
  return randomBytes(32).toString("base64url");
}

export function hashSecret(secret: string, salt = randomBytes(16).toString("hex")): string {
  const digest = hash("sha256", salt + secret, "hex");
  return `sha256$${salt}$${digest}`;
}

/** A stored hash no real secret matches: checked when the access key is unknown, so both paths cost the same. */
export const DECOY_HASH = hashSecret(randomBytes(32).toString("hex"));

export function verifySecret(secret: string, stored: string): boolean {
  const [scheme, salt, digest] = stored.split("$");
  if (scheme !== "sha256" || !salt || !digest) return false;
  const expected = Buffer.from(digest, "hex");
  // One-shot hashing: every request checks its secret, and a Hash object per call cost more than the digest.
  const actual = hash("sha256", salt + secret, "buffer");
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
