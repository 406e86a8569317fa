/**
 * Naming a TCP service from its port and what it said first. The port gives the conventional name;
 * a banner overrides it (an SSH server on 2222 is ssh). Web and TLS ports are never waited on: their
 * servers speak only when spoken to, and the web and TLS modules do that.
 */

import { stableBanner } from "./volatile.ts";

const PORT_NAMES: Record<number, string> = {
  21: "ftp",
  22: "ssh",
  23: "telnet",
  25: "smtp",
  53: "domain",
  80: "http",
  81: "http",
  88: "kerberos",
  110: "pop3",
  111: "rpcbind",
  135: "msrpc",
  139: "netbios-ssn",
  143: "imap",
  389: "ldap",
  443: "https",
  445: "microsoft-ds",
  465: "smtps",
  587: "submission",
  636: "ldaps",
  873: "rsync",
  993: "imaps",
  995: "pop3s",
  1433: "ms-sql-s",
  1521: "oracle-tns",
  1883: "mqtt",
  2181: "zookeeper",
  2379: "etcd",
  2049: "nfs",
  2375: "docker",
  2376: "docker-tls",
  3000: "http",
  3128: "http-proxy",
  3306: "mysql",
  4222: "nats",
  5672: "amqp",
  3389: "ms-wbt-server",
  4443: "https",
  5000: "http",
  5060: "sip",
  5432: "postgresql",
  5601: "kibana",
  5900: "vnc",
  5984: "couchdb",
  6000: "x11",
  6379: "redis",
  6443: "kubernetes",
  8000: "http",
  8008: "http",
  8080: "http",
  8081: "http",
  8443: "https",
  8500: "consul",
  8883: "mqtt",
  8880: "http",
  8888: "http",
  9000: "http",
  9090: "http",
  9042: "cassandra",
  9092: "kafka",
  9200: "elasticsearch",
  9443: "https",
  10250: "kubelet",
  11211: "memcached",
  27017: "mongodb",
};

/**
 * Ports whose protocol has the client speak first, so there is no greeting to wait for: web and TLS,
 * DNS over TCP, and datastores, brokers and remote desktops that wait for the client's request (Redis,
 * memcached, MongoDB, PostgreSQL, SQL Server, Oracle, MQTT, Kafka, AMQP, ZooKeeper, Cassandra, LDAP,
 * SMB, RDP, X11). Identification (service-id.ts) sends these their protocol's probe first.
 */
export const SILENT_PORTS: ReadonlySet<number> = new Set([
  53, 80, 81, 139, 389, 443, 445, 465, 591, 593, 636, 993, 995, 1433, 1521, 1883, 2181, 2375, 2376, 2379,
  3000, 3128, 3389, 4443, 5000, 5060, 5432, 5601, 5672, 5984, 6000, 6379, 6443, 8000, 8008, 8080, 8081, 8088,
  8443, 8500, 8880, 8883, 8888, 9000, 9042, 9090, 9092, 9100, 9200, 9443, 10250, 11211, 15672, 27017,
]);

const BANNER_RULES: Array<[RegExp, string]> = [
  [/^SSH-/, "ssh"],
  [/^220[- ].*\b(E?SMTP|Postfix|Exim|Sendmail)\b/i, "smtp"],
  [/^220[- ]/, "ftp"],
  [/^\+OK/, "pop3"],
  [/^\* OK/, "imap"],
  [/^RFB \d/, "vnc"],
  [/^(-ERR|\+PONG|-NOAUTH)/, "redis"],
];

export interface ServiceIdentity {
  service: string;
  /** What the service said first, as text (the first line, or the version of a binary greeting). */
  banner: string;
}

/** The MySQL/MariaDB protocol-10 greeting: 3-byte length, sequence 0, protocol 10, NUL-terminated version. */
export function mysqlVersion(bytes: Buffer): string | undefined {
  if (bytes.length < 6 || bytes[3] !== 0 || bytes[4] !== 10) return undefined;
  const end = bytes.indexOf(0, 5);
  return end > 5 ? bytes.subarray(5, end).toString("latin1") : undefined;
}

/** Printable text of a banner's first line, non-printable bytes as \xNN, at most 256 characters. */
export function bannerText(bytes: Buffer): string {
  const line = bytes.toString("latin1").split(/\r?\n/)[0] ?? "";
  return line
    .replace(/[^\x20-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
    .slice(0, 256);
}

export function identifyService(port: number, greeting: Buffer | undefined): ServiceIdentity {
  const fallback = PORT_NAMES[port] ?? "unknown";
  if (!greeting || greeting.length === 0) return { service: fallback, banner: "" };
  const mysql = mysqlVersion(greeting);
  if (mysql) return { service: "mysql", banner: `MySQL ${mysql}` };
  // A greeting with the server's clock in it would make the service look changed on every run.
  const banner = stableBanner(bannerText(greeting));
  const rule = BANNER_RULES.find(([pattern]) => pattern.test(banner));
  return { service: rule?.[1] ?? fallback, banner };
}

const OS_HINTS: Array<[RegExp, string]> = [
  [/ubuntu/i, "Ubuntu"],
  [/debian/i, "Debian"],
  [/centos/i, "CentOS"],
  [/red ?hat|rhel/i, "Red Hat Enterprise Linux"],
  [/fedora/i, "Fedora"],
  [/freebsd/i, "FreeBSD"],
  [/openbsd/i, "OpenBSD"],
  [/microsoft|windows/i, "Windows"],
];

/** The operating system a banner names, if any (OpenSSH and mail servers often say). */
export function osFromBanner(banner: string): string | undefined {
  return OS_HINTS.find(([pattern]) => pattern.test(banner))?.[1];
}

/** The conventional name of a port's service, `unknown` for a port without one. */
export const portServiceName = (port: number): string => PORT_NAMES[port] ?? "unknown";
