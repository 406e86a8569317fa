/** The discovery caps in the configuration: read from the environment, checked with a sentence. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { type Config, ConfigError, DEFAULTS, ENVIRONMENT, loadConfig } from "../../src/config.ts";
import { discoveryLimits } from "../../src/discovery/module.ts";

/** The caps' environment variables: every one a discovery limit. */
const limitKeys = Object.keys(discoveryLimits(DEFAULTS)) as Array<keyof Config>;
const CAPS: Record<string, keyof Config> = Object.fromEntries(
  Object.entries(ENVIRONMENT).filter(([, key]) => limitKeys.includes(key)),
);

test("every discovery cap has an environment variable, documented in the README's configuration table", () => {
  assert.deepEqual(Object.values(CAPS).sort(), [...limitKeys].sort());
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  for (const [variable, key] of Object.entries(CAPS))
    assert.ok(readme.includes(`| \`${variable}\` | \`${key}\` | \`${DEFAULTS[key]}\` |`), variable);
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
