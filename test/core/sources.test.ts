/** Which passive sources a run asks, and the settings that say so. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type ConfigError, loadConfig } from "../../src/core/config.ts";
import { runSettingsFrom } from "../../src/core/run-settings.ts";
import { chooseSources, KEYED_SOURCE_IDS, SOURCE_IDS } from "../../src/core/sources.ts";

test("by default every keyless source runs, and a keyed one only with its key", () => {
  const { chosen, skipped } = chooseSources([], (id) => id === "virustotal");
  const keyless = SOURCE_IDS.filter((id) => !(KEYED_SOURCE_IDS as readonly string[]).includes(id));
  assert.deepEqual(
    chosen,
    SOURCE_IDS.filter((id) => keyless.includes(id) || id === "virustotal"),
  );
  assert.equal(skipped.shodan, "no key set (SIGHTLINE_SOURCE_SHODAN_KEY)");
});

test("SIGHTLINE_SOURCES chooses; a keyed source chosen without its key still does not run; none is none", () => {
  const named = chooseSources(["crtsh", "shodan"], () => false);
  assert.deepEqual(named.chosen, ["crtsh"]);
  assert.match(named.skipped.shodan!, /no key set/);
  assert.match(named.skipped.anubis!, /not chosen/);
  assert.deepEqual(chooseSources(["none"], () => true).chosen, []);
});

test("the settings: an unknown source is refused by name; a run fixes the choice and never the keys", () => {
  assert.throws(
    () => loadConfig({ SIGHTLINE_SOURCES: "crtsh,crtsh2" }),
    (error: ConfigError) => /SIGHTLINE_SOURCES names unknown sources \(crtsh2\)/.test(error.message),
  );
  assert.throws(
    () => loadConfig({ SIGHTLINE_SOURCE_CRTSH_URL: "ftp://x" }),
    /SIGHTLINE_SOURCE_CRTSH_URL must be an http/,
  );
  const config = loadConfig({ SIGHTLINE_SOURCE_CHAOS_KEY: "chaos-secret-key", SIGHTLINE_SOURCES: "" });
  const settings = runSettingsFrom(config);
  assert.ok(settings.sources?.includes("chaos"));
  assert.ok(settings.sources?.includes("crtsh"));
  assert.equal(
    JSON.stringify(settings).includes("chaos-secret-key"),
    false,
    "the key is not stored with the run",
  );
});
