import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { loadConfig } from "../../src/core/config.ts";
import {
  describeRunSettings,
  RUN_SETTING_KEYS,
  runSettingsFrom,
  wireName,
} from "../../src/core/run-settings.ts";
import { loadWordlist } from "../../src/discovery/wordlists.ts";
import { RunSettingsView } from "../../src/results/runs.ts";
import { serializerOf } from "../../src/results/stream.ts";

test("a wordlist file travels with the run: a worker without the file brute-forces the same labels", () => {
  const dir = mkdtempSync(join(tmpdir(), "sightline-wordlist-"));
  const file = join(dir, "words.txt");
  writeFileSync(file, "vpn2\n# a comment\nLegacy-Portal\n\n");
  const settings = runSettingsFrom(loadConfig({ SIGHTLINE_DNS_WORDLIST: file }));
  rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(JSON.parse(JSON.stringify(settings)).dnsWordlistLines, [
    "vpn2",
    "# a comment",
    "Legacy-Portal",
  ]);
  assert.deepEqual(loadWordlist(file, settings.dnsWordlistLines), ["vpn2", "legacy-portal"]);
  assert.equal(describeRunSettings(settings).dns_wordlist_lines, 3);
});

test("the shipped wordlists are named, not copied, into a run", () => {
  const settings = runSettingsFrom(loadConfig({ SIGHTLINE_DNS_WORDLIST: "large", SIGHTLINE_DEPTH: "2" }));
  assert.equal(settings.dnsWordlist, "large");
  assert.equal(settings.dnsWordlistLines, undefined);
  assert.equal(settings.depth, 2);
  assert.ok(!("redisUrl" in settings) && !("databaseUrl" in settings), "how a process connects is its own");
});

test("a run's settings view holds every run setting under its snake_case name, as its schema declares and the serialiser writes", () => {
  const settings = runSettingsFrom(loadConfig({}));
  const view = describeRunSettings({ ...settings, profile: { preset: "quick" } });
  const declared = Object.keys(RunSettingsView.properties);
  assert.deepEqual(Object.keys(view), declared, "the view and its schema list the same fields in one order");
  for (const key of RUN_SETTING_KEYS) assert.ok(wireName(key) in view, key);
  assert.equal(view.dns_wordlist, "small");
  assert.equal(view.host_discovery_timeout_ms, 1000);
  assert.deepEqual(JSON.parse(serializerOf(RunSettingsView)(view)), view);
  // A run created before a setting existed has none of it, and the view leaves it out.
  const { udp: _udp, ...older } = settings;
  assert.ok(!("udp" in describeRunSettings(older as typeof settings)));
});
