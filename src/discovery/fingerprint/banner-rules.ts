/**
 * Sightline's own rules for service banners (SSH, SMTP, FTP, MySQL, Redis) and for the Server
 * headers of web servers, with CPE vendor/product names as NVD spells them. Each pattern captures
 * `version` and, where NVD keeps a suffix apart, `update` (OpenSSH "8.9" + "p1").
 */
import type { Detection } from "../../core/facts.ts";

interface BannerRule {
  name: string;
  vendor: string;
  product: string;
  tags: string[];
  pattern: RegExp;
}

export const BANNER_RULES: BannerRule[] = [
  {
    name: "OpenSSH",
    vendor: "openbsd",
    product: "openssh",
    tags: ["SSH servers"],
    pattern: /^SSH-[\d.]+-OpenSSH_(?<version>\d+\.\d+(?:\.\d+)?)(?<update>p\d+)?/im,
  },
  {
    name: "Dropbear SSH",
    vendor: "dropbear_ssh_project",
    product: "dropbear_ssh",
    tags: ["SSH servers"],
    pattern: /^SSH-[\d.]+-dropbear_(?<version>\d+\.\d+(?:\.\d+)?)/im,
  },
  {
    name: "Exim",
    vendor: "exim",
    product: "exim",
    tags: ["Mail servers"],
    pattern: /^220[ -].*\bExim (?<version>\d+\.\d+(?:\.\d+)?)/im,
  },
  {
    name: "Postfix",
    vendor: "postfix",
    product: "postfix",
    tags: ["Mail servers"],
    pattern: /^220[ -].*\bESMTP Postfix\b/im,
  },
  {
    name: "Sendmail",
    vendor: "sendmail",
    product: "sendmail",
    tags: ["Mail servers"],
    pattern: /^220[ -].*\bSendmail (?<version>\d+\.\d+\.\d+)/im,
  },
  {
    name: "Microsoft Exchange Server",
    vendor: "microsoft",
    product: "exchange_server",
    tags: ["Mail servers"],
    pattern: /^220[ -].*Microsoft ESMTP MAIL Service/im,
  },
  {
    name: "vsftpd",
    vendor: "vsftpd_project",
    product: "vsftpd",
    tags: ["FTP servers"],
    pattern: /^220[ -]\(vsFTPd (?<version>\d+\.\d+(?:\.\d+)?)\)/im,
  },
  {
    name: "ProFTPD",
    vendor: "proftpd",
    product: "proftpd",
    tags: ["FTP servers"],
    pattern: /^220[ -].*\bProFTPD (?<version>\d+\.\d+\.\d+)(?<update>[a-z]|rc\d+)?\b/im,
  },
  {
    name: "Pure-FTPd",
    vendor: "pureftpd",
    product: "pure-ftpd",
    tags: ["FTP servers"],
    pattern: /^220[ -].*Pure-FTPd/im,
  },
  {
    name: "FileZilla Server",
    vendor: "filezilla-project",
    product: "filezilla_server",
    tags: ["FTP servers"],
    pattern: /^220[ -].*FileZilla Server(?: version)? (?<version>\d+\.\d+\.\d+)/im,
  },
  {
    // The port scan writes a MySQL protocol-10 greeting as "MySQL <server version>" (services.ts);
    // MariaDB prefixes its version with 5.5.5- for old clients.
    name: "MariaDB",
    vendor: "mariadb",
    product: "mariadb",
    tags: ["Databases"],
    pattern: /^MySQL (?:5\.5\.5-)?(?<version>\d+\.\d+\.\d+)-MariaDB/,
  },
  {
    name: "MySQL",
    vendor: "oracle",
    product: "mysql",
    tags: ["Databases"],
    pattern: /^MySQL (?<version>\d+\.\d+\.\d+)(?![\w.-]*MariaDB)/,
  },
  {
    name: "Redis",
    vendor: "redis",
    product: "redis",
    tags: ["Databases"],
    pattern: /^redis_version:(?<version>\d+\.\d+\.\d+)/m,
  },
  {
    name: "Redis",
    vendor: "redis",
    product: "redis",
    tags: ["Databases"],
    pattern: /^-NOAUTH Authentication required/m,
  },
  {
    name: "Apache HTTP Server",
    vendor: "apache",
    product: "http_server",
    tags: ["Web servers"],
    pattern: /^Server: Apache(?:\/(?<version>\d+\.\d+\.\d+))?/im,
  },
  {
    name: "Nginx",
    vendor: "f5",
    product: "nginx",
    tags: ["Web servers", "Reverse proxies"],
    pattern: /^Server: nginx(?:\/(?<version>\d+\.\d+\.\d+))?/im,
  },
  {
    name: "IIS",
    vendor: "microsoft",
    product: "internet_information_services",
    tags: ["Web servers"],
    pattern: /^Server: Microsoft-IIS(?:\/(?<version>\d+\.\d+))?/im,
  },
  {
    name: "lighttpd",
    vendor: "lighttpd",
    product: "lighttpd",
    tags: ["Web servers"],
    pattern: /^Server: lighttpd(?:\/(?<version>\d+\.\d+\.\d+))?/im,
  },
  {
    name: "OpenSSL",
    vendor: "openssl",
    product: "openssl",
    tags: ["SSL/TLS certificate authorities"],
    pattern: /^Server: .*\bOpenSSL\/(?<version>\d+\.\d+\.\d+[a-z]?)/im,
  },
];

const RULE_NAMES = new Map(
  BANNER_RULES.toReversed().map((rule) => [`${rule.vendor}:${rule.product}`, rule.name]),
);

/** The name these rules give a CPE product (so a service, an application and Recog name it alike). */
export const ruleName = (vendor: string, product: string): string | undefined =>
  RULE_NAMES.get(`${vendor}:${product}`);

/** Shodan-compatible favicon hashes of well-known default icons. */
export const FAVICON_RULES: Record<number, Omit<BannerRule, "pattern">> = {
  116323821: { name: "Spring Boot", vendor: "vmware", product: "spring_boot", tags: ["Web frameworks"] },
};

const quote = (text: string) => JSON.stringify(text.length > 120 ? `${text.slice(0, 117)}...` : text);

/** Products a banner (or an HTTP response's header block) shows. */
export function detectBannerProducts(banner: string): Detection[] {
  const found: Detection[] = [];
  for (const rule of BANNER_RULES) {
    const match = rule.pattern.exec(banner);
    if (!match) continue;
    const line = banner
      .slice(match.index)
      .split(/\r?\n/)[0]
      .replace(/[^\x20-\x7e]/g, "");
    found.push({
      name: rule.name,
      vendor: rule.vendor,
      product: rule.product,
      part: "a",
      version: match.groups?.version ?? "",
      update: match.groups?.update ?? "",
      tags: rule.tags,
      matchType: "banner",
      matchDetails: `banner ${quote(line)}`,
    });
  }
  return found;
}

export function detectFavicon(hash: number): Detection[] {
  const rule = FAVICON_RULES[hash];
  if (!rule) return [];
  return [
    {
      ...rule,
      part: "a",
      version: "",
      update: "",
      matchType: "favicon",
      matchDetails: `favicon hash ${hash}`,
    },
  ];
}
