/** The discovery caps in the configuration: read from the environment, checked with a sentence. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError, type DEFAULTS, loadConfig } from "../../src/config.ts";
import { discoveryLimits } from "../../src/discovery/module.ts";

const CAPS: Record<string, keyof typeof DEFAULTS> = {
  SIGHTLINE_HTTP_MAX_BODY_BYTES: "httpMaxBodyBytes",
  SIGHTLINE_HTTP_MAX_HEADER_BYTES: "httpMaxHeaderBytes",
  SIGHTLINE_HTTP_MAX_REDIRECTS: "httpMaxRedirects",
  SIGHTLINE_BANNER_MAX_BYTES: "bannerMaxBytes",
  SIGHTLINE_BANNER_TIMEOUT_MS: "bannerTimeoutMs",
  SIGHTLINE_DNS_MAX_RECORDS: "dnsMaxRecords",
  SIGHTLINE_DNS_MAX_TXT_LENGTH: "dnsMaxTxtLength",
  SIGHTLINE_AXFR_MAX_RECORDS: "axfrMaxRecords",
  SIGHTLINE_TLS_MAX_NAMES: "tlsMaxNames",
};

test("every discovery cap is read from its environment variable and reaches discovery's settings", () => {
  const environment = Object.fromEntries(
    Object.keys(CAPS).map((variable, i) => [variable, String(4096 + i)]),
  );
  const limits = discoveryLimits(loadConfig(environment));
  assert.deepEqual(limits, Object.fromEntries(Object.values(CAPS).map((key, i) => [key, 4096 + i])));
  assert.deepEqual(Object.keys(limits).sort(), Object.values(CAPS).sort());
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
