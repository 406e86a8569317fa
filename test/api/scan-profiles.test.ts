/**
 * A collection's scan profile over real HTTP: set at creation, changed or cleared with the add-seeds
 * call, refused with a sentence when it is wrong (and nothing saved), applied to each run the collection
 * makes and recorded with that run — on SQLite and PostgreSQL. Against the lab, two collections of the
 * same seeds on one server scan what their own profiles say: ports, UDP, brute force, exposure checks.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { applyProfile } from "../../src/core/run-settings.ts";
import { PRESETS, portSpecProblem, resolveProfile } from "../../src/core/scan-profile.ts";
import { modulesSwitchedOff } from "../../src/discovery/engine.ts";
import { discoveryModules } from "../../src/discovery/modules.ts";
import { instantRuns, QUIET_SCHEDULER } from "../hardening/surface.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import { type Lab, startLab } from "../lab/index.ts";
import { force, getRun, waitForRun } from "../runs/helpers.ts";

describe("scan profiles, without a database", () => {
  test("a profile's own fields beat its preset's, and the preset's beat the server's settings", () => {
    assert.deepEqual(resolveProfile({ preset: "quick", ports: "22,80" }), {
      ...PRESETS.quick,
      ports: "22,80",
    });
    assert.deepEqual(resolveProfile({ udp: false }), { udp: false });
    const server = {
      ports: "top100",
      udp: "on",
      depth: 4,
      dnsWordlist: "list.txt",
      dnsWordlistLines: ["www"],
    } as unknown as Parameters<typeof applyProfile>[0];
    const applied = applyProfile(server, { preset: "thorough", depth: 2 });
    assert.equal(applied.ports, "top1000");
    assert.equal(applied.udp, "on");
    assert.equal(applied.depth, 2);
    assert.equal(applied.dnsWordlist, "large");
    assert.equal(applied.dnsWordlistLines, undefined, "a server file's lines go with the server's list");
    assert.deepEqual(applied.profile, { preset: "thorough", ...PRESETS.thorough, depth: 2 });
    assert.equal(applyProfile(server, null), server);
  });

  test("a run's settings switch off the modules of UDP, brute force and exposure checks", () => {
    const settings = (changes: object) => ({
      udp: "on",
      exposureChecks: "on",
      dnsWordlist: "small",
      ...changes,
    });
    assert.deepEqual([...modulesSwitchedOff(settings({}) as never)], []);
    assert.deepEqual(
      [
        ...modulesSwitchedOff(settings({ udp: "off", exposureChecks: "off", dnsWordlist: "off" }) as never),
      ].sort(),
      ["dns-brute", "exposures", "udp"],
    );
    // Every name switched off is a module's.
    const names = new Set(discoveryModules().map((module) => module.name));
    for (const name of ["dns-brute", "exposures", "udp"]) assert.ok(names.has(name), name);
  });

  test("port lists are checked as the scan reads them", () => {
    for (const good of ["top100", "TOP1000", "22", "22, 80,8000-8100", "1-65535"])
      assert.equal(portSpecProblem(good), undefined, good);
    assert.match(portSpecProblem("0")!, /outside 1–65535/);
    assert.match(portSpecProblem("80-22")!, /outside/);
    assert.match(portSpecProblem("http")!, /not a port/);
    assert.match(portSpecProblem("22,,80")!, /top100, top1000 or a list/);
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`scan profiles over the API on ${dialect}`, { skip }, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer(dialect, { ...QUIET_SCHEDULER, ports: "top100" }, { runWork: instantRuns });
    });
    after(async () => t?.close());

    const create = (body: object) =>
      t.request("POST", "/api/collections", {
        body: { seeds: [{ type: "Domain", name: "acme.example" }], scan_rate: "on_demand", ...body },
      });

    test("set at creation, shown with the collection, changed, cleared", async () => {
      const created = await create({ name: "deep", scan_profile: { preset: "thorough", udp: false } });
      assert.equal(created.status, 200, created.text);
      assert.deepEqual(created.body.result.scan_profile, { preset: "thorough", udp: false });
      const plain = await create({ name: "plain" });
      assert.equal(plain.body.result.scan_profile, null);

      const changed = await t.request("POST", "/api/collections/deep", {
        body: { scan_profile: { ports: "22,443" } },
      });
      assert.equal(changed.status, 200, changed.text);
      // A profile sent replaces the one stored: what is shown is what runs.
      assert.deepEqual((await t.request("GET", "/api/collections/deep")).body.result.scan_profile, {
        ports: "22,443",
      });
      await t.request("POST", "/api/collections/deep", { body: { seeds: [] } });
      assert.deepEqual((await t.request("GET", "/api/collections/deep")).body.result.scan_profile, {
        ports: "22,443",
      });
      await t.request("POST", "/api/collections/deep", { body: { scan_profile: null } });
      assert.equal((await t.request("GET", "/api/collections/deep")).body.result.scan_profile, null);
    });

    test("each run applies the profile it was created with and records it", async () => {
      await create({ name: "quick", scan_profile: { preset: "quick", ports: "8080" } });
      const first = await force(t, "quick");
      await waitForRun(t, "quick", first, "finished");
      await t.request("POST", "/api/collections/quick", { body: { scan_profile: { preset: "thorough" } } });
      const second = await force(t, "quick");
      await waitForRun(t, "quick", second, "finished");

      const one = (await getRun(t, "quick", first)).settings;
      assert.equal(one.ports, "8080");
      assert.equal(one.udp, "off");
      assert.equal(one.dns_wordlist, "off");
      assert.equal(one.depth, 3);
      assert.equal(one.template_library, "off");
      assert.deepEqual(one.profile, { preset: "quick", ...PRESETS.quick, ports: "8080" });
      const two = (await getRun(t, "quick", second)).settings;
      assert.equal(two.ports, "top1000");
      assert.equal(two.udp, "on");
      assert.equal(two.dns_wordlist, "large");
      assert.equal(two.profile.preset, "thorough");

      await create({ name: "server" });
      const plain = await force(t, "server");
      const three = (await getRun(t, "server", plain)).settings;
      assert.equal(three.ports, "top100", "no profile: the server's settings");
      assert.equal(three.profile, undefined);
    });

    const refused: Array<[string, object, RegExp]> = [
      ["a port out of range", { ports: "22,70000" }, /scan_profile\.ports has "70000", outside 1–65535/],
      ["a port list that is not one", { ports: "web" }, /scan_profile\.ports has "web"/],
      [
        "an unknown preset",
        { preset: "slow" },
        /scan_profile\.preset must be one of quick, default, thorough/,
      ],
      ["an unknown field", { colour: "red" }, /scan_profile\.colour is not a known field/],
      ["a depth past 10", { depth: 11 }, /scan_profile\.depth/],
      [
        "a wordlist file",
        { dns_wordlist: "/etc/passwd" },
        /scan_profile\.dns_wordlist must be one of off, small, large/,
      ],
      ["UDP as a word", { udp: "yes" }, /scan_profile\.udp/],
    ];
    for (const [label, profile, message] of refused) {
      test(`refused with a sentence, nothing saved: ${label}`, async () => {
        const name = `bad-${label.replace(/\W+/g, "-")}`.slice(0, 60);
        const response = await create({ name, scan_profile: profile });
        assert.equal(response.status, 400, response.text);
        assert.equal(response.body.success, false);
        assert.match(response.body.message, message);
        assert.equal((await t.request("GET", `/api/collections/${name}`)).status, 404);
        const update = await t.request("POST", "/api/collections/plain", { body: { scan_profile: profile } });
        assert.equal(update.status, 400, update.text);
        assert.equal((await t.request("GET", "/api/collections/plain")).body.result.scan_profile, null);
      });
    }
  });
}

describe("scan profiles against the lab: one server, two collections, each scans as its profile says", () => {
  let lab: Lab;
  let t: TestServer;
  let labPorts: number[];
  before(async () => {
    lab = await startLab();
    labPorts = [...new Set(lab.truth.services.filter((s) => s.transport === "tcp").map((s) => s.port))].sort(
      (a, b) => a - b,
    );
    t = await startTestServer("sqlite", {
      ...QUIET_SCHEDULER,
      dnsServers: [lab.resolver],
      scanAllow: [`${lab.base}.0.0/16`],
      ports: labPorts.join(","),
      timeoutMs: 1000,
    });
  });
  after(async () => {
    await t?.close();
    await lab?.stop();
  });

  async function discover(name: string, profile: object | undefined) {
    const created = await t.request("POST", "/api/collections", {
      body: {
        name,
        scan_rate: "on_demand",
        seeds: [{ type: "Domain", name: "acme.test" }],
        ...(profile ? { scan_profile: profile } : {}),
      },
    });
    assert.equal(created.status, 200, created.text);
    const id = await force(t, name);
    const run = await waitForRun(t, name, id, "finished", "failed");
    assert.equal(run.status, "finished", run.error);
    const services = (await t.request("GET", `/api/collections/${name}/services`)).body.result as Array<{
      name: string;
    }>;
    return { run: await getRun(t, name, id), services: services.map((s) => s.name) };
  }

  test("the server's settings, and a narrow profile of one port, no UDP, no brute force and no checks", async () => {
    const onePort =
      lab.truth.services.find((s) => s.transport === "tcp" && s.port === 80)?.port ?? labPorts[0]!;
    const wide = await discover("wide", undefined);
    const narrow = await discover("narrow", {
      ports: String(onePort),
      udp: false,
      dns_wordlist: "off",
      exposure_checks: false,
    });

    assert.ok(
      wide.services.some((name) => !name.endsWith(`:${onePort}/tcp`)),
      `the server's ports find services on other ports: ${wide.services.join(", ")}`,
    );
    assert.ok(
      wide.services.some((name) => name.endsWith("/udp")),
      "the UDP pass ran with the server's settings",
    );
    assert.ok(narrow.services.length > 0, "the narrow profile still finds its port");
    for (const name of narrow.services) assert.match(name, new RegExp(`:${onePort}/tcp$`));
    assert.equal(narrow.run.settings.ports, String(onePort));
    assert.equal(narrow.run.settings.udp, "off");
    assert.equal(narrow.run.settings.exposure_checks, "off");
  });
});
