/** SPF policies followed as receivers evaluate them (RFC 7208), over a table of TXT answers. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { followSpf, spfRecord, type TxtReader } from "../../src/discovery/spf.ts";

/** TXT answers by name; a name mapped to undefined does not answer (a timeout). */
const answers =
  (table: Record<string, string[] | undefined>, asked: string[] = []): TxtReader =>
  async (name) => {
    asked.push(name);
    return name in table ? table[name] : [];
  };

describe("SPF policies followed through include: and redirect=", () => {
  it("lists every domain reached, in evaluation order, and counts the look-ups of the whole tree", async () => {
    const tree = await followSpf(
      "acme.test",
      "v=spf1 mx a:mail.acme.test include:_spf.mailhost.test include:sendgrid.test -all",
      answers({
        "_spf.mailhost.test": ["v=spf1 ip4:203.0.113.0/24 include:_spf2.mailhost.test ~all"],
        "_spf2.mailhost.test": ["v=spf1 ip4:198.51.100.0/24 ~all"],
        "sendgrid.test": ["google-site-verification=abc", "v=spf1 ip4:192.0.2.0/24 -all"],
      }),
    );
    assert.deepEqual(tree.includes, ["_spf.mailhost.test", "_spf2.mailhost.test", "sendgrid.test"]);
    assert.equal(tree.lookups, 5, "mx, a and three includes");
    assert.deepEqual(tree.errors, []);
  });

  it("follows a redirect, unless the policy has an all term", async () => {
    const table = { "_spf.provider.test": ["v=spf1 ip4:192.0.2.1 -all"] };
    const redirected = await followSpf("a.test", "v=spf1 redirect=_spf.provider.test", answers(table));
    assert.deepEqual(redirected.includes, ["_spf.provider.test"]);
    const ignored = await followSpf("a.test", "v=spf1 -all redirect=_spf.provider.test", answers(table));
    assert.deepEqual(ignored.includes, []);
  });

  it("stops past RFC 7208's 10 look-ups and says why receivers fail the policy", async () => {
    const table: Record<string, string[]> = {};
    for (let n = 0; n < 20; n++) table[`s${n}.test`] = [`v=spf1 include:s${n + 1}.test -all`];
    const asked: string[] = [];
    const tree = await followSpf("deep.test", "v=spf1 include:s0.test -all", answers(table, asked));
    assert.equal(tree.includes.length, 10);
    assert.ok(asked.length <= 10, `asked ${asked.length} names`);
    assert.match(tree.errors.join(), /more than 10 DNS look-ups/);
  });

  it("an include without an SPF record is an error; one that does not answer proves nothing", async () => {
    const missing = await followSpf("a.test", "v=spf1 include:gone.test -all", answers({ "gone.test": [] }));
    assert.deepEqual(missing.errors, ["include gone.test has no SPF record"]);
    const silent = await followSpf(
      "a.test",
      "v=spf1 include:slow.test -all",
      answers({ "slow.test": undefined }),
    );
    assert.deepEqual([silent.includes, silent.errors], [["slow.test"], []]);
  });

  it("a loop is followed once, and macros (which depend on the sender) are not followed", async () => {
    const asked: string[] = [];
    const tree = await followSpf(
      "a.test",
      "v=spf1 include:b.test include:%{i}._spf.c.test -all",
      answers({ "b.test": ["v=spf1 include:a.test include:b.test -all"] }, asked),
    );
    assert.deepEqual(tree.includes, ["b.test"]);
    assert.deepEqual(asked, ["b.test"]);
    assert.deepEqual(tree.errors, []);
  });

  it("a name with two SPF records has none a receiver can use", () => {
    assert.equal(spfRecord(["v=spf1 -all", "v=spf1 ~all"]), undefined);
    assert.equal(spfRecord(["v=spf10", "v=spf1 -all"]), "v=spf1 -all");
  });
});
