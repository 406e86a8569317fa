/**
 * The weaknesses DNS and TLS discovery can prove, each written once: name, severity, category,
 * description, remediation, references. Modules raise them with the entity and the proof.
 */
import type { EntityRef, FoundIssue } from "../core/entities.ts";

type IssueTemplate = Omit<FoundIssue, "entity" | "details">;

const template = (issue: IssueTemplate) => issue;

export const ISSUES = {
  zoneTransfer: template({
    name: "dns_zone_transfer_allowed",
    prettyName: "DNS zone transfer allowed",
    severity: 2,
    confidence: "confirmed",
    category: "misconfiguration",
    description:
      "A name server of the zone answered a full zone transfer (AXFR) to an anonymous client, giving away every name in the zone, including ones meant to stay unlisted.",
    remediation:
      "Allow AXFR only to the secondary name servers (by address or TSIG key) on every name server of the zone.",
    references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc5936#section-6" }],
  }),
  danglingCname: template({
    name: "dns_dangling_cname",
    prettyName: "Dangling CNAME (possible subdomain takeover)",
    severity: 2,
    // The target is missing for certain; whether anyone can claim it is what subdomain_takeover says.
    confidence: "potential",
    category: "misconfiguration",
    description:
      "The name is an alias (CNAME) of a name that does not exist. Whoever registers the target (often a cloud resource name) can serve content under this name.",
    remediation: "Remove the CNAME, or re-create the resource it points to.",
    references: [
      {
        type: "description",
        uri: "https://developer.mozilla.org/en-US/docs/Web/Security/Subdomain_takeovers",
      },
    ],
  }),
  missingSpf: template({
    name: "email_spf_missing",
    prettyName: "No SPF record",
    severity: 4,
    confidence: "confirmed",
    category: "email",
    description:
      "The domain publishes no SPF policy (a TXT record starting with v=spf1), so receivers cannot tell which servers may send mail for it.",
    remediation:
      'Publish an SPF record listing the domain\'s mail senders, or "v=spf1 -all" if it sends no mail.',
    references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc7208" }],
  }),
  brokenSpf: template({
    name: "email_spf_permerror",
    prettyName: "SPF policy fails to evaluate",
    severity: 3,
    confidence: "confirmed",
    category: "email",
    description:
      "Receivers evaluating the domain's SPF policy reach a permanent error: it needs more than 10 DNS look-ups, or an included domain publishes no SPF record. Its mail then fails SPF wherever it is checked, and spoofed mail is not told apart.",
    remediation:
      "Flatten or prune the policy's include:, a, mx, ptr and exists terms to at most 10 look-ups, and remove includes of domains that publish no SPF record.",
    references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc7208#section-4.6.4" }],
  }),
  missingDmarc: template({
    name: "email_dmarc_missing",
    prettyName: "No DMARC policy",
    severity: 4,
    confidence: "confirmed",
    category: "email",
    description:
      "The domain publishes no DMARC policy at _dmarc.<domain>, so mail forged in its name is not rejected or reported.",
    remediation: 'Publish a TXT record at _dmarc.<domain>, e.g. "v=DMARC1; p=reject; rua=mailto:…".',
    references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc7489" }],
  }),
  weakDmarc: template({
    name: "email_dmarc_policy_none",
    prettyName: "DMARC policy does not enforce",
    severity: 5,
    confidence: "confirmed",
    category: "email",
    description: "The domain's DMARC policy is p=none: forged mail is reported but still delivered.",
    remediation:
      "Move the policy to p=quarantine, then p=reject, once the reports show legitimate mail passes.",
    references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc7489#section-6.3" }],
  }),
  missingCaa: template({
    name: "dns_caa_missing",
    prettyName: "No CAA record",
    severity: 5,
    confidence: "confirmed",
    category: "misconfiguration",
    description: "The domain has no CAA record, so any certificate authority may issue certificates for it.",
    remediation: 'Publish CAA records naming the authorities you use, e.g. 0 issue "letsencrypt.org".',
    references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc8659" }],
  }),
  expiredCertificate: template({
    name: "tls_certificate_expired",
    prettyName: "Expired TLS certificate",
    severity: 3,
    confidence: "confirmed",
    category: "tls",
    description:
      "The service presents a certificate whose validity has ended; clients reject it or train users to click through warnings.",
    remediation: "Renew the certificate and install it on the service; automate renewal (ACME).",
    references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc5280#section-4.1.2.5" }],
  }),
  selfSignedCertificate: template({
    name: "tls_certificate_self_signed",
    prettyName: "Self-signed TLS certificate",
    severity: 4,
    confidence: "confirmed",
    category: "tls",
    description:
      "The service presents a certificate signed by its own key, which no client can verify; connections to it cannot be told apart from an interception.",
    remediation:
      "Install a certificate from a trusted authority (a public CA, or your organisation's own for internal services).",
    references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc5280#section-6.1" }],
  }),
  weakTlsProtocol: template({
    name: "tls_weak_protocol",
    prettyName: "Deprecated TLS protocol accepted",
    severity: 4,
    confidence: "confirmed",
    category: "tls",
    description:
      "The service completes handshakes with TLS 1.0 or 1.1, which are deprecated and weaker than TLS 1.2.",
    remediation: "Disable TLS 1.0 and 1.1; accept TLS 1.2 and 1.3 only.",
    references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc8996" }],
  }),
  sslv3Protocol: template({
    name: "tls_sslv3_accepted",
    prettyName: "SSLv3 accepted",
    severity: 3,
    confidence: "confirmed",
    category: "tls",
    description:
      "The service completes an SSLv3 handshake. SSLv3 is broken (POODLE): an attacker on the path can recover encrypted secrets such as session cookies.",
    remediation: "Disable SSLv3 (and TLS 1.0/1.1); accept TLS 1.2 and 1.3 only.",
    references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc7568" }],
  }),
  weakTlsCipher: template({
    name: "tls_weak_cipher",
    prettyName: "Weak TLS cipher suite accepted",
    severity: 3,
    confidence: "confirmed",
    category: "tls",
    description:
      "The service agreed to a cipher suite that offers little or no protection (NULL, anonymous, export-grade, DES, 3DES or RC4) when a client offered only those.",
    remediation:
      "Accept only AEAD suites with forward secrecy (ECDHE with AES-GCM or ChaCha20-Poly1305); remove RC4, DES, 3DES, NULL, export and anonymous suites.",
    references: [
      { type: "description", uri: "https://www.rfc-editor.org/rfc/rfc7465" },
      { type: "description", uri: "https://sweet32.info/" },
    ],
  }),
} satisfies Record<string, IssueTemplate>;

/** An issue of the catalogue on an entity, with its proof. */
export function issue(
  kind: keyof typeof ISSUES,
  entity: EntityRef,
  details: Record<string, unknown>,
): FoundIssue {
  return { ...ISSUES[kind], entity, details };
}
