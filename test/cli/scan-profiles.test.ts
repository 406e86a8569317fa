/**
 * A collection's scan profile from the command line, as a process against a real server: `collections
 * create` with profile options, `collections update` changing only the fields given (or dropping the
 * profile), and mistakes refused with a sentence and exit code 2 before anything is sent.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { instantRuns, QUIET_SCHEDULER } from "../hardening/surface.ts";
import { runClientCommand } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

describe("scan profiles from the CLI", () => {
  let t: TestServer;
  let home: string;
  const sightline = (args: string[]) => runClientCommand(t, home, args);
  const profileOf = async (name: string) =>
    (await t.request("GET", `/api/collections/${name}`)).body.result.scan_profile;

  before(async () => {
    t = await startTestServer("sqlite", QUIET_SCHEDULER, { runWork: instantRuns });
    home = mkdtempSync(join(tmpdir(), "sightline-cli-profiles-"));
  });
  after(async () => {
    await t?.close();
    rmSync(home, { recursive: true, force: true });
  });

  test("create with a preset and overrides; update changes only what is given, then resets", async () => {
    const created = await sightline([
      "collections",
      "create",
      "acme",
      "--seed",
      "Domain:acme.example",
      "--scan-rate",
      "on_demand",
      "--profile",
      "thorough",
      "--no-udp",
      "--ports",
      "22,443",
    ]);
    assert.equal(created.code, 0, created.output);
    assert.deepEqual(await profileOf("acme"), { preset: "thorough", udp: false, ports: "22,443" });

    const updated = await sightline([
      "collections",
      "update",
      "acme",
      "--depth",
      "2",
      "--no-exposure-checks",
    ]);
    assert.equal(updated.code, 0, updated.output);
    assert.match(
      updated.output,
      /Updated acme: scan rate on_demand; scan profile preset thorough, ports 22,443, UDP off, depth 2, exposure checks off\./,
    );
    assert.deepEqual(await profileOf("acme"), {
      preset: "thorough",
      udp: false,
      ports: "22,443",
      depth: 2,
      exposure_checks: false,
    });

    const json = await sightline(["collections", "update", "acme", "--wordlist", "off", "--json"]);
    assert.equal(json.code, 0, json.output);
    assert.equal(JSON.parse(json.output).scan_profile.dns_wordlist, "off");

    const shown = await sightline(["collections", "show", "acme"]);
    assert.match(shown.output, /brute-force wordlist off/);
    const reset = await sightline(["collections", "update", "acme", "--reset-profile"]);
    assert.equal(reset.code, 0, reset.output);
    assert.match(reset.output, /scan profile none \(the server's settings\)/);
    assert.equal(await profileOf("acme"), null);
  });

  test("mistakes: a sentence, and nothing changed", async () => {
    await sightline(["collections", "create", "globex", "--seed", "globex.example", "--ports", "80"]);
    const cases: Array<[string[], number, RegExp]> = [
      [["--depth", "deep"], 2, /--depth must be a whole number, not "deep"/],
      [["--ports", "70000"], 1, /scan_profile\.ports has "70000", outside 1–65535/],
      [["--profile", "slow"], 1, /scan_profile\.preset must be one of quick, default, thorough/],
      [["--reset-profile", "--udp"], 2, /--reset-profile drops the whole profile/],
      [[], 2, /Nothing to change/],
    ];
    for (const [options, code, message] of cases) {
      const outcome = await sightline(["collections", "update", "globex", ...options]);
      assert.equal(outcome.code, code, outcome.output);
      assert.match(outcome.output, message);
      assert.deepEqual(await profileOf("globex"), { ports: "80" });
    }
  });
});
