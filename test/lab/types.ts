import type { RequestListener } from "node:http";
import type { Answer, OptAnswer, RecordType } from "dns-packet";

export type { RecordType };

export interface Endpoint {
  host: string;
  port: number;
}

/** A resource record as the lab serves it: dns-packet's own shape (OPT is wire plumbing, never data). */
export type LabRecord = Exclude<Answer, OptAnswer>;

// ---------------------------------------------------------------------------------------------
// What the lab is made of (declarative; see world.ts for the default world)
// ---------------------------------------------------------------------------------------------

export type KeyType = "rsa-2048" | "ecdsa-p256";

export interface CertificateSpec {
  commonName: string;
  organization?: string;
  /** DNS subject alternative names. */
  altNames?: string[];
  key: KeyType;
  issuer: "lab-ca" | "self";
  /** Default `valid`: from 30 days ago to a year ahead. `expired` ended 30 days ago. */
  validity?: "valid" | "expired";
}

export interface WebOptions {
  /** The `Server:` header, e.g. `nginx/1.18.0`. */
  server: string;
  title: string;
  /** HTML inside <body> after the <h1> title. */
  body?: string;
  /** Replaces the default page (the `Server:` header is still set), for web applications. */
  handler?: RequestListener;
  /**
   * What a scanner must find on this web service (by address, and by every name not claimed by a virtual
   * host). Without it, the default page's findings are known for the `Server:` headers of
   * `DEFAULT_PAGE_PRODUCTS` (web-truth.ts); a custom handler without it has no web truth.
   */
  expect?: WebExpectations;
  /** Name-based virtual hosts: requests whose Host is one of `names` get this site instead. */
  virtualHosts?: VirtualHost[];
}

export interface VirtualHost {
  names: string[];
  server: string;
  title: string;
  handler: RequestListener;
  expect: WebExpectations;
}

/** A product a fingerprint must name, with the CVEs the shipped vulnerability database (vulndb/seed.json) gives it. */
export interface ProductTruth {
  /** As Sightline names it (the webappanalyzer / banner rule name), e.g. `Apache HTTP Server`. */
  name: string;
  /** As people write it, e.g. `8.5p1`; empty when the service does not say. */
  version: string;
  /** CPE 2.3 with the version, or `*` in its place; empty for a product without a CPE name. */
  cpe: string;
  cves: string[];
}

export type ThirdPartyKind = "script" | "stylesheet" | "frame" | "form" | "web_resource" | "redirect";

/** What probing a web application must find. */
export interface WebExpectations {
  products: ProductTruth[];
  /** The web checks it fails; the inferred CVE issues follow from the products' CVEs. */
  issues: string[];
  /** Hosts of other parties the page loads from, and what it loads. */
  thirdParties?: Array<{ host: string; kind: ThirdPartyKind }>;
}

/** One listening service. To add a kind: add it here and one starter in services.ts. */
export type ServiceSpec =
  | ({ kind: "http"; port: number } & WebOptions)
  | ({ kind: "https"; port: number; certificate: CertificateSpec } & WebOptions)
  | { kind: "ssh"; port: number; banner?: string; products?: ProductTruth[] }
  | {
      kind: "smtp";
      port: number;
      hostname: string;
      banner?: string;
      /** Greets with the time after the banner, as Sendmail does: "<banner>; Sun, 22 Nov 2026 12:00:00 +0000". */
      clock?: boolean;
    }
  | { kind: "ftp"; port: number; banner?: string; products?: ProductTruth[] }
  | { kind: "mysql"; port: number; version: string }
  | { kind: "redis"; port: number; version: string }
  /** The lab's authoritative DNS server, also reachable here (UDP and TCP), as a zone's NS would be. */
  | { kind: "dns"; port: number };

export type ServiceKind = ServiceSpec["kind"];

export interface HostSpec {
  ip: string;
  /** Owner names given an A record for `ip` (and AAAA for `ipv6`); `*.zone` makes a wildcard. */
  names: string[];
  /** Documentation-range IPv6 address published as AAAA; nothing listens on it. */
  ipv6?: string;
  /** Reverse name; default `names[0]`; `null` publishes no PTR (keeps a name findable only other ways). */
  ptr?: string | null;
  services: ServiceSpec[];
}

export interface ZoneSpec {
  name: string;
  /** Whether AXFR over TCP is allowed (otherwise REFUSED). */
  axfr?: boolean;
  /** Records besides the SOA and NS (which the lab adds) and the hosts' A/AAAA/PTR. */
  records: LabRecord[];
}

export interface LabWorld {
  zones: ZoneSpec[];
  hosts: HostSpec[];
  /** NS of every zone; the first is also the SOA's primary. */
  nameservers: string[];
  /** Labels the lab counts as guessable by subdomain brute force (see `DiscoveryPath`). */
  bruteforceWords: string[];
}

// ---------------------------------------------------------------------------------------------
// Ground truth
// ---------------------------------------------------------------------------------------------

/**
 * How a name can be found from its zone's apex:
 * - `apex`: it is the zone itself (the seed);
 * - `record`: another forward record names it (NS, MX, CNAME, SRV, SOA primary);
 * - `reverse-dns`: the PTR of a lab address names it;
 * - `certificate`: a served certificate's subject or SAN names it;
 * - `axfr`: its zone allows zone transfer;
 * - `bruteforce`: its label relative to the zone is one of `bruteforceWords`;
 * - `well-known`: an underscore name queried by convention (`_dmarc`, `_sip._tcp`).
 */
export type DiscoveryPath =
  | "apex"
  | "record"
  | "reverse-dns"
  | "certificate"
  | "axfr"
  | "bruteforce"
  | "well-known";

export interface NameTruth {
  name: string;
  zone: string;
  types: RecordType[];
  paths: DiscoveryPath[];
}

export interface ZoneTruth {
  name: string;
  /** An in-addr.arpa zone. */
  reverse: boolean;
  axfr: boolean;
  serial: number;
  records: LabRecord[];
}

export interface HostTruth {
  ip: string;
  ipv6: string | null;
  names: string[];
  ptr: string | null;
  /** Open TCP ports. */
  ports: number[];
}

export interface ServiceTruth {
  ip: string;
  port: number;
  transport: "tcp" | "udp";
  service: ServiceKind;
  tls: boolean;
  /** First line the service sends on connect, without CRLF. */
  banner?: string;
  /** Product string a fingerprint should find: the `Server:` header, or the database's name and version. */
  product?: string;
}

/** A web application a scanner must find: one per web service and host it answers for. */
export interface ApplicationTruth {
  /** `<scheme>://<host>:<port>`, as Sightline names applications. */
  name: string;
  scheme: "http" | "https";
  /** A name resolving to `ip`, or `ip` itself. */
  host: string;
  ip: string;
  port: number;
  /** The lab zone holding `host`; null when the application is reached by address. */
  zone: string | null;
  title: string;
  products: ProductTruth[];
  /** Every issue the application raises, sorted: web checks and `inferred_cve_YYYY_NNNNN`. */
  issues: string[];
  thirdParties: Array<{ host: string; kind: ThirdPartyKind }>;
}

/** A third party the lab's applications depend on, by registrable domain. */
export interface ConnectionTruth {
  name: string;
  kinds: ThirdPartyKind[];
  hosts: string[];
  /** Names of the applications that load from it. */
  usedBy: string[];
}

export interface CertificateFacts {
  /** Distinguished names as @peculiar/x509 prints them, e.g. `CN=www.acme.test, O=Acme Corp`. */
  subject: string;
  subjectCommonName: string;
  issuer: string;
  issuerCommonName: string;
  altNames: string[];
  /** ISO 8601. */
  notBefore: string;
  notAfter: string;
  /** Lower-case hex. */
  serialNumber: string;
  /** SHA-256 of the DER, lower-case hex without separators. */
  sha256: string;
  keyType: KeyType;
  selfSigned: boolean;
  expired: boolean;
  pem: string;
}

export interface CertificateTruth extends CertificateFacts {
  ip: string;
  port: number;
  /** `ip:port`. */
  endpoint: string;
}

export interface LabTruth {
  /** First two octets of the host block, e.g. `127.42`. */
  base: string;
  dnsServer: Endpoint;
  resolver: string;
  silentNameserver: Endpoint;
  zones: ZoneTruth[];
  /** Every owner name with records in a forward zone, wildcard owners excluded. */
  names: NameTruth[];
  hosts: HostTruth[];
  services: ServiceTruth[];
  certificates: CertificateTruth[];
  ca: CertificateFacts;
  wildcards: { zone: string; name: string; addresses: string[] }[];
  axfrZones: string[];
  /** CNAMEs whose target, in a zone the lab serves, does not exist. */
  danglingCnames: { name: string; target: string }[];
  /** Names with exactly one discovery path, by path. */
  onlyVia: Partial<Record<DiscoveryPath, string[]>>;
  bruteforceWords: string[];
  /** Web applications whose findings are known (see `WebOptions.expect`), by name. */
  applications: ApplicationTruth[];
  /** Products the greetings of non-web services name, by service (`ip:port/tcp`). */
  serviceProducts: Array<{ service: string; products: ProductTruth[] }>;
  connections: ConnectionTruth[];
}

// ---------------------------------------------------------------------------------------------
// The running lab
// ---------------------------------------------------------------------------------------------

export interface LabOptions {
  /** First two octets of the host block, e.g. `127.10`; default: a free random one. */
  base?: string;
  /** The world to build; default `defaultWorld`. */
  world?: (base: string) => LabWorld;
}

export interface Lab {
  readonly base: string;
  /** The authoritative server on 127.53.0.1 and a random port (UDP and TCP). */
  readonly dnsServer: Endpoint;
  /** `127.53.0.1:PORT`, for `SIGHTLINE_DNS_SERVERS` or `Resolver.setServers`. */
  readonly resolver: string;
  /** A UDP name server that reads and drops every query. */
  readonly silentNameserver: Endpoint;
  /** The lab CA, to verify the CA-signed certificates. */
  readonly caPem: string;
  /** A fresh snapshot on every read. */
  readonly truth: LabTruth;
  /**
   * The TCP ports the lab's hosts listen on, as a SIGHTLINE_PORTS list ("21,22,80,…"): scanning only
   * these keeps whatever else listens on this machine's wildcard addresses out of a lab run's results.
   */
  readonly ports: string;
  /** `ip("0.99")` is `${base}.0.99`. */
  ip(suffix: string): string;
  /** Starts the host's services, then publishes its records (bumping the zones' SOA serials). */
  addHost(spec: HostSpec): Promise<void>;
  /** Withdraws the host's records, then stops its services. */
  removeHost(ip: string): Promise<void>;
  /** Closes every socket; safe to call twice. */
  stop(): Promise<void>;
}
