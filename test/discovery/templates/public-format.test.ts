/**
 * Public-format templates (test/fixtures/public-templates: nuclei-templates' layout and idioms, written
 * for this test) run through SIGHTLINE_TEMPLATES give the same results as the equivalent templates of
 * Sightline's library on the library's lab targets; the ones outside the subset are skipped with their
 * reason, by discovery and by `sightline templates validate`.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createTemplatesModule } from "../../../src/discovery/modules/templates.ts";
import { loadDirectory } from "../../../src/discovery/templates/library.ts";
import {
  type RunningTargets,
  startTemplateTargets,
  TEMPLATE_TARGETS,
  targetHost,
} from "../../lab/template-targets.ts";
import { application, context, service } from "./helpers.ts";

const DIRECTORY = fileURLToPath(new URL("../../fixtures/public-templates/", import.meta.url));

/** Public-format template id → the library template it is the equivalent of. */
const EQUIVALENTS: Record<string, string> = {
  "dotenv-disclosure": "env-file",
  "git-config-exposure": "git-config",
  "phpinfo-files": "phpinfo",
  "tomcat-manager-login": "tomcat-manager",
  "springboot-actuator-env": "spring-actuator-env",
  "graphql-introspection-detect": "graphql-introspection",
  "cors-reflect-any-origin": "cors-any-origin-credentials",
  "http-missing-csp": "missing-csp",
  "memcached-stats-exposed": "memcached-stats",
  "spf-record-permissive": "dns-spf-plus-all",
  "wildcard-tls-certificate": "ssl-wildcard-certificate",
};

describe("public-format templates", () => {
  let targets: RunningTargets;
  before(async () => {
    targets = await startTemplateTargets("127.117.0.2");
  });
  after(async () => {
    await targets?.close();
  });

  /** Template ids raised on a library target, by the library or by the public-format directory. */
  async function raised(libraryId: string, variant: "match" | "twin", source: "library" | "public") {
    const spec = TEMPLATE_TARGETS[libraryId][variant];
    const ctx = context({
      dnsServers: [targets.resolver],
      templates: source === "library" ? {} : { builtIn: false, directories: [DIRECTORY] },
    });
    const module = createTemplatesModule();
    if (!spec.kind || spec.kind === "http") {
      const scheme = spec.scheme ?? "http";
      const port = scheme === "https" ? targets.httpsPort : targets.httpPort;
      await module.run(
        application(`${scheme}://${targetHost(libraryId, variant)}:${port}`, targets.address),
        ctx,
      );
    } else if (spec.kind === "tcp")
      await module.run(service(targets.tcp[libraryId][variant], spec.port), ctx);
    else if (spec.kind === "dns")
      await module.run({ kind: "Domain", name: targetHost(libraryId, variant) }, ctx);
    else {
      const { address, port } = targets.ssl[libraryId][variant];
      await module.run(
        { kind: "SslCertificate", name: "c", details: { endpoints: [`${address}:${port}/tcp`] } },
        ctx,
      );
    }
    return ctx.issues.map((issue) => String(issue.details.template_id)).sort();
  }

  test("every equivalent runs, and the others are skipped with their reason", async () => {
    const library = await loadDirectory(DIRECTORY);
    assert.deepEqual(
      library.templates.map((loaded) => loaded.template.id).sort(),
      [...Object.keys(EQUIVALENTS), "slow-request-dos"].sort(),
    );
    assert.deepEqual(
      library.skipped.map((file) => [file.path, file.reason.replace(/ \(.*$/, "")]),
      [
        ["skipped/code-protocol.yaml", 'uses "code", a protocol or feature Sightline does not support'],
        ["skipped/fuzzing.yaml", 'http[0] uses "fuzzing", which Sightline does not support'],
        ["skipped/oob.yaml", "http[0].path[0] uses {{interactsh-url}}: out-of-band interaction"],
      ]
        .map(([path, reason]) => [path, reason.replace(/ \(.*$/, "")])
        .sort() as never,
    );
  });

  for (const [id, libraryId] of Object.entries(EQUIVALENTS)) {
    test(`${id} gives what ${libraryId} gives, on its target and on its twin`, async () => {
      for (const variant of ["match", "twin"] as const) {
        const byLibrary = (await raised(libraryId, variant, "library")).includes(libraryId);
        const byPublic = (await raised(libraryId, variant, "public")).includes(id);
        assert.equal(
          byPublic,
          byLibrary,
          `${variant}: the public template ${byPublic ? "matched" : "did not match"}`,
        );
        assert.equal(byLibrary, variant === "match");
      }
    });
  }

  test("the intrusive template never runs unless allowed; `sightline templates validate` says why", async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        fileURLToPath(new URL("../../../src/cli/main.ts", import.meta.url)),
        "templates",
        "validate",
        DIRECTORY,
      ],
      { env: { ...process.env, SIGHTLINE_TEMPLATE_ALLOW: "" } },
    );
    const lines = stdout.trim().split("\n");
    assert.equal(
      lines.at(-1),
      `${Object.keys(EQUIVALENTS).length} of ${Object.keys(EQUIVALENTS).length + 4} template files run.`,
    );
    assert.ok(lines.includes("http/exposures/dotenv-disclosure.yaml: runs"));
    assert.ok(
      lines.some((line) => /^skipped\/dos\.yaml: skipped: it is tagged intrusive, dos/.test(line)),
      stdout,
    );
    assert.ok(
      lines.some((line) => /^skipped\/code-protocol\.yaml: skipped: uses "code"/.test(line)),
      stdout,
    );
  });
});
