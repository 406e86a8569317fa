/**
 * The TLS client contexts discovery connects with, each made once per thread: Node builds a secure
 * context for every connection that brings none (about a millisecond each, loading the CA store), and
 * discovery opens one for every TLS service, web request pool and check. Certificates are never
 * verified (connections pass `rejectUnauthorized: false`): discovery looks at them, it does not trust them.
 */
import { createSecureContext, type SecureContext } from "node:tls";

let modern: SecureContext | undefined;
let lenient: SecureContext | undefined;

/** Node's defaults: what web requests and templates use, as a browser-like client would. */
export function modernContext(): SecureContext {
  modern ??= createSecureContext();
  return modern;
}

/** Any server that still speaks TLS is to be seen, however old its protocol or ciphers. */
export function lenientContext(): SecureContext {
  lenient ??= createSecureContext({ minVersion: "TLSv1", ciphers: "DEFAULT:@SECLEVEL=0" });
  return lenient;
}

/** Only TLS 1.0 and 1.1: the handshake that tells whether a server still accepts them. */
export const legacyContext = (): SecureContext => versionContext("tls10", "tls11");

const NODE_VERSIONS = { tls10: "TLSv1", tls11: "TLSv1.1", tls12: "TLSv1.2", tls13: "TLSv1.3" } as const;
export type NodeTlsVersion = keyof typeof NODE_VERSIONS;
const ranged = new Map<string, SecureContext>();

/** Exactly the versions from `min` to `max` (old ones with any cipher, as lenientContext). */
export function versionContext(min: NodeTlsVersion, max: NodeTlsVersion): SecureContext {
  const key = `${min}-${max}`;
  let context = ranged.get(key);
  if (!context) {
    context = createSecureContext({
      minVersion: NODE_VERSIONS[min],
      maxVersion: NODE_VERSIONS[max],
      ciphers: "DEFAULT:@SECLEVEL=0",
    });
    ranged.set(key, context);
  }
  return context;
}
