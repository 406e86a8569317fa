/** Bulk seed text: types detected with the API's rules, explicit types, and the API's errors back on their lines. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { errorsByLine, parseSeedLines, retypeLine, seedsToSend } from "../../src/web/app/seed-lines.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

test("each line's type is detected; blank lines, comments and a CSV header are skipped", () => {
  const lines = parseSeedLines(
    [
      "type,name",
      "Example.COM",
      "",
      "# offices",
      "www.example.com",
      "192.0.2.10",
      "2001:db8::1",
      "10.1.2.0/24",
      "https://app.example.com/login",
    ].join("\r\n"),
  );
  assert.deepEqual(
    lines.map((line) => [line.line, line.type, line.seed?.name]),
    [
      [2, "Domain", "example.com"],
      [5, "DnsRecord", "www.example.com"],
      [6, "IpAddress", "192.0.2.10"],
      [7, "IpAddress", "2001:db8::1"],
      [8, "NetBlock", "10.1.2.0/24"],
      [9, "Uri", "https://app.example.com/login"],
    ],
  );
  assert.ok(lines.every((line) => !line.problem && !line.explicit));
});

test("a line may name its type first, as words or CSV", () => {
  const lines = parseSeedLines(
    "Nameserver ns1.example.com\ndomain,example.co.uk\nDnsRecord: _dmarc.example.com\nUri\thttps://x.example/",
  );
  assert.deepEqual(
    lines.map((line) => [line.type, line.seed?.name, line.explicit]),
    [
      ["Nameserver", "ns1.example.com", true],
      ["Domain", "example.co.uk", true],
      ["DnsRecord", "_dmarc.example.com", true],
      ["Uri", "https://x.example/", true],
    ],
  );
});

test("a line that is no seed, or not of its named type, says why in the API's words", () => {
  const [unknown, wrongType] = parseSeedLines("not a seed!\nIpAddress example.com");
  assert.equal(unknown.type, undefined);
  assert.match(unknown.problem ?? "", /"not a seed!" is not recognised/);
  assert.equal(wrongType.type, "IpAddress");
  assert.equal(
    wrongType.problem,
    '"example.com" is not a valid IpAddress: expected an IPv4 or IPv6 address such as 192.0.2.10',
  );
  assert.deepEqual(seedsToSend([unknown, wrongType]).seeds, [], "bad lines are never sent");
});

test("choosing a type writes it into the line", () => {
  assert.equal(
    retypeLine("a.example\nns1.a.example\n", 2, "Nameserver"),
    "a.example\nNameserver ns1.a.example\n",
  );
  assert.equal(retypeLine("Domain ns1.a.example", 1, "Nameserver"), "Nameserver ns1.a.example");
  assert.equal(retypeLine("x", 5, "Domain"), "x", "a line that is not there changes nothing");
});

describe("the API's seeds.N errors map back to the lines they came from", () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer("sqlite");
  });
  after(async () => t?.close());

  test("with blank and comment lines in between", async () => {
    const lines = parseSeedLines("# seeds\nacme.example\n\n192.0.2.10\nwww.acme.example\n");
    const { seeds, lineOf } = seedsToSend(lines);
    assert.deepEqual(lineOf, [2, 4, 5]);
    // The API judges by its rules, whatever the dashboard thought: make two of them wrong for it.
    seeds[1] = { type: "Domain", name: seeds[1].name };
    seeds[2] = { type: "IpAddress", name: seeds[2].name };
    const response = await t.request("POST", "/api/collections", { body: { name: "mapped", seeds } });
    assert.equal(response.status, 400, response.text);
    const { byLine, general } = errorsByLine(response.body.error.details, lineOf);
    assert.deepEqual([...byLine.keys()], [4, 5]);
    assert.match(byLine.get(4)![0], /"192.0.2.10" is not a valid Domain/);
    assert.match(byLine.get(5)![0], /"www.acme.example" is not a valid IpAddress/);
    assert.deepEqual(general, []);
  });

  test("details about other fields stay general", () => {
    const { byLine, general } = errorsByLine(
      [
        { field: "name", message: "is required" },
        { field: "seeds", message: "must be an array" },
        { field: "seeds.7", message: "no such line" },
      ],
      [1, 2],
    );
    assert.equal(byLine.size, 0);
    assert.deepEqual(
      general.map((detail) => detail.field),
      ["name", "seeds", "seeds.7"],
    );
  });
});
