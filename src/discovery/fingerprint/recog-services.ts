/**
 * What Recog's databases say of the texts service identification and the HTTP module already read: a
 * service's greeting (SSH, FTP, SMTP, POP3, IMAP, NNTP, telnet, a MySQL greeting's version), a UDP
 * service's answer (SNMP sysDescr, SIP's Server), a web response's `Server`, `X-Powered-By`,
 * `WWW-Authenticate`, cookies and title, and a certificate's subject and issuer. Each text is put as Recog's
 * examples write it (the reply code, `SSH-2.0-` or `+OK` taken off) before it is matched.
 *
 * A match gives a product (display name, CPE 2.3 with its version) and, where the fingerprint tells
 * them, operating-system and hardware facts. `rule` names the database and the fingerprint that matched.
 */
import { formatCpe, parseCpe } from "../../core/cpe.ts";
import type { Detection, HttpEvidence } from "../../core/facts.ts";
import { ruleName } from "./banner-rules.ts";
import { type RecogMatch, recogIdentify, toCpe23 } from "./recog.ts";

/** The Recog database for each protocol Sightline names, and how a banner is turned into its text. */
const SERVICE_TEXTS: Record<string, { kind: string; text(banner: string): string }> = {
  ssh: { kind: "ssh.banner", text: (banner) => banner.replace(/^SSH-\d+\.\d+-/, "") },
  ftp: { kind: "ftp.banner", text: (banner) => banner.replace(/^\d{3}[- ]\s*/, "") },
  smtp: { kind: "smtp.banner", text: (banner) => banner.replace(/^\d{3}[- ]\s*/, "") },
  nntp: { kind: "nntp.banner", text: (banner) => banner.replace(/^\d{3}[- ]\s*/, "") },
  pop3: { kind: "pop3.banner", text: (banner) => banner.replace(/^\+OK\s*/, "") },
  imap: {
    kind: "imap4.banner",
    text: (banner) => banner.replace(/^\* (?:OK|PREAUTH)\s*(?:\[[^\]]*\]\s*)?/i, ""),
  },
  telnet: { kind: "telnet.banners", text: (banner) => banner },
  mysql: { kind: "mysql.banners", text: (banner) => banner.replace(/^MySQL /, "") },
  snmp: { kind: "snmp.sys_description", text: (banner) => banner },
  ntp: { kind: "ntp.readvar", text: (banner) => banner },
  domain: { kind: "dns.versionbind", text: (banner) => banner },
  x11: { kind: "x11.vendor", text: (banner) => banner },
  // A SIP answer's Server header (or a User-Agent, which Recog's server database mostly matches too).
  sip: { kind: "sip_header.server", text: (banner) => banner },
};

/** The Recog database that reads a protocol's text, if there is one. */
export const recogKindOf = (service: string): string | undefined =>
  SERVICE_TEXTS[service.replace(/^ssl\//, "")]?.kind;

/** A product as Recog names it, ready for a service identity or a detection. */
export interface RecogProduct {
  name: string;
  vendor: string;
  product: string;
  part: Detection["part"];
  version: string;
  update: string;
  /** CPE 2.3 with the version (`*` when not told); empty when the fingerprint gives no CPE. */
  cpe: string;
  /** Operating system and hardware facts, as `os`, `os_cpe`, `hardware`, `hardware_cpe`. */
  facts: Record<string, string>;
  /** `recog ssh.banner: OpenSSH running on Ubuntu 22.04`. */
  rule: string;
}

/** NVD keeps a release suffix apart from the version (OpenSSH "8.9" + "p1", ProFTPD "1.3.5" + "a"). */
export function splitVersion(version: string): { version: string; update: string } {
  const parts = /^(\d+(?:\.\d+)+)(p\d+|rc\d+|[a-z])$/.exec(version);
  return parts ? { version: parts[1], update: parts[2] } : { version, update: "" };
}

const words = (...values: Array<string | undefined>) =>
  values
    .filter((value): value is string => !!value)
    .filter((value, index, all) => all.indexOf(value) === index)
    .join(" ");

/**
 * A Recog match as a product and the machine's facts; `name` is empty when it names no product (an
 * SNMP sysDescr tells the operating system and the device, not a service), undefined when it tells
 * neither (a `login:` prompt, a generic stack).
 */
export function recogProduct(match: RecogMatch): RecogProduct | undefined {
  const params = match.params;
  const productName = params["service.product"] ?? "";
  const { version, update } = splitVersion(params["service.version"] ?? "");
  const cpe = parseCpe(toCpe23(params["service.cpe23"]) ?? "");
  const vendor = cpe?.vendor ?? "";
  const product = cpe?.product ?? "";
  const shown = params["service.vendor"];
  const name = !productName
    ? ""
    : (ruleName(vendor, product) ??
      (shown && !productName.toLowerCase().startsWith(shown.toLowerCase())
        ? `${shown} ${productName}`
        : productName));
  const facts: Record<string, string> = {};
  const os = words(params["os.vendor"], params["os.product"], params["os.version"]);
  if (os) facts.os = os;
  const osCpe = toCpe23(params["os.cpe23"]);
  if (osCpe) facts.os_cpe = osCpe;
  const hardware = words(params["hw.vendor"], params["hw.product"], params["hw.version"]);
  if (hardware) facts.hardware = hardware;
  const hardwareCpe = toCpe23(params["hw.cpe23"]);
  if (hardwareCpe) facts.hardware_cpe = hardwareCpe;
  if (!productName && Object.keys(facts).length === 0) return undefined;
  return {
    name,
    vendor,
    product,
    part: (cpe?.part as Detection["part"]) || "a",
    version,
    update,
    cpe: cpe
      ? formatCpe({ part: cpe.part, vendor, product, version: version || "*", update: update || "*" })
      : "",
    facts,
    rule: `recog ${match.source.replace(/^recog:/, "")}: ${match.description}`,
  };
}

/** What Recog's database for `service` says of its banner (the service's first line or answer). */
export function recogService(service: string, banner: string): RecogProduct | undefined {
  const reader = SERVICE_TEXTS[service.replace(/^ssl\//, "")];
  if (!reader || banner === "") return undefined;
  const match = recogIdentify(reader.kind, reader.text(banner).trim());
  return match ? recogProduct(match) : undefined;
}

/**
 * Whether Recog's product tells more than Sightline's own rule did: a product where it named none, a
 * version where it read none, or a longer version of the same product. A tie keeps Sightline's.
 */
export function tellsMore(own: { product?: string; version?: string }, recog: RecogProduct): boolean {
  if (!recog.name) return false;
  if (!own.product) return true;
  const version = `${recog.version}${recog.update}`;
  if (!version) return false;
  return !own.version || (version.startsWith(own.version) && version.length > own.version.length);
}

/** The web response's texts Recog has databases for, each as its examples write it. */
function httpTexts(evidence: HttpEvidence): Array<[kind: string, text: string, seen: string]> {
  const texts: Array<[string, string, string]> = [];
  for (const [name, value] of evidence.headers) {
    if (name === "server") texts.push(["http_header.server", value, "server header"]);
    else if (name === "x-powered-by") texts.push(["http_header.x-powered-by", value, "x-powered-by header"]);
    else if (name === "www-authenticate")
      texts.push(["http_header.wwwauth", value, "www-authenticate header"]);
  }
  for (const cookie of evidence.setCookies)
    texts.push(["http_header.cookie", cookie.split(";")[0] ?? "", "cookie"]);
  const title = /<title[^>]*>([^<]{1,200})<\/title>/i.exec(evidence.body)?.[1]?.trim();
  if (title) texts.push(["html_title", title, "title"]);
  return texts;
}

/** Products Recog names from a web response, as detections beside the web rules'. */
export function recogHttpDetections(evidence: HttpEvidence): Detection[] {
  const detections: Detection[] = [];
  for (const [kind, text, seen] of httpTexts(evidence)) {
    const match = recogIdentify(kind, text);
    const found = match && recogProduct(match);
    if (!found?.name) continue;
    detections.push({
      name: found.name,
      vendor: found.vendor,
      product: found.product,
      part: found.part,
      version: found.version,
      update: found.update,
      tags: [],
      matchType:
        seen === "cookie" ? "content_cookies" : seen === "title" ? "content_body" : "content_headers",
      matchDetails: `${seen} ${JSON.stringify(text.slice(0, 120))} (${found.rule})`,
    });
  }
  return detections;
}

/** Node writes a name one attribute a line, in the certificate's order; Recog reads RFC 4514's, CN first. */
const rfc4514 = (name: string) =>
  name
    .split("\n")
    .filter(Boolean)
    .reverse()
    .map((attribute) => {
      const at = attribute.indexOf("=");
      return `${attribute.slice(0, at)}=${attribute.slice(at + 1).replace(/([,+"\\<>;])/g, "\\$1")}`;
    })
    .join(",");

/**
 * What Recog's x509 databases say of a certificate's subject and issuer (Node's form of the names):
 * the device or product that made it (a router's or a firewall's own certificate), as entity details
 * (`device` its kind, `hardware` and `os` with their CPEs, `product`, `fingerprint_rule`). Empty when
 * neither name tells anything (a public CA's issuer names no device).
 */
export function recogCertificate(subject: string, issuer: string): Record<string, string> {
  for (const [kind, name] of [
    ["x509.subject", subject],
    ["x509.issuer", issuer],
  ] as const) {
    const match = name ? recogIdentify(kind, rfc4514(name)) : undefined;
    const found = match && recogProduct(match);
    if (!found) continue;
    // What kind of device it is ("Router", "Firewall"); `hardware` names it.
    const device = match.params["hw.device"] ?? match.params["os.device"];
    return {
      ...(found.name ? { product: found.name } : {}),
      ...(found.cpe ? { product_cpe: found.cpe } : {}),
      ...(device ? { device } : {}),
      ...found.facts,
      fingerprint_rule: found.rule,
    };
  }
  return {};
}
