/**
 * TLS on a service: the certificate it presents (subject, issuer, SANs, validity, serial, SHA-256
 * fingerprint, key type and size, self-signed, expired) and whether it still accepts TLS 1.0/1.1.
 * Certificates are entities named "<common name> (<sha256>)"; their names become DNS records (the
 * engine keeps those outside scope unexplored); an expired or self-signed certificate is an issue of
 * the service that serves it.
 */
import { type KeyObject, X509Certificate } from "node:crypto";
import { connect, type TLSSocket } from "node:tls";
import { normaliseHostname } from "../core/seeds.ts";
import { issue } from "./findings.ts";
import type { DiscoveryModule, EntityRef } from "./module.ts";

export interface CertificateFacts {
  subject: string;
  subjectCommonName: string;
  issuer: string;
  issuerCommonName: string;
  altNames: string[];
  notBefore: string;
  notAfter: string;
  serialNumber: string;
  sha256: string;
  keyType: string;
  keySize: number;
  selfSigned: boolean;
  expired: boolean;
}

export type Handshake =
  | { ok: true; protocol: string; cipher: string; certificate?: X509Certificate }
  | { ok: false; reason: string };

const CURVE_BITS: Record<string, number> = { prime256v1: 256, secp384r1: 384, secp521r1: 521 };

/** "CN=a\nO=b" (Node's form) as "CN=a, O=b", the usual one-line form. */
const oneLine = (name: string) => name.split("\n").filter(Boolean).join(", ");
const commonName = (name: string) => /^CN=(.*)$/m.exec(name)?.[1]?.trim() ?? "";

export function certificateFacts(certificate: X509Certificate, now = new Date()): CertificateFacts {
  // A key of an algorithm OpenSSL cannot load (or a broken one) leaves the rest of the facts readable.
  let key: KeyObject | undefined;
  try {
    key = certificate.publicKey;
  } catch {
    key = undefined;
  }
  const details = key?.asymmetricKeyDetails ?? {};
  const notAfter = new Date(certificate.validTo);
  return {
    subject: oneLine(certificate.subject),
    subjectCommonName: commonName(certificate.subject),
    issuer: oneLine(certificate.issuer),
    issuerCommonName: commonName(certificate.issuer),
    altNames: (certificate.subjectAltName ?? "")
      .split(/,\s*/)
      .filter((entry) => entry.startsWith("DNS:"))
      .map((entry) => entry.slice(4).toLowerCase()),
    notBefore: new Date(certificate.validFrom).toISOString(),
    notAfter: notAfter.toISOString(),
    serialNumber: certificate.serialNumber.toLowerCase(),
    sha256: certificate.fingerprint256.replace(/:/g, "").toLowerCase(),
    keyType: key?.asymmetricKeyType ?? "unknown",
    keySize: details.modulusLength ?? CURVE_BITS[details.namedCurve ?? ""] ?? 0,
    // Issuer is subject and its own key verifies it (checkIssued would also demand keyCertSign usage).
    selfSigned: certificate.subject === certificate.issuer && key !== undefined && verifies(certificate, key),
    expired: notAfter.getTime() < now.getTime(),
  };
}

function verifies(certificate: X509Certificate, key: KeyObject): boolean {
  try {
    return certificate.verify(key);
  } catch {
    return false;
  }
}

/** "<common name> (<sha256>)", the spec's SslCertificate name. */
export function certificateName(facts: CertificateFacts): string {
  return `${facts.subjectCommonName || facts.altNames[0] || "no common name"} (${facts.sha256})`;
}

/** One TLS handshake, certificate unchecked (we want to see it, not trust it). */
export function handshake(
  host: string,
  port: number,
  options: { timeoutMs: number; signal: AbortSignal; legacyOnly?: boolean },
): Promise<Handshake> {
  return new Promise((resolve) => {
    let socket: TLSSocket;
    const finish = (result: Handshake) => {
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(result);
    };
    const onAbort = () => finish({ ok: false, reason: "cancelled" });
    const timer = setTimeout(() => finish({ ok: false, reason: "timeout" }), options.timeoutMs);
    socket = connect({
      host,
      port,
      rejectUnauthorized: false,
      ...(options.legacyOnly
        ? { minVersion: "TLSv1", maxVersion: "TLSv1.1", ciphers: "DEFAULT:@SECLEVEL=0" }
        : {}),
    });
    options.signal.addEventListener("abort", onAbort, { once: true });
    socket.once("secureConnect", () => {
      // Only the leaf is read: the chain (at most OpenSSL's 100 KiB certificate list) is not walked.
      let certificate: X509Certificate | undefined;
      try {
        const raw = socket.getPeerCertificate(false)?.raw;
        certificate = raw ? new X509Certificate(raw) : undefined;
      } catch (error) {
        return finish({ ok: false, reason: `unreadable certificate: ${(error as Error).message}` });
      }
      finish({
        ok: true,
        protocol: socket.getProtocol() ?? "",
        cipher: socket.getCipher()?.name ?? "",
        certificate,
      });
    });
    socket.once("error", (error) => finish({ ok: false, reason: error.message }));
    socket.once("close", () => finish({ ok: false, reason: "closed" }));
  });
}

export const tlsCertificates: DiscoveryModule = {
  name: "tls",
  consumes: ["NetworkService"],
  produces: ["SslCertificate", "DnsRecord"],
  async run(entity, ctx) {
    const details = entity.details ?? {};
    const address = String(details.ip_address ?? "");
    const port = Number(details.port);
    // A service that spoke first (SSH, SMTP, FTP, MySQL) is not TLS on connect.
    if (!address || !port || (typeof details.banner === "string" && details.banner !== "")) return;
    if (!ctx.mayTouch(address)) return;
    const options = { timeoutMs: ctx.settings.timeoutMs, signal: ctx.signal };
    const result = await ctx.throttle.run(address, () => handshake(address, port, options), ctx.signal);
    if (!result.ok || !result.certificate) return;

    const facts = certificateFacts(result.certificate);
    const name = certificateName(facts);
    const most = ctx.settings.limits.tlsMaxNames;
    const names = [...new Set([facts.subjectCommonName, ...facts.altNames])];
    if (names.length > most)
      ctx.note(
        `The certificate of ${entity.name} names ${names.length} DNS names; only the first ${most} were kept (SIGHTLINE_TLS_MAX_NAMES).`,
      );
    const service: EntityRef = { kind: "NetworkService", name: entity.name };
    ctx.emit({
      kind: "SslCertificate",
      name,
      details: {
        subject: facts.subject,
        subject_common_name: facts.subjectCommonName,
        issuer: facts.issuer,
        issuer_common_name: facts.issuerCommonName,
        alt_names: facts.altNames.slice(0, most),
        alt_names_count: facts.altNames.length,
        not_before: facts.notBefore,
        not_after: facts.notAfter,
        serial: facts.serialNumber,
        sha256_fingerprint: facts.sha256,
        key_type: facts.keyType,
        key_size: facts.keySize,
        self_signed: facts.selfSigned,
        expired: facts.expired,
        endpoints: [entity.name],
      },
    });
    for (const dnsName of names.slice(0, most)) {
      const canonical = dnsName.startsWith("*.") ? undefined : normaliseHostname(dnsName);
      if (canonical) ctx.emit({ kind: "DnsRecord", name: canonical, details: { certificates: [name] } });
    }
    if (facts.expired)
      ctx.raise(issue("expiredCertificate", service, { certificate: name, not_after: facts.notAfter }));
    if (facts.selfSigned)
      ctx.raise(issue("selfSignedCertificate", service, { certificate: name, subject: facts.subject }));

    const legacy = await ctx.throttle.run(
      address,
      () => handshake(address, port, { ...options, legacyOnly: true }),
      ctx.signal,
    );
    if (legacy.ok)
      ctx.raise(issue("weakTlsProtocol", service, { protocol: legacy.protocol, cipher: legacy.cipher }));
    ctx.emit({
      kind: "NetworkService",
      name: entity.name,
      details: {
        tls: true,
        tls_protocol: result.protocol,
        tls_cipher: result.cipher,
        certificate: name,
        weak_protocols: legacy.ok ? [legacy.protocol] : [],
      },
    });
  },
};
