import type { HostSpec, LabRecord, LabWorld } from "./types.ts";
import { withWebApplications } from "./web-world.ts";

/** Labels from the top of every public subdomain wordlist. */
const BRUTEFORCE_WORDS = `www mail api vpn dev staging backup ftp ns1 ns2 shop store
  old app test admin portal remote webmail smtp blog cdn git sip`.split(/\s+/);

/**
 * The default fake internet. Every name is here for a reason a test can rely on:
 * - `acme.test` refuses AXFR; `intranet-x7q.acme.test` is named only by the www certificate
 *   (a label no wordlist guesses, no PTR); `backup.acme.test` only by brute force (no PTR);
 *   `old.acme.test` is a dangling CNAME into `cloudapp.test`; `app.acme.test` a live one.
 * - `open.test` allows AXFR; `vault-q3.open.test` is found only that way.
 * - `wild.test` has `*.wild.test`, plus real names on other addresses.
 * - `acme.test`'s SPF policy includes `_spf.mailhost.test`, which includes `_spf2.mailhost.test`.
 * Addresses are `${base}.Z.N`: Z = 0 acme, 1 open, 2 wild, 3 cloudapp.
 */
function networkWorld(base: string): LabWorld {
  const ip = (suffix: string) => `${base}.${suffix}`;
  return {
    nameservers: ["ns1.acme.test", "ns2.acme.test"],
    bruteforceWords: [...BRUTEFORCE_WORDS],
    zones: [
      {
        name: "acme.test",
        records: [
          { name: "acme.test", type: "MX", data: { preference: 10, exchange: "mail.acme.test" } },
          // Its mail is also sent by a mail provider, whose policy includes a second one of its own.
          {
            name: "acme.test",
            type: "TXT",
            data: `v=spf1 mx ip4:${ip("0.11")} include:_spf.mailhost.test -all`,
          },
          // Verification tokens, as real apexes pile them up: the TXT answer outgrows 512 bytes,
          // so UDP answers it truncated and resolvers retry over TCP.
          ...[
            "google-site-verification=Xq3v8sKd0LmQ2nB7yT5wR1cZ9hJ4fG6pA0eU3iO8kVt",
            "MS=ms84213377",
            "facebook-domain-verification=k2j9x7c4v1b8n5m3q0w6e2r9t4y7u1",
            "atlassian-domain-verification=Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0",
            "apple-domain-verification=a1B2c3D4e5F6g7H8",
            "docusign=5e1f8a3b-7c2d-4e9f-a6b0-1c3d5e7f9a2b",
            "acme-site-verification=4f9c2d7e1a",
          ].map((data): LabRecord => ({ name: "acme.test", type: "TXT", data })),
          { name: "acme.test", type: "CAA", data: { flags: 0, tag: "issue", value: "letsencrypt.org" } },
          {
            name: "acme.test",
            type: "CAA",
            data: { flags: 0, tag: "iodef", value: "mailto:security@acme.test" },
          },
          { name: "_dmarc.acme.test", type: "TXT", data: "v=DMARC1; p=none; rua=mailto:dmarc@acme.test" },
          {
            name: "_sip._tcp.acme.test",
            type: "SRV",
            data: { priority: 10, weight: 60, port: 5060, target: "sip.acme.test" },
          },
          { name: "shop.acme.test", type: "CNAME", data: "www.acme.test" },
          { name: "store.acme.test", type: "CNAME", data: "shop.acme.test" },
          { name: "app.acme.test", type: "CNAME", data: "acme-prod.cloudapp.test" },
          { name: "old.acme.test", type: "CNAME", data: "acme-legacy.cloudapp.test" },
        ],
      },
      {
        name: "open.test",
        axfr: true,
        records: [{ name: "open.test", type: "TXT", data: "v=spf1 -all" }],
      },
      { name: "wild.test", records: [] },
      // A cloud provider's zone: acme-prod exists, acme-legacy (the dangling target) does not.
      { name: "cloudapp.test", records: [] },
      // A mail provider's zone: the SPF policies acme.test includes.
      {
        name: "mailhost.test",
        records: [
          {
            name: "_spf.mailhost.test",
            type: "TXT",
            data: "v=spf1 ip4:203.0.113.0/24 include:_spf2.mailhost.test ~all",
          },
          { name: "_spf2.mailhost.test", type: "TXT", data: "v=spf1 ip4:198.51.100.0/24 ~all" },
        ],
      },
    ],
    hosts: [
      ...nameservers(ip),
      {
        ip: ip("0.10"),
        names: ["www.acme.test", "acme.test"],
        ipv6: "2001:db8:ac::10",
        services: [
          { kind: "http", port: 80, server: "nginx/1.18.0", title: "Acme Corporation" },
          {
            kind: "https",
            port: 443,
            server: "nginx/1.18.0",
            title: "Acme Corporation",
            certificate: {
              commonName: "www.acme.test",
              organization: "Acme Corp",
              altNames: ["www.acme.test", "acme.test", "shop.acme.test", "intranet-x7q.acme.test"],
              key: "rsa-2048",
              issuer: "lab-ca",
            },
          },
        ],
      },
      {
        ip: ip("0.11"),
        names: ["mail.acme.test"],
        services: [{ kind: "smtp", port: 25, hostname: "mail.acme.test" }],
      },
      {
        ip: ip("0.12"),
        names: ["api.acme.test"],
        services: [
          {
            kind: "https",
            port: 443,
            server: "nginx/1.18.0",
            title: "Acme API",
            certificate: {
              commonName: "api.acme.test",
              altNames: ["api.acme.test"],
              key: "ecdsa-p256",
              issuer: "lab-ca",
            },
          },
        ],
      },
      {
        ip: ip("0.13"),
        names: ["vpn.acme.test"],
        services: [
          {
            kind: "https",
            port: 443,
            server: "Apache",
            title: "SSL VPN Portal",
            certificate: {
              commonName: "vpn.acme.test",
              altNames: ["vpn.acme.test"],
              key: "rsa-2048",
              issuer: "self",
            },
          },
        ],
      },
      {
        ip: ip("0.14"),
        names: ["dev.acme.test"],
        services: [
          { kind: "ssh", port: 22 },
          { kind: "http", port: 8080, server: "Apache/2.4.49 (Unix)", title: "Acme Dev" },
          {
            kind: "https",
            port: 8443,
            server: "Apache/2.4.49 (Unix)",
            title: "Acme Dev",
            certificate: {
              commonName: "dev.acme.test",
              altNames: ["dev.acme.test", "staging.acme.test"],
              key: "ecdsa-p256",
              issuer: "lab-ca",
              validity: "expired",
            },
          },
        ],
      },
      {
        ip: ip("0.15"),
        names: ["staging.acme.test"],
        services: [
          { kind: "http", port: 80, server: "Apache/2.4.41 (Ubuntu)", title: "Acme Staging" },
          { kind: "ftp", port: 21 },
          { kind: "mysql", port: 3306, version: "5.7.33-0ubuntu0.18.04.1" },
        ],
      },
      // Named by the SRV record; nothing listens.
      { ip: ip("0.16"), names: ["sip.acme.test"], services: [] },
      {
        ip: ip("0.20"),
        names: ["intranet-x7q.acme.test"],
        ptr: null,
        services: [{ kind: "http", port: 80, server: "Microsoft-IIS/10.0", title: "Acme Intranet" }],
      },
      {
        ip: ip("0.21"),
        names: ["backup.acme.test"],
        ptr: null,
        services: [
          { kind: "ftp", port: 21 },
          { kind: "ssh", port: 22, banner: "SSH-2.0-OpenSSH_7.4" },
          { kind: "redis", port: 6379, version: "6.0.16" },
        ],
      },
      {
        ip: ip("1.10"),
        names: ["www.open.test", "open.test"],
        services: [{ kind: "http", port: 80, server: "nginx/1.14.0 (Ubuntu)", title: "Open Project" }],
      },
      {
        ip: ip("1.11"),
        names: ["ftp.open.test"],
        services: [{ kind: "ftp", port: 21, banner: "220 ProFTPD 1.3.5e Server (Debian)" }],
      },
      {
        ip: ip("1.12"),
        names: ["vault-q3.open.test"],
        ptr: null,
        services: [{ kind: "redis", port: 6379, version: "5.0.7" }],
      },
      {
        ip: ip("2.10"),
        names: ["www.wild.test", "wild.test"],
        services: [{ kind: "http", port: 80, server: "nginx/1.18.0", title: "Wild Things" }],
      },
      {
        ip: ip("2.11"),
        names: ["mail.wild.test"],
        services: [{ kind: "smtp", port: 25, hostname: "mail.wild.test" }],
      },
      {
        ip: ip("2.99"),
        names: ["*.wild.test"],
        ptr: null,
        services: [{ kind: "http", port: 80, server: "nginx", title: "Domain parked" }],
      },
      {
        ip: ip("3.10"),
        names: ["acme-prod.cloudapp.test"],
        services: [{ kind: "http", port: 80, server: "Kestrel", title: "Acme Portal" }],
      },
    ],
  };
}

/** ns1/ns2 also serve every zone on port 53, so an AXFR attempt can go to a zone's own NS. */
function nameservers(ip: (suffix: string) => string): HostSpec[] {
  return [2, 3].map((n) => ({
    ip: ip(`0.${n}`),
    names: [`ns${n - 1}.acme.test`],
    services: [{ kind: "dns", port: 53 }],
  }));
}

/** The default fake internet: the network above, and the web applications of web-world.ts. */
export const defaultWorld = (base: string): LabWorld => withWebApplications(networkWorld(base), base);
