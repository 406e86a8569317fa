/**
 * The lab's web applications, in zone `globex.test` (addresses `${base}.4.N`), merged into the default
 * world. Each planted product, version and weakness is declared next to the page that plants it, so
 * the truth (web-truth.ts) says what a scanner must find:
 * - legacy: Apache httpd 2.4.49 (CVE-2021-41773, CVE-2021-42013) with a directory listing and an
 *   exposed .git/HEAD;
 * - blog: a WordPress-like page (generator meta tag, jQuery 3.4.1 from a CDN, jQuery UI 1.12.1
 *   named only by a same-host file's banner), PHP in X-Powered-By, a login form over plain HTTP,
 *   a script from cdn.thirdparty.test and a tracking pixel;
 * - shop: HTTPS without Strict-Transport-Security, a cookie without Secure/HttpOnly;
 * - one address with name-based virtual hosts: www (clean; a third-party script and stylesheet, a
 *   video in a frame, a newsletter form posting to a CRM), portal
 *   (IIS/ASP.NET login over plain HTTP), anything else the nginx welcome page;
 * - files: OpenSSH 8.5p1 (CVE-2024-6387) and vsftpd 2.3.4 (CVE-2011-2523) banners;
 * - status (HTTPS) and docs (HTTP): clean, they raise nothing;
 * - mail: Sendmail 8.15.2, greeting with the time.
 * The zone publishes SPF, an enforcing DMARC policy and CAA, so it raises no mail or DNS issue either.
 * Like real sites, the pages say some things differently on every visit — a fresh session cookie, request
 * id, CSP nonce, CSRF token or view state, a clock-made Expires and Last-Modified (besides the Date header
 * every answer has) — while `legacy` serves fixed Last-Modified and ETag headers, as a static site does.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { HostSpec, LabWorld, WebExpectations } from "./types.ts";
import { MISSING_SECURITY_HEADERS, product } from "./web-truth.ts";

/** A header value or page, fixed or made anew for every answer (a session id, a nonce, the time). */
type Made = string | (() => string);
const made = (value: Made) => (typeof value === "function" ? value() : value);

interface Resource {
  status?: number;
  headers?: Record<string, Made>;
  body: Made;
}

/** A site of resources by path; anything else is a 404. Headers apply to every answer. */
function site(headers: Record<string, Made>, resources: Record<string, Resource>): RequestListener {
  return (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? "/").split("?")[0];
    const resource = resources[path] ?? { status: 404, body: "<html><body>Not Found</body></html>" };
    const all = { "content-type": "text/html; charset=utf-8", ...headers, ...resource.headers };
    response.writeHead(
      resource.status ?? 200,
      Object.fromEntries(Object.entries(all).map(([name, value]) => [name, made(value)])),
    );
    response.end(request.method === "HEAD" ? undefined : made(resource.body));
  };
}

/** A fresh random token, as session ids, nonces and CSRF tokens are. */
const token = (bytes = 12) => randomBytes(bytes).toString("hex");
/** An HTTP date `seconds` from now. */
const httpDate = (seconds = 0) => new Date(Date.now() + seconds * 1000).toUTCString();

const html = (title: string, head: string, body: string) =>
  `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>${title}</title>${head}</head><body><h1>${title}</h1>${body}</body></html>\n`;

/** Security headers of a well-configured site. */
const HARDENED = {
  "content-security-policy": "default-src 'self' https://cdn.thirdparty.test https://fonts.fontfoundry.test",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
};

const APACHE = { vendor: "apache", product: "http_server" };
const NGINX = product("Nginx", { vendor: "f5", product: "nginx" });

const legacy: WebExpectations = {
  products: [
    product("Apache HTTP Server", APACHE, "2.4.49", ["CVE-2021-41773", "CVE-2021-42013"]),
    product("UNIX", { part: "o", vendor: "unix", product: "unix" }),
  ],
  issues: [
    "directory_listing",
    "exposed_git_repository",
    "server_version_disclosure",
    ...MISSING_SECURITY_HEADERS,
  ],
};

const blog: WebExpectations = {
  products: [
    product("Apache HTTP Server", APACHE, "2.4.57"),
    product("Debian", { part: "o", vendor: "debian", product: "debian_linux" }),
    product("PHP", { vendor: "php", product: "php" }, "7.3.10", ["CVE-2019-11043"]),
    product("WordPress", { vendor: "wordpress", product: "wordpress" }, "5.8.2"),
    product("jQuery", { vendor: "jquery", product: "jquery" }, "3.4.1", ["CVE-2020-11022", "CVE-2020-11023"]),
    product("jQuery UI", { vendor: "jquery", product: "jquery_ui" }, "1.12.1"),
  ],
  issues: ["login_form_without_tls", "server_version_disclosure", ...MISSING_SECURITY_HEADERS],
  thirdParties: [
    { host: "cdn.jsdelivr.net", kind: "script" },
    { host: "cdn.thirdparty.test", kind: "script" },
    { host: "pixel.adnetwork.test", kind: "web_resource" },
  ],
};

const LOGIN_FORM = (action: string, user: string, password: string, hidden = "") =>
  `<form action="${action}" method="post">${hidden}<input name="${user}"><input type="password" name="${password}"><button>Log in</button></form>`;

export function webWorld(base: string): Pick<LabWorld, "zones" | "hosts" | "bruteforceWords"> {
  const ip = (suffix: string) => `${base}.4.${suffix}`;
  const hosts: HostSpec[] = [
    {
      ip: ip("10"),
      names: ["legacy.globex.test"],
      services: [
        {
          kind: "http",
          port: 80,
          server: "Apache/2.4.49 (Unix)",
          title: "Index of /",
          handler: site(
            { "last-modified": "Tue, 14 Sep 2021 08:00:00 GMT", etag: '"1f4-5cbf0b1c9e400"' },
            {
              "/": {
                body: `<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2 Final//EN">\n<html><head><title>Index of /</title></head><body><h1>Index of /</h1><ul><li><a href="backup-2021.tar.gz"> backup-2021.tar.gz</a></li><li><a href="config.php.bak"> config.php.bak</a></li></ul></body></html>\n`,
              },
              "/.git/HEAD": { headers: { "content-type": "text/plain" }, body: "ref: refs/heads/master\n" },
            },
          ),
          expect: legacy,
        },
      ],
    },
    {
      ip: ip("11"),
      names: ["files.globex.test"],
      services: [
        {
          kind: "ssh",
          port: 22,
          banner: "SSH-2.0-OpenSSH_8.5p1 Debian-1",
          products: [
            product("OpenSSH", { vendor: "openbsd", product: "openssh" }, "8.5p1", ["CVE-2024-6387"]),
          ],
        },
        {
          kind: "ftp",
          port: 21,
          banner: "220 (vsFTPd 2.3.4)",
          products: [
            product("vsftpd", { vendor: "vsftpd_project", product: "vsftpd" }, "2.3.4", ["CVE-2011-2523"]),
          ],
        },
      ],
    },
    {
      ip: ip("12"),
      names: ["blog.globex.test"],
      services: [
        {
          kind: "http",
          port: 80,
          server: "Apache/2.4.57 (Debian)",
          title: "Globex Blog",
          handler: site(
            { "x-powered-by": "PHP/7.3.10", "x-request-id": () => token() },
            {
              "/": {
                body: () =>
                  html(
                    "Globex Blog",
                    '<meta name="generator" content="WordPress 5.8.2">' +
                      '<link rel="stylesheet" href="/wp-content/themes/globex/style.css">' +
                      // jQuery from a CDN (its version in the package path), jQuery UI named only by
                      // the banner of a same-host file.
                      '<script src="https://cdn.jsdelivr.net/npm/jquery@3.4.1/dist/jquery.min.js"></script>' +
                      '<script src="/wp-content/themes/globex/vendor.js"></script>' +
                      '<script src="https://cdn.thirdparty.test/app.js"></script>',
                    `<p>News from Globex.</p>${LOGIN_FORM("/wp-login.php", "log", "pwd", `<input type="hidden" name="_wpnonce" value="${token(5)}">`)}<img src="https://pixel.adnetwork.test/p.gif" alt="">`,
                  ),
              },
              "/wp-content/themes/globex/vendor.js": {
                headers: { "content-type": "application/javascript" },
                body: `/*! jQuery UI - v1.12.1 - 2016-09-14\n* http://jqueryui.com\n* Copyright jQuery Foundation and other contributors; Licensed MIT */\n(function(t){"use strict";t.ui=t.ui||{}})(window.jQuery);\n${"/* theme */\n".repeat(2000)}`,
              },
            },
          ),
          expect: blog,
        },
      ],
    },
    {
      ip: ip("13"),
      names: ["shop.globex.test"],
      services: [
        {
          kind: "https",
          port: 443,
          server: "nginx",
          title: "Globex Shop",
          certificate: {
            commonName: "shop.globex.test",
            altNames: ["shop.globex.test"],
            key: "ecdsa-p256",
            issuer: "lab-ca",
          },
          handler: site(
            { "set-cookie": () => `cart_id=${token(8)}; Path=/` },
            { "/": { body: html("Globex Shop", "", "<p>Everything Globex makes.</p>") } },
          ),
          expect: {
            products: [NGINX],
            issues: ["insecure_cookie", "missing_hsts_header", ...MISSING_SECURITY_HEADERS],
          },
        },
      ],
    },
    {
      // One address, three sites: the Host header picks one.
      ip: ip("14"),
      names: ["www.globex.test", "portal.globex.test"],
      services: [
        {
          kind: "http",
          port: 80,
          server: "nginx",
          title: "Welcome to nginx!",
          handler: site(
            {},
            {
              "/": {
                body: html(
                  "Welcome to nginx!",
                  "",
                  "<p>If you see this page, the nginx web server is successfully installed and working.</p>",
                ),
              },
            },
          ),
          expect: { products: [NGINX], issues: MISSING_SECURITY_HEADERS },
          virtualHosts: [
            {
              names: ["www.globex.test"],
              server: "nginx",
              title: "Globex Corporation",
              handler: site(HARDENED, {
                "/": {
                  body: () =>
                    html(
                      "Globex Corporation",
                      `<meta name="csrf-token" content="${token(16)}">` +
                        '<link rel="stylesheet" href="https://fonts.fontfoundry.test/css?family=Inter">' +
                        '<script src="https://cdn.thirdparty.test/app.js"></script>',
                      "<p>Making things since 1989.</p>" +
                        '<iframe src="https://embed.videohost.test/v/42" title="Our story"></iframe>' +
                        '<form action="https://forms.crm.test/subscribe" method="post"><input name="email"><button>Subscribe</button></form>',
                    ),
                },
              }),
              expect: {
                products: [NGINX],
                issues: [],
                thirdParties: [
                  { host: "cdn.thirdparty.test", kind: "script" },
                  { host: "fonts.fontfoundry.test", kind: "stylesheet" },
                  { host: "embed.videohost.test", kind: "frame" },
                  { host: "forms.crm.test", kind: "form" },
                ],
              },
            },
            {
              names: ["portal.globex.test"],
              server: "Microsoft-IIS/10.0",
              title: "Globex Employee Portal",
              handler: site(
                {
                  "x-powered-by": "ASP.NET",
                  "x-aspnet-version": "4.0.30319",
                  "set-cookie": () => `ASP.NET_SessionId=${token(12)}; path=/; HttpOnly`,
                },
                {
                  "/": {
                    body: () =>
                      html(
                        "Globex Employee Portal",
                        "",
                        LOGIN_FORM(
                          "/Account/Login.aspx",
                          "UserName",
                          "Password",
                          `<input type="hidden" name="__VIEWSTATE" id="__VIEWSTATE" value="/wEP${token(24)}">`,
                        ),
                      ),
                  },
                },
              ),
              expect: {
                products: [
                  product("IIS", { vendor: "microsoft", product: "internet_information_services" }, "10.0"),
                  product("Microsoft ASP.NET", { vendor: "microsoft", product: "asp.net" }, "4.0.30319"),
                ],
                issues: ["login_form_without_tls", "server_version_disclosure", ...MISSING_SECURITY_HEADERS],
              },
            },
          ],
        },
      ],
    },
    {
      ip: ip("15"),
      names: ["status.globex.test"],
      services: [
        {
          kind: "https",
          port: 443,
          server: "nginx",
          title: "Globex Status",
          certificate: {
            commonName: "status.globex.test",
            altNames: ["status.globex.test"],
            key: "ecdsa-p256",
            issuer: "lab-ca",
          },
          handler: (request, response) => {
            // One nonce per answer, in the policy and on the inline script it allows.
            const nonce = randomBytes(16).toString("base64");
            site(
              {
                ...HARDENED,
                "content-security-policy": `${HARDENED["content-security-policy"]}; script-src 'self' 'nonce-${nonce}'`,
                "strict-transport-security": "max-age=31536000; includeSubDomains",
                "set-cookie": () =>
                  `sid=${token(8)}; Path=/; Expires=${httpDate(3600)}; Secure; HttpOnly; SameSite=Lax`,
                "x-request-id": () => token(),
              },
              {
                "/": {
                  body: html(
                    "Globex Status",
                    "",
                    `<p>All systems operational.</p><script nonce="${nonce}">document.body.dataset.ok = "1";</script>`,
                  ),
                },
              },
            )(request, response);
          },
          // The HSTS header is itself a technology to webappanalyzer.
          expect: { products: [NGINX, product("HSTS", null)], issues: [] },
        },
      ],
    },
    {
      ip: ip("16"),
      names: ["docs.globex.test"],
      services: [
        {
          kind: "http",
          port: 80,
          server: "Caddy",
          title: "Globex Docs",
          handler: site(
            {
              ...HARDENED,
              "cache-control": "max-age=300",
              expires: () => httpDate(300),
              "last-modified": () => httpDate(),
            },
            { "/": { body: html("Globex Docs", "", "<p>Manuals for every Globex product.</p>") } },
          ),
          expect: { products: [product("Caddy", { vendor: "caddyserver", product: "caddy" })], issues: [] },
        },
      ],
    },
    {
      ip: ip("17"),
      names: ["mail.globex.test"],
      services: [
        {
          kind: "smtp",
          port: 25,
          hostname: "mail.globex.test",
          banner: "220 mail.globex.test ESMTP Sendmail 8.15.2/8.15.2",
          clock: true,
        },
      ],
    },
  ];
  return {
    zones: [
      {
        name: "globex.test",
        records: [
          { name: "globex.test", type: "TXT", data: "v=spf1 -all" },
          {
            name: "_dmarc.globex.test",
            type: "TXT",
            data: "v=DMARC1; p=reject; rua=mailto:dmarc@globex.test",
          },
          { name: "globex.test", type: "CAA", data: { flags: 0, tag: "issue", value: "letsencrypt.org" } },
        ],
      },
    ],
    hosts,
    bruteforceWords: ["legacy", "files", "blog", "shop", "www", "portal", "status", "docs", "mail"],
  };
}

/** A world with the web applications added. */
export function withWebApplications(world: LabWorld, base: string): LabWorld {
  const web = webWorld(base);
  return {
    ...world,
    zones: [...world.zones, ...web.zones],
    hosts: [...world.hosts, ...web.hosts],
    bruteforceWords: [...new Set([...world.bruteforceWords, ...web.bruteforceWords])],
  };
}
