/**
 * Named checks on web applications that the template format cannot express. Each is written once
 * (identity, severity, text) with the test that proves it on a probed application; every proof
 * carries the request that showed it.
 */

import type { EntityRef, FoundIssue } from "../../core/entities.ts";
import { type ProbedApplication, responseProof } from "./application.ts";

type IssueTemplate = Omit<FoundIssue, "entity" | "details">;

export interface WebCheck extends IssueTemplate {
  /** The proofs of this weakness on the application; empty when it is not there. */
  prove(app: ProbedApplication): Promise<Array<Record<string, unknown>>>;
}

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

/**
 * The checks the template format cannot express (one issue per cookie; a form's resolved target).
 * Directory listing, the exposed Git repository, missing HSTS and the disclosed server version are
 * templates now (templates/), raised under the same names by the templates module.
 */
export const WEB_CHECKS: readonly WebCheck[] = [insecureCookie, loginFormWithoutTls];

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
