/** The discovery caps in the configuration: read from the environment, checked with a sentence. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  type Config,
  ConfigError,
  configurationDocument,
  DEFAULTS,
  ENVIRONMENT,
  loadConfig,
} from "../../src/core/config.ts";
import { discoveryLimits } from "../../src/discovery/module.ts";

/** The caps' environment variables: every one a discovery limit. */
const limitKeys = Object.keys(discoveryLimits(DEFAULTS)) as Array<keyof Config>;
const CAPS: Record<string, keyof Config> = Object.fromEntries(
  Object.entries(ENVIRONMENT).filter(([, key]) => limitKeys.includes(key)),
);

const DOCUMENT = new URL("../../docs/configuration.md", import.meta.url);

test("docs/configuration.md is the one the schema makes (run `npm run docs:config` after changing a setting)", () => {
  assert.equal(readFileSync(DOCUMENT, "utf8"), configurationDocument());
});

test("every setting has its own environment variable and a description", () => {
  assert.equal(new Set(Object.keys(ENVIRONMENT)).size, Object.keys(DEFAULTS).length);
  for (const line of configurationDocument()
    .split("\n")
    .filter((row) => row.startsWith("| `")))
    assert.match(line, /^\| `[A-Z_]+` \| `[a-zA-Z]+` \| .+ \| [A-Z`].{8,} \|$/, line);
});

test("every discovery cap has an environment variable, documented in docs/configuration.md", () => {
  assert.deepEqual(Object.values(CAPS).sort(), [...limitKeys].sort());
  const document = readFileSync(DOCUMENT, "utf8");
  for (const [variable, key] of Object.entries(CAPS))
    assert.ok(document.includes(`| \`${variable}\` | \`${key}\` | \`${DEFAULTS[key]}\` |`), variable);
});

test("a bad value is refused with a sentence naming the variable, and a URL's value is never repeated", () => {
  const refused = (environment: Record<string, string>) => {
    try {
      loadConfig(environment);
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      return error.message;
    }
    assert.fail(`${JSON.stringify(environment)} was accepted`);
  };
  assert.equal(refused({ PORT: "70000" }), "PORT must be 0–65535, not 70000");
  assert.equal(
    refused({ SIGHTLINE_PROBE_ENGINE: "c" }),
    'SIGHTLINE_PROBE_ENGINE must be one of auto, js, not "c"',
  );
  assert.match(
    refused({ SIGHTLINE_DNS_SERVERS: "8.8.8.8,a:b" }),
    /SIGHTLINE_DNS_SERVERS entry "a:b" must be an IP/,
  );
  assert.equal(refused({ SIGHTLINE_DEPTH: "11" }), "SIGHTLINE_DEPTH must be 1–10, not 11");
  const url = refused({ DATABASE_URL: "mysql://root:hunter2@db/x" });
  assert.match(url, /^DATABASE_URL must start with postgres:\/\//);
  assert.ok(!url.includes("hunter2"), "a password in a URL is not echoed");
  assert.match(refused({ SIGHTLINE_BOOTSTRAP_ACCESS_KEY: "SL1" }), /set both/);
});

test("every discovery cap is read from its environment variable and reaches discovery's settings", () => {
  const environment = Object.fromEntries(
    Object.keys(CAPS).map((variable, i) => [variable, String(4096 + i)]),
  );
  const limits = discoveryLimits(loadConfig(environment));
  assert.deepEqual(limits, Object.fromEntries(Object.values(CAPS).map((key, i) => [key, 4096 + i])));
});

test("a cap too small to be useful stops the start with a sentence naming the variable", () => {
  for (const variable of Object.keys(CAPS)) {
    if (variable === "SIGHTLINE_HTTP_MAX_REDIRECTS") continue; // 0: follow no redirect
    assert.throws(
      () => loadConfig({ [variable]: "0" }),
      (error: Error) =>
        error instanceof ConfigError && error.message.startsWith(`${variable} must be at least`),
      variable,
    );
  }
  assert.equal(loadConfig({ SIGHTLINE_HTTP_MAX_REDIRECTS: "0" }).httpMaxRedirects, 0);
  assert.throws(
    () => loadConfig({ SIGHTLINE_DNS_MAX_RECORDS: "lots" }),
    /SIGHTLINE_DNS_MAX_RECORDS must be a whole number/,
  );
});
