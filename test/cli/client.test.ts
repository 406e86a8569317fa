/** Collection and result client commands: real `sightline` processes against a real server. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { resultRows, toCsv } from "../../src/cli/collections.ts";
import { spawnSightline } from "../helpers/processes.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

describe("sightline collections / results (client commands)", () => {
  let t: TestServer;
  let home: string;

  before(async () => {
    t = await startTestServer("sqlite", { schedulerIntervalSeconds: 3600 });
    home = mkdtempSync(join(tmpdir(), "sightline-client-"));
  });
  after(async () => {
    await t?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  async function sightline(args: string[], env: Record<string, string> = {}) {
    const child = spawnSightline(args, {
      HOME: home,
      SIGHTLINE_URL: t.url,
      SERVICE_ACCESS_KEY: t.admin.accessKey,
      SERVICE_SECRET_KEY: t.admin.secretKey,
      ...env,
    });
    const code = await child.exited;
    return { code, output: child.output() };
  }

  test("create from flags and a file, add, show, list, delete", async () => {
    const file = join(home, "seeds.txt");
    writeFileSync(
      file,
      "# our estate\nIpAddress 192.0.2.10\n\nNameserver ns1.acme.example\nNetBlock:198.51.100.0/24\n",
    );
    const created = await sightline([
      "collections",
      "create",
      "acme",
      "--seed",
      "Domain:acme.example",
      "--seeds-file",
      file,
    ]);
    assert.equal(created.code, 0, created.output);
    assert.match(created.output, /Created collection acme with 4 seeds\./);

    const added = await sightline([
      "collections",
      "add-seeds",
      "acme",
      "--seed",
      "www.acme.example",
      "--seed",
      "acme.example",
    ]);
    assert.match(added.output, /Added 1 new seeds to acme; it has 5\./);

    const shown = await sightline(["collections", "show", "acme", "--json"]);
    const collection = JSON.parse(shown.output);
    assert.deepEqual(
      collection.seeds.map((s: { type: string }) => s.type).sort(),
      ["DnsRecord", "Domain", "IpAddress", "NetBlock", "Nameserver"].sort(),
    );

    const list = await sightline(["collections", "list", "--json"]);
    assert.deepEqual(JSON.parse(list.output), ["acme"]);

    const deleted = await sightline(["collections", "delete-seeds", "acme"]);
    assert.match(deleted.output, /Deleted 5 seeds from acme\./);
  });

  test("bad input and a wrong key: non-zero exit and a sentence", async () => {
    const badSeed = await sightline(["collections", "create", "x", "--seed", "what is this"]);
    assert.equal(badSeed.code, 2);
    assert.match(badSeed.output, /cannot tell what "what is this" is/);
    const apiRefused = await sightline(["collections", "create", "x", "--seed", "IpAddress:300.1.1.1"]);
    assert.equal(apiRefused.code, 1);
    assert.match(apiRefused.output, /not a valid IpAddress/);
    const kind = await sightline(["results", "acme", "secrets"]);
    assert.equal(kind.code, 2);
    assert.match(kind.output, /Unknown result kind "secrets"/);
    const wrongKey = await sightline(["collections", "list"], { SERVICE_SECRET_KEY: "wrong" });
    assert.equal(wrongKey.code, 1);
    assert.match(wrongKey.output, /not valid or has been revoked/);
    const missing = await sightline(["collections", "show", "nope"]);
    assert.equal(missing.code, 1);
    assert.match(missing.output, /No collection named "nope"/);
  });
});

test("rows and CSV", () => {
  assert.deepEqual(resultRows("hosts", { "192.0.2.1": { os: "" } }), [{ ip: "192.0.2.1", os: "" }]);
  assert.equal(
    toCsv([
      { name: 'a "quoted", value', ports: [{ number: "0.443e3" }] },
      { name: "b", extra: 1 },
    ]),
    'name,ports,extra\r\n"a ""quoted"", value","[{""number"":""0.443e3""}]",\r\nb,,1\r\n',
  );
});
