// @peculiar/x509 resolves its services through tsyringe, which needs the Reflect metadata API.
import "reflect-metadata";
import { createHash, randomBytes, webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";
import type { CertificateFacts, CertificateSpec, KeyType } from "./types.ts";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const DAY = 86_400_000;

const KEY_ALGORITHMS = {
  "rsa-2048": {
    name: "RSASSA-PKCS1-v1_5",
    modulusLength: 2048,
    publicExponent: new Uint8Array([1, 0, 1]),
    hash: "SHA-256",
  },
  "ecdsa-p256": { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" },
} satisfies Record<KeyType, object>;

export interface IssuedCertificate {
  /** PKCS#8 PEM. */
  keyPem: string;
  /** The leaf, then the CA when the lab CA signed it: what a server sends. */
  chainPem: string;
  facts: CertificateFacts;
}

export interface CertificateAuthority {
  readonly facts: CertificateFacts;
  issue(spec: CertificateSpec): Promise<IssuedCertificate>;
}

/** A fresh lab root CA (ECDSA P-256), made at lab start; nothing is read from or written to disk. */
export async function createCertificateAuthority(): Promise<CertificateAuthority> {
  const keyType = "ecdsa-p256";
  const keys = await generateKeys(keyType);
  const now = Date.now();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    name: "CN=Sightline Lab Root CA, O=Sightline Lab",
    keys,
    serialNumber: serialNumber(),
    notBefore: new Date(now - 365 * DAY),
    notAfter: new Date(now + 10 * 365 * DAY),
    signingAlgorithm: KEY_ALGORITHMS[keyType],
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const facts = factsOf(certificate, keyType);

  return {
    facts,
    async issue(spec) {
      const leafKeys = await generateKeys(spec.key);
      const selfSigned = spec.issuer === "self";
      const signer = selfSigned
        ? { keys: leafKeys, algorithm: KEY_ALGORITHMS[spec.key], name: undefined }
        : { keys, algorithm: KEY_ALGORITHMS[keyType], name: certificate.subject };
      const subject = spec.organization
        ? `CN=${spec.commonName}, O=${spec.organization}`
        : `CN=${spec.commonName}`;
      const [notBefore, notAfter] =
        spec.validity === "expired" ? [now - 395 * DAY, now - 30 * DAY] : [now - 30 * DAY, now + 365 * DAY];
      const altNames = spec.altNames ?? [];
      const leaf = await x509.X509CertificateGenerator.create({
        serialNumber: serialNumber(),
        subject,
        issuer: signer.name ?? subject,
        notBefore: new Date(notBefore),
        notAfter: new Date(notAfter),
        publicKey: leafKeys.publicKey,
        signingKey: signer.keys.privateKey,
        signingAlgorithm: signer.algorithm,
        extensions: [
          new x509.BasicConstraintsExtension(false),
          new x509.KeyUsagesExtension(
            spec.key === "rsa-2048"
              ? x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment
              : x509.KeyUsageFlags.digitalSignature,
            true,
          ),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
          ...(altNames.length > 0
            ? [
                new x509.SubjectAlternativeNameExtension(
                  altNames.map((value) => ({ type: "dns" as const, value })),
                ),
              ]
            : []),
          await x509.SubjectKeyIdentifierExtension.create(leafKeys.publicKey),
          await x509.AuthorityKeyIdentifierExtension.create(signer.keys.publicKey),
        ],
      });
      const leafFacts = factsOf(leaf, spec.key);
      const pkcs8 = await webcrypto.subtle.exportKey("pkcs8", leafKeys.privateKey);
      return {
        keyPem: x509.PemConverter.encode(pkcs8, "PRIVATE KEY"),
        chainPem: selfSigned ? leafFacts.pem : `${leafFacts.pem}\n${facts.pem}`,
        facts: leafFacts,
      };
    },
  };
}

function generateKeys(type: KeyType): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(KEY_ALGORITHMS[type], true, [
    "sign",
    "verify",
  ]) as Promise<webcrypto.CryptoKeyPair>;
}

/** 16 random bytes, positive and without a leading zero byte, so every tool prints it alike. */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x10;
  return bytes.toString("hex");
}

function factsOf(certificate: x509.X509Certificate, keyType: KeyType): CertificateFacts {
  const san = certificate.getExtension(x509.SubjectAlternativeNameExtension);
  const commonName = (name: x509.Name) => name.getField("CN")[0] ?? "";
  return {
    subject: certificate.subject,
    subjectCommonName: commonName(certificate.subjectName),
    issuer: certificate.issuer,
    issuerCommonName: commonName(certificate.issuerName),
    altNames: san?.names.items.filter((n) => n.type === "dns").map((n) => n.value) ?? [],
    notBefore: certificate.notBefore.toISOString(),
    notAfter: certificate.notAfter.toISOString(),
    serialNumber: certificate.serialNumber.toLowerCase(),
    sha256: createHash("sha256").update(new Uint8Array(certificate.rawData)).digest("hex"),
    keyType,
    selfSigned: certificate.subject === certificate.issuer,
    expired: certificate.notAfter.getTime() < Date.now(),
    pem: certificate.toString("pem"),
  };
}
