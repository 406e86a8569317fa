/**
 * TLS on a service: the certificate it presents (subject, issuer, SANs, validity, serial, SHA-256
 * fingerprint, key type and size, self-signed, expired) and whether it still accepts TLS 1.0/1.1.
 * Certificates are entities named "<common name> (<sha256>)"; their names become DNS records (the
 * engine keeps those outside scope unexplored); an expired or self-signed certificate is an issue of
 * the service that serves it.
 */

import { type KeyObject, X509Certificate } from "node:crypto";
import { connect, type TLSSocket } from "node:tls";
import type { EntityRef } from "../../core/entities.ts";
import { normaliseHostname } from "../../core/seeds.ts";
import { serviceEndpoint } from "../../core/service-names.ts";
import { issue } from "../findings.ts";
import { recogCertificate } from "../fingerprint/recog-services.ts";
import type { DiscoveryModule } from "../module.ts";
import { legacyContext, modernContext, type NodeTlsVersion, versionContext } from "../net/secure-contexts.ts";
import { acceptedAt, BROAD_CIPHERS, helloProbe, TLS_VERSIONS, WEAK_CIPHERS } from "../net/tls-hello.ts";

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

/**
 * One TLS handshake, certificate unchecked (we want to see it, not trust it). `timeoutMs` bounds the
 * whole exchange; `answerTimeoutMs`, shorter, bounds the wait for the server's answer to the ClientHello
 * once connected: a service that accepts and stays silent costs that, not the whole timeout.
 */
export function handshake(
  host: string,
  port: number,
  options: {
    timeoutMs: number;
    answerTimeoutMs?: number;
    signal: AbortSignal;
    legacyOnly?: boolean;
    /** Offer exactly these versions (an `ssl` template's min_version/max_version). */
    versions?: { min: NodeTlsVersion; max: NodeTlsVersion };
  },
): Promise<Handshake> {
  return new Promise((resolve) => {
    let socket: TLSSocket;
    let answerTimer: NodeJS.Timeout | undefined;
    const finish = (result: Handshake) => {
      clearTimeout(answerTimer);
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
      secureContext: options.versions
        ? versionContext(options.versions.min, options.versions.max)
        : options.legacyOnly
          ? legacyContext()
          : modernContext(),
    });
    options.signal.addEventListener("abort", onAbort, { once: true });
    const answerMs = options.answerTimeoutMs;
    if (answerMs !== undefined && answerMs < options.timeoutMs)
      socket.once("connect", () => {
        answerTimer = setTimeout(
          () => finish({ ok: false, reason: "no answer to the ClientHello" }),
          answerMs,
        );
      });
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
  // Handshakes: one still going after a moment waits on the server.
  waits: true,
  async run(entity, ctx) {
    const details = entity.details ?? {};
    const endpoint = serviceEndpoint(entity);
    // Identification said whether the service speaks TLS on connect when its answers named it; when
    // only the port number did (nothing answered in time), a service that spoke first (SSH, SMTP, FTP,
    // MySQL) is not TLS on connect and any other is tried.
    const named = typeof details.identified_by === "string" && details.identified_by !== "port";
    // A TLS alert (`ssl`) or an HTTPS port whose handshake did not finish in time is tried again here.
    const speaksTls = named
      ? details.tls === true || details.service === "ssl" || details.service === "https"
      : !(typeof details.banner === "string" && details.banner !== "");
    if (!endpoint || !speaksTls || details.protocol === "udp") return;
    const { address, port } = endpoint;
    if (!ctx.mayTouch(address)) return;
    // A TLS server answers a ClientHello at once, as a server that speaks first greets: the port scan's
    // greeting wait bounds that answer, the whole timeout the rest of the exchange.
    const options = {
      timeoutMs: ctx.settings.timeoutMs,
      answerTimeoutMs: ctx.settings.limits.bannerTimeoutMs,
      signal: ctx.signal,
    };
    let result = await ctx.throttle.run(address, () => handshake(address, port, options), ctx.signal);
    // A server that speaks only TLS 1.0/1.1 fails Node's default handshake: its certificate is read
    // with the legacy versions allowed, and the version probes below raise what it accepts.
    if (!result.ok && !ctx.signal.aborted)
      result = await ctx.throttle.run(
        address,
        () => handshake(address, port, { ...options, legacyOnly: true }),
        ctx.signal,
      );
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
        // The device a certificate of its own names (a router, a firewall, a camera), by Recog's x509 data.
        ...recogCertificate(result.certificate.subject, result.certificate.issuer),
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

    // Old versions and weak suites, asked with hand-written ClientHellos (Node's OpenSSL offers neither).
    const hello = (version: number, ciphers?: readonly number[]) =>
      ctx.throttle.run(
        address,
        () => helloProbe({ host: address, port, ...options }, version, ciphers),
        ctx.signal,
      );
    const weakProtocols: string[] = [];
    for (const name of ["SSLv3", "TLSv1", "TLSv1.1"] as const) {
      const answer = await hello(TLS_VERSIONS[name]);
      if (!acceptedAt(answer, name) || !answer?.accepted) continue;
      weakProtocols.push(name);
      const proof = {
        protocol: name,
        cipher: WEAK_CIPHERS[answer.cipher] ?? `0x${answer.cipher.toString(16).padStart(4, "0")}`,
        sent: `ClientHello, version ${name}, ${BROAD_CIPHERS.length} cipher suites offered`,
        received: `ServerHello, version ${answer.version}, cipher suite 0x${answer.cipher.toString(16).padStart(4, "0")}`,
      };
      ctx.raise(issue(name === "SSLv3" ? "sslv3Protocol" : "weakTlsProtocol", service, proof));
    }
    const weakSuites = Object.keys(WEAK_CIPHERS).map(Number);
    const weak = await hello(TLS_VERSIONS["TLSv1.2"], weakSuites);
    if (weak?.accepted && WEAK_CIPHERS[weak.cipher])
      ctx.raise(
        issue("weakTlsCipher", service, {
          cipher: WEAK_CIPHERS[weak.cipher],
          protocol: weak.version,
          sent: `ClientHello, version TLSv1.2, only weak cipher suites offered (${weakSuites.length}: NULL, anonymous, export, DES, 3DES, RC4)`,
          received: `ServerHello, version ${weak.version}, cipher suite ${WEAK_CIPHERS[weak.cipher]}`,
        }),
      );
    ctx.emit({
      kind: "NetworkService",
      name: entity.name,
      details: {
        tls: true,
        tls_protocol: result.protocol,
        tls_cipher: result.cipher,
        certificate: name,
        weak_protocols: weakProtocols,
        ...(weak?.accepted && WEAK_CIPHERS[weak.cipher] ? { weak_cipher: WEAK_CIPHERS[weak.cipher] } : {}),
      },
    });
  },
};
