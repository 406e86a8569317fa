/**
 * The template engine on real HTTP servers (127.117.1.1): what the subset means (two-step templates
 * with req-condition, internal extractors feeding the next request, raw requests, cookies, extractors
 * of every kind), and the issue's "Bad input": a template that does not parse, an unknown protocol, a
 * catastrophic regex, a 20 MB body, a redirect loop, an unknown DSL function, a request out of scope.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createTemplatesModule, severityOf } from "../../../src/discovery/modules/templates.ts";
import { evaluate, parseDsl } from "../../../src/discovery/templates/dsl.ts";
import { excluded, loadDirectory } from "../../../src/discovery/templates/library.ts";
import { runOperators } from "../../../src/discovery/templates/operators.ts";
import { parseTemplate } from "../../../src/discovery/templates/template.ts";
import { listenTcp, withRandomPort } from "../../lab/sockets.ts";
import { application, context } from "./helpers.ts";

const HOST = "127.117.1.1";
/** The bodies /sign-in received, in order. */
const signIns: string[] = [];
const TWENTY_MB = 20 * 1024 * 1024;

function handler(request: IncomingMessage, response: ServerResponse) {
  const url = new URL(request.url ?? "/", "http://x");
  const send = (status: number, body: string | Buffer, headers: Record<string, string> = {}) => {
    response.writeHead(status, { "content-type": "text/plain", ...headers });
    response.end(body);
  };
  switch (url.pathname) {
    case "/login":
      if (request.method === "POST") return send(200, "welcome", { "set-cookie": "session=s3cret; Path=/" });
      return send(405, "");
    case "/account":
      return request.headers.cookie === "session=s3cret"
        ? send(200, "account of alice")
        : send(401, "log in");
    case "/token":
      return send(200, '{"token":"t-42"}', { "content-type": "application/json" });
    case "/use-token":
      return request.headers.authorization === "Bearer t-42" ? send(200, "token accepted") : send(403, "no");
    case "/version":
      return send(200, '{"app":{"version":"2.4.1","names":["a","b"]}}', {
        "content-type": "application/json",
      });
    case "/page":
      return send(
        200,
        '<html><head><title>Hello</title></head><body><a href="/x" id="l">link</a></body></html>',
        {
          "content-type": "text/html",
          "x-app-version": "7.1",
        },
      );
    case "/a":
      return send(302, "", { location: "/b" });
    case "/b":
      return send(302, "", { location: "/a" });
    case "/big": {
      // 20 MB of "a" with a marker at the very start and another at the very end.
      response.writeHead(200, { "content-type": "text/plain" });
      const chunk = Buffer.alloc(1024 * 1024, "a");
      response.write("START");
      let sent = 0;
      const pump = () => {
        while (sent < 20) {
          sent++;
          if (!response.write(chunk)) return response.once("drain", pump);
        }
        response.end("END-MARKER");
      };
      response.on("error", () => {});
      pump();
      return;
    }
    case "/sign-in": {
      // A login form: admin/admin is the default account; every request is logged as it came.
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        signIns.push(body);
        const form = new URLSearchParams(body);
        if (form.get("user") === "admin" && form.get("pass") === "admin") send(200, "Welcome, admin");
        else send(401, "wrong user or password");
      });
      return;
    }
    case "/vars":
      return send(200, url.search);
    case "/echo": {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => send(200, `${request.method} ${body} ${request.headers["x-test"] ?? ""}`));
      return;
    }
    default:
      if (url.pathname === "/files/secret.bak") return send(200, "SECRET BACKUP");
      return send(404, "not found");
  }
}

describe("the template engine", () => {
  let server: Server;
  let base: string;
  let close: () => Promise<void>;
  let directory: string;

  before(async () => {
    server = createServer(handler);
    const port = await withRandomPort(async (p) => {
      close = (await listenTcp(server, HOST, p)).close;
      return p;
    });
    base = `http://app.engine.test:${port}`;
    directory = mkdtempSync(join(tmpdir(), "sightline-templates-"));
  });
  after(async () => {
    server.closeAllConnections();
    await close?.();
    rmSync(directory, { recursive: true, force: true });
  });

  /** Runs one template (YAML text) on the test server; answers the issues and notes. */
  async function run(yaml: string, options: { maxBodyBytes?: number } = {}) {
    const dir = mkdtempSync(join(directory, "t-"));
    writeFileSync(join(dir, "t.yaml"), yaml);
    const ctx = context({ templates: { builtIn: false, directories: [dir] }, ...options });
    await createTemplatesModule().run(application(base, HOST), ctx);
    return ctx;
  }

  const header = (id: string, severity = "medium", tags = "test") =>
    `id: ${id}\ninfo:\n  name: ${id}\n  author: test\n  severity: ${severity}\n  tags: ${tags}\n`;

  test("a two-step template: a cookie from the first request, req-condition over both", async () => {
    const ctx = await run(`${header("two-step")}
http:
  - raw:
      - |
        POST /login HTTP/1.1
        Host: {{Hostname}}
        Content-Type: application/x-www-form-urlencoded

        user=alice&pass=x
      - |
        GET /account HTTP/1.1
        Host: {{Hostname}}
    cookie-reuse: true
    req-condition: true
    matchers:
      - type: dsl
        dsl:
          - 'status_code_1 == 200 && status_code_2 == 200 && contains(body_2, "account of alice")'
`);
    assert.equal(ctx.issues.length, 1, JSON.stringify(ctx.notes));
    const [issue] = ctx.issues;
    assert.equal(issue.name, "template:two-step");
    assert.equal(issue.severity, 3);
    assert.equal((issue.details.request as { url: string }).url, `${base}/account`);
    assert.match(String(issue.details.template_sha256), /^[0-9a-f]{64}$/);
    assert.equal(issue.details.template_id, "two-step");
  });

  test("an internal extractor feeds the next request; extractors of every kind land in the details", async () => {
    const ctx = await run(`${header("chain")}
http:
  - method: GET
    path:
      - "{{BaseURL}}/token"
      - "{{BaseURL}}/use-token"
    headers:
      Authorization: "Bearer {{token}}"
    extractors:
      - type: json
        name: token
        internal: true
        json:
          - ".token"
    matchers:
      - type: word
        words:
          - "token accepted"
`);
    assert.equal(ctx.issues.length, 1);
    assert.equal(ctx.issues[0].details.uri, `${base}/use-token`);

    const extracted = await run(`${header("extract")}
http:
  - method: GET
    path:
      - "{{BaseURL}}/page"
      - "{{BaseURL}}/version"
    matchers:
      - type: status
        status:
          - 200
    extractors:
      - type: regex
        name: title
        group: 1
        regex:
          - "<title>([^<]+)</title>"
      - type: kval
        name: app_version
        kval:
          - x-app-version
      - type: xpath
        name: link
        attribute: href
        xpath:
          - "//a[@id='l']"
      - type: json
        name: names
        json:
          - ".app.names[]"
      - type: dsl
        name: length
        dsl:
          - "len(body)"
`);
    const details = extracted.issues[0].details.extracted as Record<string, string[]>;
    assert.deepEqual(details.title, ["Hello"]);
    assert.deepEqual(details.app_version, ["7.1"]);
    assert.deepEqual(details.link, ["/x"]);
    assert.deepEqual(details.names, ["a", "b"]);
    assert.ok(details.length.includes("45"), "the length of the JSON document");
  });

  test("bodies, methods and headers are sent; negative and case-insensitive matchers; matched part", async () => {
    const ctx = await run(`${header("echo", "critical")}
variables:
  word: "{{to_upper('hello')}}"
http:
  - method: PUT
    path:
      - "{{BaseURL}}/echo"
    headers:
      X-Test: "{{base64('a:b')}}"
    body: "payload={{word}}"
    matchers-condition: and
    matchers:
      - type: word
        case-insensitive: true
        words:
          - "put payload=hello YTpi"
      - type: word
        negative: true
        words:
          - "GET"
      - type: size
        size:
          - 22
`);
    assert.equal(ctx.issues.length, 1, JSON.stringify(ctx.notes));
    assert.equal(ctx.issues[0].severity, 1);
    assert.deepEqual(ctx.issues[0].details.matched, { part: "body", excerpt: "PUT payload=HELLO YTpi" });
  });

  test("the DSL: helpers, operators, compare_versions", () => {
    const value = (source: string, variables = {}) => evaluate(parseDsl(source), variables);
    assert.equal(value('contains_all("abc", "a", "c") && !contains_any("abc", "x", "y")'), true);
    assert.equal(value('md5("sightline")'), "9f84badb3704dc401f9eb880366c160a");
    assert.equal(value('sha256("")'), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert.equal(value('base64_decode(base64("x:y"))'), "x:y");
    assert.equal(value('compare_versions(v, "< 2.4.2", ">= 2.0")', { v: "2.4.1" }), true);
    assert.equal(value('compare_versions(v, "< 2.4.2")', { v: "2.4.10" }), false);
    assert.equal(value('status_code >= 200 && status_code < 300 ? "ok" : "no"', { status_code: 204 }), "ok");
    assert.equal(value('regex("^v[0-9]+", to_lower(x))', { x: "V12" }), true);
    assert.equal(value('len(trim_space("  ab "))'), 2);
    assert.equal(value('x =~ "b+"', { x: "abbb" }), true);
  });

  test("operators: extractors count only on a match, internal ones always; no matchers is a match by extraction", () => {
    const block = (operators: string) =>
      parseTemplate(`${header("ops")}http:\n  - path: ["{{BaseURL}}"]\n${operators}`, "ops.yaml").http[0];
    const parts = (body: string) => ({ variables: { body, status_code: 200 } });
    const extractors = `    extractors:
      - type: regex
        name: version
        group: 1
        regex: ['v(\\d+)']
      - type: regex
        name: token
        internal: true
        group: 1
        regex: ['t=(\\w+)']
`;
    const matchers = `    matchers:
      - type: word
        name: hello
        words: ["hello"]
      - type: word
        name: world
        words: ["world"]
`;
    const either = block(`${matchers}${extractors}`);
    const hit = runOperators(either, parts("hello world v7 t=abc"));
    assert.equal(hit.matched, true);
    assert.deepEqual(hit.matcherNames, ["hello", "world"], "an or block names every matcher that hit");
    assert.deepEqual(hit.extracted, { version: ["7"] });
    assert.deepEqual(hit.internal, { token: "abc" });
    const miss = runOperators(either, parts("nothing here v7 t=abc"));
    assert.equal(miss.matched, false);
    assert.deepEqual(miss.extracted, {}, "a miss extracts nothing to report");
    assert.deepEqual(miss.internal, { token: "abc" }, "the next request still gets the internal value");
    const both = block(`    matchers-condition: and\n${matchers}`);
    assert.deepEqual(runOperators(both, parts("hello there")), {
      matched: false,
      matcherNames: [],
      extracted: {},
      internal: {},
    });
    assert.equal(runOperators(both, parts("hello world")).matched, true);
    const none = block(extractors);
    assert.equal(runOperators(none, parts("v7")).matched, true);
    assert.equal(runOperators(none, parts("t=abc")).matched, false, "an internal value alone is no match");
  });

  test("nuclei severities map to 1–5, intrusive tags stay off unless allowed", () => {
    const severities = ["critical", "high", "medium", "low", "info"].map((severity) =>
      severityOf(
        parseTemplate(
          `${header("s", severity)}http:\n  - path: ["{{BaseURL}}"]\n    matchers:\n      - type: status\n        status: [200]\n`,
          "s.yaml",
        ),
      ),
    );
    assert.deepEqual(severities, [1, 2, 3, 4, 5]);
    const intrusive = parseTemplate(
      `${header("i", "high", "cve,intrusive")}http:\n  - path: ["{{BaseURL}}"]\n    matchers:\n      - type: status\n        status: [200]\n`,
      "i.yaml",
    );
    const settings = { builtIn: false, directories: [], tags: [], severities: [], allow: [] };
    assert.match(String(excluded(intrusive, settings)), /tagged intrusive/);
    assert.equal(excluded(intrusive, { ...settings, allow: ["intrusive"] }), undefined);
    assert.match(
      String(excluded(intrusive, { ...settings, allow: ["intrusive"], tags: ["panel"] })),
      /none of the tags/,
    );
    assert.match(
      String(excluded(intrusive, { ...settings, allow: ["intrusive"], severities: ["low"] })),
      /severity high/,
    );
  });

  /** Runs a template (YAML) with files beside it in its library directory. */
  async function runWith(yaml: string, files: Record<string, string>) {
    const dir = mkdtempSync(join(directory, "p-"));
    writeFileSync(join(dir, "t.yaml"), yaml);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const ctx = context({ templates: { builtIn: false, directories: [dir] } });
    await createTemplatesModule().run(application(base, HOST), ctx);
    return ctx;
  }

  const login = (attack: string) => `${header(`login-${attack}`, "high", "default-login")}
http:
  - raw:
      - |
        POST /sign-in HTTP/1.1
        Host: {{Hostname}}
        Content-Type: application/x-www-form-urlencoded

        user={{user}}&pass={{pass}}
    attack: ${attack}
    payloads:
      user: [root, admin]
      pass: [toor, admin, "1234"]
    stop-at-first-match: true
    matchers:
      - type: word
        words: ["Welcome"]
`;

  test("an internal extractor of one block feeds the next block's requests", async () => {
    const ctx = await run(`${header("two-blocks")}http:
  - method: GET
    path: ["{{BaseURL}}/token"]
    extractors:
      - type: json
        name: token
        internal: true
        json: [".token"]
  - method: GET
    path: ["{{BaseURL}}/use-token"]
    headers:
      Authorization: "Bearer {{token}}"
    matchers:
      - type: word
        words: ["token accepted"]
`);
    assert.equal(ctx.issues.length, 1, ctx.notes.join("\n"));
    assert.equal(ctx.issues[0].details.uri, `${base}/use-token`);
  });

  test("clusterbomb payloads: every user with every password, until the first match", async () => {
    signIns.length = 0;
    const ctx = await run(login("clusterbomb"));
    assert.equal(ctx.issues.length, 1, ctx.notes.join("\n"));
    assert.deepEqual(signIns, [
      "user=root&pass=toor",
      "user=root&pass=admin",
      "user=root&pass=1234",
      "user=admin&pass=toor",
      "user=admin&pass=admin",
    ]);
  });

  test("pitchfork payloads: the lists side by side, as long as the shortest", async () => {
    signIns.length = 0;
    const ctx = await run(login("pitchfork"));
    assert.equal(ctx.issues.length, 1);
    assert.deepEqual(signIns, ["user=root&pass=toor", "user=admin&pass=admin"]);
  });

  test("a batteringram payload from a file beside the template, one value per line", async () => {
    const ctx = await runWith(
      `${header("backups")}http:\n  - method: GET\n    path: ["{{BaseURL}}/files/{{name}}"]\n    payloads:\n      name: names.txt\n    matchers:\n      - type: word\n        words: ["SECRET"]\n`,
      { "names.txt": "site.zip\n\nsecret.bak\r\ndb.sql\n" },
    );
    assert.equal(ctx.issues.length, 1, ctx.notes.join("\n"));
    assert.equal(ctx.issues[0].details.uri, `${base}/files/secret.bak`);
  });

  const flowing = (flow: string, firstWord: string) => `${header("flowing")}flow: ${flow}
http:
  - method: GET
    path: ["{{BaseURL}}/page"]
    matchers:
      - type: word
        words: ["${firstWord}"]
  - raw:
      - |
        POST /sign-in HTTP/1.1
        Host: {{Hostname}}
        Content-Type: application/x-www-form-urlencoded

        user=admin&pass=admin
    matchers:
      - type: word
        words: ["Welcome"]
`;

  test("flow http(1) && http(2): the second block is sent only when the first matched", async () => {
    signIns.length = 0;
    const both = await run(flowing("http(1) && http(2)", "Hello"));
    assert.equal(both.issues.length, 1, both.notes.join("\n"));
    assert.deepEqual(both.issues[0].details.matched_at, [`${base}/page`, `${base}/sign-in`]);
    assert.equal(signIns.length, 1);
    signIns.length = 0;
    const first = await run(flowing("http(1) && http(2)", "Nope"));
    assert.equal(first.issues.length, 0);
    assert.deepEqual(signIns, [], "the second block was never sent");
  });

  test("flow http(1) || http(2): the second block runs when the first did not match", async () => {
    const either = await run(flowing("http(1) || http(2)", "Nope"));
    assert.equal(either.issues.length, 1);
    assert.equal(either.issues[0].details.uri, `${base}/sign-in`);
  });

  test("the host-name variables: RDN, DN, TLD and SD by the public suffix list", async () => {
    const ctx = await run(
      `${header("vars")}http:\n  - path: ["{{BaseURL}}/vars?rdn={{RDN}}&dn={{DN}}&tld={{TLD}}&sd={{SD}}&fqdn={{FQDN}}"]\n    matchers:\n      - type: status\n        status: [200]\n    extractors:\n      - type: regex\n        name: seen\n        regex: ["\\\\?.+"]\n`,
    );
    assert.equal(ctx.issues.length, 1, ctx.notes.join("\n"));
    assert.deepEqual((ctx.issues[0].details.extracted as Record<string, string[]>).seen, [
      "?rdn=engine.test&dn=engine&tld=test&sd=app&fqdn=app.engine.test",
    ]);
  });

  describe("bad input", () => {
    const reasonFor = async (yaml: string) => {
      const dir = mkdtempSync(join(directory, "bad-"));
      writeFileSync(join(dir, "bad.yaml"), yaml);
      const library = await loadDirectory(dir);
      assert.equal(library.templates.length, 0, "refused");
      return library.skipped[0].reason;
    };
    const http = (matchers: string) => `http:\n  - path: ["{{BaseURL}}/page"]\n    matchers:\n${matchers}`;

    test("YAML that does not parse is refused, naming the problem", async () => {
      assert.match(await reasonFor("id: x\ninfo: [unclosed\n"), /does not parse as YAML/);
    });

    test("an unknown protocol or field is refused, naming it", async () => {
      assert.match(
        await reasonFor(`${header("h")}headless:\n  - steps: []\n`),
        /"headless", a protocol or feature Sightline does not support/,
      );
      assert.match(
        await reasonFor(
          `${header("p")}http:\n  - path: ["{{BaseURL}}"]\n    fuzzing:\n      - part: query\n    matchers:\n      - type: status\n        status: [200]\n`,
        ),
        /http\[0\] uses "fuzzing"/,
      );
      assert.match(
        await reasonFor(
          `${header("o")}${http("      - type: word\n        words: ['{{interactsh-url}}']\n")}`,
        ),
        /interactsh/,
      );
    });

    test("a dsl function that does not exist is refused when the template is read", async () => {
      assert.match(
        await reasonFor(`${header("d")}${http("      - type: dsl\n        dsl: ['rm_rf(body)']\n")}`),
        /dsl function rm_rf\(\) .* does not exist or is not supported/,
      );
    });

    test("a back-reference is refused; a catastrophic pattern falls back to linear time on a bounded body", async () => {
      assert.match(
        await reasonFor(`${header("b")}${http("      - type: regex\n        regex: ['(a+)\\1']\n")}`),
        /back-reference/,
      );
      // (a+)+! backtracks exponentially on "aaa…" without V8's linear fallback; with it, 1 MB is read once.
      const ctx = await run(
        `${header("redos")}http:\n  - path: ["{{BaseURL}}/big"]\n    matchers:\n      - type: regex\n        regex: ['(a+)+!']\n`,
        { maxBodyBytes: 1024 * 1024 },
      );
      assert.equal(ctx.issues.length, 0);
    });

    test("a matcher on a 20 MB body reads only the bound, and says so", async () => {
      const yaml = (word: string) =>
        `${header(`big-${word}`)}http:\n  - path: ["{{BaseURL}}/big"]\n    matchers:\n      - type: word\n        words: ["${word}"]\n`;
      const start = await run(yaml("START"));
      assert.equal(start.issues.length, 1, "what is within the bound matches");
      const end = await run(yaml("END-MARKER"));
      assert.equal(end.issues.length, 0, "what lies past the bound is never read");
      assert.ok(
        end.notes.some((note) => /first 524288 bytes of the body/.test(note)),
        end.notes.join("\n"),
      );
      assert.ok(TWENTY_MB > 524288);
    });

    test("a redirect loop is followed at most SIGHTLINE_HTTP_MAX_REDIRECTS times, with a note", async () => {
      const ctx = await run(
        `${header("loop")}http:\n  - path: ["{{BaseURL}}/a"]\n    redirects: true\n    max-redirects: 50\n    matchers:\n      - type: status\n        status: [200]\n`,
      );
      assert.equal(ctx.issues.length, 0);
      assert.ok(
        ctx.notes.some((note) => /stopped following redirects .* after 5 hops/.test(note)),
        ctx.notes.join("\n"),
      );
    });

    test("a flow beyond calls joined by && and || is refused, naming what it uses", async () => {
      const flow = (text: string) =>
        `${header("f")}flow: ${JSON.stringify(text)}\nhttp:\n  - path: ["{{BaseURL}}/page"]\n    matchers:\n      - type: status\n        status: [200]\n`;
      assert.match(
        await reasonFor(flow("for (let x of iterate(a)) { http(1) }")),
        /JavaScript beyond protocol calls/,
      );
      assert.match(
        await reasonFor(flow("dns(1) && http(1)")),
        /calls dns\(\), and Sightline runs flows of http blocks only/,
      );
      assert.match(
        await reasonFor(flow("http(1) && http(3)")),
        /calls http\(3\), but the template has 1 http block/,
      );
    });

    test("payloads: a file outside the library, too many rounds, an unknown attack are refused", async () => {
      const payloads = (attack: string, values: string) =>
        `${header("p")}http:\n  - path: ["{{BaseURL}}/files/{{a}}{{b}}"]\n    attack: ${attack}\n    payloads:\n${values}    matchers:\n      - type: status\n        status: [200]\n`;
      assert.match(
        await reasonFor(payloads("batteringram", "      a: /etc/passwd\n")),
        /reads \/etc\/passwd, which is outside the template library/,
      );
      assert.match(
        await reasonFor(payloads("batteringram", "      a: ../../outside.txt\n")),
        /which is (outside|not in) the template library/,
      );
      const many = `[${Array.from({ length: 9 }, (_, i) => i).join(", ")}]`;
      assert.match(
        await reasonFor(payloads("clusterbomb", `      a: ${many}\n      b: ${many}\n`)),
        /sends \d+ requests \(\d+ payload rounds × 1\); at most 64 are run/,
      );
      assert.match(
        await reasonFor(payloads("sniper", "      a: [x]\n")),
        /attack "sniper" is not batteringram, pitchfork or clusterbomb/,
      );
      assert.match(
        await reasonFor(payloads("batteringram", "      a: [x]\n      b: [y]\n")),
        /batteringram takes one payload set, not 2/,
      );
    });

    test("a request to another host is never sent", async () => {
      const ctx = await run(
        `${header("elsewhere")}http:\n  - path: ["http://127.0.0.1:9/", "http://other.test/"]\n    matchers:\n      - type: status\n        status: [200, 404, 500]\n`,
      );
      assert.equal(ctx.issues.length, 0);
    });
  });
});
