/**
 * Named checks on web applications. Each is written once (identity, severity, text) with the test
 * that proves it on a probed application; every proof carries the request that showed it.
 */

import { header, isDirectoryListing } from "../http/analysis.ts";
import type { EntityRef, FoundIssue } from "../module.ts";
import { type ProbedApplication, responseProof } from "./application.ts";

type IssueTemplate = Omit<FoundIssue, "entity" | "details">;

export interface WebCheck extends IssueTemplate {
  /** The proofs of this weakness on the application; empty when it is not there. */
  prove(app: ProbedApplication): Promise<Array<Record<string, unknown>>>;
}

const OWASP_HEADERS = "https://owasp.org/www-project-secure-headers/";

export const directoryListing: WebCheck = {
  name: "directory_listing",
  prettyName: "Directory listing enabled",
  severity: 4,
  confidence: "confirmed",
  category: "misconfiguration",
  description:
    "The server lists the files of a directory to anyone, showing file names (backups, configuration, source) that were never meant to be linked.",
  remediation:
    "Turn automatic indexes off (Apache: Options -Indexes; nginx: autoindex off) or put an index page in place.",
  references: [{ type: "description", uri: "https://cwe.mitre.org/data/definitions/548.html" }],
  async prove(app) {
    return isDirectoryListing(app.page, app.body) ? [responseProof(app.exchange)] : [];
  },
};

export const exposedGitRepository: WebCheck = {
  name: "exposed_git_repository",
  prettyName: "Git repository exposed",
  severity: 2,
  confidence: "confirmed",
  category: "information_disclosure",
  description:
    "The web root serves its .git directory. Anyone can download the repository: the source code, its history, and any secret ever committed.",
  remediation:
    "Deny access to /.git (and other dot-directories) in the server configuration, and deploy without the repository.",
  references: [{ type: "description", uri: "https://cwe.mitre.org/data/definitions/527.html" }],
  async prove(app) {
    const url = new URL("/.git/HEAD", app.exchange.url).href;
    let exchange: Awaited<ReturnType<typeof app.client.fetch>>;
    try {
      exchange = await app.client.fetch(url);
    } catch {
      return [];
    }
    const body = exchange.body.toString("utf8", 0, 200).trim();
    const isHead = /^ref: refs\/[\w./-]+$/.test(body) || /^[0-9a-f]{40}$/.test(body);
    return exchange.status === 200 && isHead ? [{ ...responseProof(exchange), head: body }] : [];
  },
};

export const missingHsts: WebCheck = {
  name: "missing_hsts_header",
  prettyName: "HTTPS without Strict-Transport-Security",
  severity: 4,
  confidence: "confirmed",
  category: "misconfiguration",
  description:
    "The application is served over HTTPS but does not send Strict-Transport-Security, so a browser may still be led to its plain-HTTP address and be intercepted there.",
  remediation:
    'Send "Strict-Transport-Security: max-age=31536000; includeSubDomains" on every HTTPS response.',
  references: [{ type: "description", uri: "https://www.rfc-editor.org/rfc/rfc6797" }],
  async prove(app) {
    const { exchange } = app;
    if (!exchange.url.startsWith("https:") || exchange.status >= 400) return [];
    return header(exchange, "strict-transport-security") === undefined ? [responseProof(exchange)] : [];
  },
};

/** Cookie names and flags from Set-Cookie lines. */
function cookies(app: ProbedApplication) {
  return [...new Set([app.first, app.exchange])].flatMap((exchange) =>
    exchange.headers
      .filter(([name]) => name === "set-cookie")
      .map(([, line]) => {
        const [pair, ...attributes] = line.split(";").map((part) => part.trim());
        const flags = attributes.map((attribute) => attribute.split("=")[0].toLowerCase());
        return {
          exchange,
          name: pair.split("=")[0],
          secure: flags.includes("secure"),
          httpOnly: flags.includes("httponly"),
        };
      }),
  );
}

export const insecureCookie: WebCheck = {
  name: "insecure_cookie",
  prettyName: "Cookie set without Secure or HttpOnly",
  severity: 4,
  confidence: "confirmed",
  category: "misconfiguration",
  description:
    "A cookie set over HTTPS lacks the Secure flag (so it also travels over plain HTTP), or lacks HttpOnly (so any script injected into the page can read it).",
  remediation:
    "Set cookies with Secure and HttpOnly (and SameSite) unless a script really needs to read them.",
  references: [
    { type: "description", uri: "https://developer.mozilla.org/en-US/docs/Web/HTTP/Cookies#security" },
  ],
  async prove(app) {
    const weak = cookies(app).filter(
      (cookie) => cookie.exchange.url.startsWith("https:") && (!cookie.secure || !cookie.httpOnly),
    );
    return weak.map((cookie) => ({
      ...responseProof(cookie.exchange),
      cookie: cookie.name,
      missing: [cookie.secure ? "" : "Secure", cookie.httpOnly ? "" : "HttpOnly"].filter(Boolean),
    }));
  },
};

export const loginFormWithoutTls: WebCheck = {
  name: "login_form_without_tls",
  prettyName: "Login form over plain HTTP",
  severity: 3,
  confidence: "confirmed",
  category: "cleartext_credentials",
  description:
    "A page asks for a password over plain HTTP, or sends it to a plain-HTTP address, so the credentials cross the network readable by anyone on the path.",
  remediation: "Serve the login page and its form target only over HTTPS, and redirect HTTP to HTTPS.",
  references: [{ type: "description", uri: "https://cwe.mitre.org/data/definitions/319.html" }],
  async prove(app) {
    const pageIsPlain = app.exchange.url.startsWith("http:");
    return app.page.forms
      .filter((form) => form.hasPassword && (pageIsPlain || form.action.startsWith("http:")))
      .map((form) => ({ ...responseProof(app.exchange), insecure_resource_url: form.action }));
  },
};

export const serverVersionDisclosure: WebCheck = {
  name: "server_version_disclosure",
  prettyName: "Server software version disclosed",
  severity: 5,
  confidence: "confirmed",
  category: "information_disclosure",
  description:
    "Response headers name the server software with its exact version, which tells an attacker which published vulnerabilities to try.",
  remediation:
    "Hide version numbers (Apache: ServerTokens Prod; nginx: server_tokens off; PHP: expose_php Off).",
  references: [{ type: "description", uri: OWASP_HEADERS }],
  async prove(app) {
    const disclosed = app.exchange.headers.filter(
      ([name, value]) =>
        ["server", "x-powered-by", "x-aspnet-version"].includes(name) && /\d+\.\d+/.test(value),
    );
    return disclosed.length
      ? [{ ...responseProof(app.exchange), headers_disclosed: disclosed.map(([n, v]) => `${n}: ${v}`) }]
      : [];
  },
};

export const WEB_CHECKS: readonly WebCheck[] = [
  directoryListing,
  exposedGitRepository,
  missingHsts,
  insecureCookie,
  loginFormWithoutTls,
  serverVersionDisclosure,
];

export function issueOf(
  check: IssueTemplate,
  entity: EntityRef,
  details: Record<string, unknown>,
): FoundIssue {
  const { name, prettyName, severity, confidence, category, description, remediation, references } = check;
  return {
    name,
    prettyName,
    severity,
    confidence,
    category,
    description,
    remediation,
    references,
    entity,
    details,
  };
}

/** Runs every check on the application and answers the issues found. */
export async function checkApplication(app: ProbedApplication, checks: readonly WebCheck[] = WEB_CHECKS) {
  const entity: EntityRef = { kind: "Uri", name: app.name };
  const issues: FoundIssue[] = [];
  for (const check of checks) {
    for (const proof of await check.prove(app)) issues.push(issueOf(check, entity, proof));
  }
  return issues;
}
