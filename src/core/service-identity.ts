/**
 * What service identification says about an open port, kept in the NetworkService's entity details.
 * The contract between identification (src/discovery/service-id.ts, the probes in
 * src/discovery/probes/) and everything that reads services: exposure checks, products and CVEs,
 * the services result.
 *
 * - `service`: the protocol, lower case, as nmap names it (`http`, `https`, `ssh`, `redis`, …; see
 *   SERVICE_NAMES); `unknown` when nothing matched and the port number gives no conventional name.
 * - `product`, `version`: as the server tells them ("OpenSSH", "9.2p1"); absent when not told.
 * - `cpe`: CPE 2.3 of the product with its version ("cpe:2.3:a:openbsd:openssh:9.2:p1:*:*:*:*:*:*").
 * - `tls`: `true` when the service speaks TLS on connect (the TLS module adds tls_protocol,
 *   tls_cipher and the certificate); a service offering STARTTLS keeps `tls: false` and says
 *   `starttls: true`.
 * - `banner`: what the service said, printable, at most BANNER_MAX_CHARS characters.
 * - `identified_by`: the probe whose answer named it (`greeting`, `http-get`, `redis-ping`, …);
 *   `port` when only the port number named it.
 * - `product_rule`: the rule that named the product (the probe's, or a Recog fingerprint's when that
 *   told more); `os`, `os_cpe`, `hardware`, `hardware_cpe`: the machine, where a fingerprint tells it.
 */

/** Protocol names the identification uses, as nmap's service names. */
export const SERVICE_NAMES = [
  "http",
  "https",
  "ssh",
  "ftp",
  "smtp",
  "pop3",
  "imap",
  "domain",
  "mysql",
  "postgresql",
  "ms-sql-s",
  "oracle-tns",
  "mongodb",
  "redis",
  "memcached",
  "elasticsearch",
  "couchdb",
  "cassandra",
  "zookeeper",
  "etcd",
  "consul",
  "amqp",
  "mqtt",
  "kafka",
  "nats",
  "docker",
  "docker-registry",
  "kubernetes",
  "kubelet",
  "ldap",
  "microsoft-ds",
  "ms-wbt-server",
  "vnc",
  "telnet",
  "rsync",
  "sip",
  "x11",
  "prometheus",
  "http-proxy",
  "ssl",
] as const;

export type ServiceName = (typeof SERVICE_NAMES)[number] | "unknown" | (string & {});

/** The longest banner kept, in characters. */
export const BANNER_MAX_CHARS = 512;

export interface ServiceIdentity {
  service: ServiceName;
  product?: string;
  version?: string;
  /** CPE 2.3 formatted string; version `*` when the version is not known. */
  cpe?: string;
  /** Free-form extra information the server told (an OS, a protocol version, a cluster name). */
  info?: string;
  tls: boolean;
  /** SMTP, POP3, IMAP, FTP, LDAP, PostgreSQL, XMPP… offering an upgrade to TLS. */
  starttls?: boolean;
  banner: string;
  identified_by: string;
  /** Which rule named the product: `probe <name>` or `recog <database>: <fingerprint>`. */
  product_rule?: string;
  /** What Recog's fingerprint tells of the machine: `Ubuntu Linux 22.04`, its CPE, a device. */
  os?: string;
  os_cpe?: string;
  hardware?: string;
  hardware_cpe?: string;
}

/** The identity of a service as read back from entity details (the fields may be missing or of the wrong type). */
export function serviceIdentityOf(details: Record<string, unknown>): Partial<ServiceIdentity> {
  const text = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);
  return {
    service: text(details.service),
    product: text(details.product),
    version: text(details.version),
    cpe: text(details.cpe),
    info: text(details.info),
    tls: details.tls === true,
    starttls: details.starttls === true ? true : undefined,
    banner: text(details.banner),
    identified_by: text(details.identified_by),
  };
}
