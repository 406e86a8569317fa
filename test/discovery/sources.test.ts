/**
 * Every passive source against its fake (test/helpers/source-fakes.ts, answering in the source's
 * documented format with its paging): the names each one's parsing keeps, its key where its API wants
 * it; then each failure a source can have, once, over the shared client (the behaviour is the client's
 * for every source); and the normalisation every name goes through.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { KEYED_SOURCE_IDS, SOURCE_IDS, type SourceId } from "../../src/core/sources.ts";
import { retryAfterMs, SourceClient, type SourceFailure } from "../../src/discovery/net/source-client.ts";
import { PASSIVE_SOURCES } from "../../src/discovery/sources/index.ts";
import { hostOfUrl, namesInText, normaliseName } from "../../src/discovery/sources/names.ts";
import { keyOf, type SourceFakes, startSourceFakes } from "../helpers/source-fakes.ts";

const D = "lab.test";

/** Sources whose API pages: the second page's name (`old.lab.test`) proves the paging was followed. */
const PAGED = new Set([
  "certspotter",
  "wayback",
  "commoncrawl",
  "urlscan",
  "rapiddns",
  "thc",
  "virustotal",
  "censys",
  "shodan",
  "github",
  "binaryedge",
  "netlas",
]);
/** Sources that answer labels relative to the domain (or names read as ending in it): no out-of-scope name. */
const LABELS = new Set(["securitytrails", "shodan", "chaos", "github"]);

let fakes: SourceFakes;
before(async () => {
  fakes = await startSourceFakes();
});
after(() => fakes.close());

const keyed = (id: string) => (KEYED_SOURCE_IDS as readonly string[]).includes(id);

function clientFor(id: string, options: Partial<ConstructorParameters<typeof SourceClient>[0]> = {}) {
  return new SourceClient({
    id: `${id}-${Math.random()}`,
    baseUrl: fakes.url(id),
    requestsPerMinute: 60_000,
    timeoutMs: 2000,
    maxBytes: 1024 * 1024,
    retries: 2,
    backoffMs: 20,
    signal: new AbortController().signal,
    ...options,
  });
}

async function ask(id: SourceId, target: string, key = keyed(id) ? keyOf(id) : "", client = clientFor(id)) {
  const names: string[] = [];
  const details: Record<string, unknown> = {};
  await PASSIVE_SOURCES[id].query({
    target,
    key,
    client,
    maxPages: 20,
    add(found) {
      names.push(...found);
      return true;
    },
    detail: (d) => Object.assign(details, d),
  });
  const normalised = new Set(names.map(normaliseName).flatMap((c) => (c.ok ? [c.name] : [])));
  return { names: normalised, details, client };
}

describe("each source's request and parsing against its documented format", () => {
  for (const id of SOURCE_IDS.filter((id) => id !== "shodanidb"))
    test(`${id}${keyed(id) ? " (keyed)" : ""}`, async () => {
      fakes.fault = "none";
      const { names, client } = await ask(id, D);
      for (const name of [`www.${D}`, `api.${D}`, `old.${D}`])
        assert.ok(names.has(name), `${id} gave ${name}`);
      if (!LABELS.has(id)) assert.ok(names.has("cdn.partner.example"), `${id} passes out-of-scope names on`);
      if (PAGED.has(id)) assert.ok(client.requests >= 2, `${id} asked for its second page`);
      assert.equal(client.answered, client.requests);
      if (keyed(id))
        await assert.rejects(ask(id, D, "wrong-key"), (error: SourceFailure) => error.reason === "http 401");
    });

  test("shodanidb: an address's host names, ports, CPEs and tags; an unknown address is no names", async () => {
    fakes.fault = "none";
    const { names, details } = await ask("shodanidb", "192.0.2.10");
    assert.deepEqual([...names].sort(), ["mail.partner.example", "www.lab.test"]);
    assert.deepEqual(details.internetdb, {
      ports: [80, 443],
      cpes: ["cpe:/a:nginx:nginx:1.18.0"],
      tags: ["cloud"],
    });
    const unknown = await ask("shodanidb", "192.0.2.99");
    assert.equal(unknown.names.size, 0);
  });

  test("at least 12 keyless and 8 keyed sources are registered", () => {
    assert.ok(SOURCE_IDS.length - KEYED_SOURCE_IDS.length >= 12);
    assert.ok(KEYED_SOURCE_IDS.length >= 8);
    assert.deepEqual(Object.keys(PASSIVE_SOURCES).sort(), [...SOURCE_IDS].sort());
  });
});

describe("the shared client's bounds and retries (every source's)", () => {
  test("429 with Retry-After: waited out, then answered; counted as rate-limited", async () => {
    fakes.fault = "429-once";
    const started = Date.now();
    const { names, client } = await ask("anubis", D);
    assert.ok(Date.now() - started >= 900, "Retry-After: 1 was honoured");
    assert.equal(client.rateLimited, 1);
    assert.equal(client.requests, 2);
    assert.ok(names.has(`www.${D}`));
  });

  test("a Retry-After longer than the bound fails at once, naming the wait", async () => {
    fakes.fault = "429-once";
    await assert.rejects(
      ask("anubis", D, "", clientFor("anubis", { maxRetryWaitMs: 500 })),
      (error: SourceFailure) => /http 429: asked to wait 1 s/.test(error.reason),
    );
  });

  test("5xx: retried with backoff a bounded number of times, then failed with the status", async () => {
    fakes.fault = "503";
    const client = clientFor("anubis");
    await assert.rejects(
      ask("anubis", D, "", client),
      (error: SourceFailure) => error.reason === "http 503 after 3 tries",
    );
    assert.equal(client.requests, 3);
    assert.equal(client.answered, 0);
  });

  test("malformed JSON is a parse error, not no names", async () => {
    fakes.fault = "malformed";
    const client = clientFor("crtsh");
    await assert.rejects(ask("crtsh", D, "", client), (error: SourceFailure) =>
      error.reason.startsWith("parse error:"),
    );
    assert.equal(client.answered, 0, "garbage is not an answer");
  });

  test("a 50 MB answer is cut at the byte bound and reported too large", async () => {
    fakes.fault = "huge";
    const started = Date.now();
    await assert.rejects(ask("anubis", D), (error: SourceFailure) => error.reason.startsWith("too large"));
    assert.ok(Date.now() - started < 2000, "the rest of the answer was not waited for");
  });

  test("a slow drip ends at the time bound", async () => {
    fakes.fault = "drip";
    const started = Date.now();
    await assert.rejects(
      ask("anubis", D, "", clientFor("anubis", { timeoutMs: 600 })),
      (error: SourceFailure) => error.reason.startsWith("time-out"),
    );
    const took = Date.now() - started;
    assert.ok(took >= 550 && took < 1500, `stopped at the bound (${took} ms)`);
  });

  test("a redirect (a loop) is not followed", async () => {
    fakes.fault = "redirect-loop";
    const client = clientFor("anubis");
    await assert.rejects(ask("anubis", D, "", client), (error: SourceFailure) =>
      /http 302: redirected to \/anubis/.test(error.reason),
    );
    assert.equal(client.requests, 1);
  });

  test("nothing listening is a network failure", async () => {
    fakes.fault = "none";
    const client = new SourceClient({
      id: "nowhere",
      baseUrl: "http://127.0.0.62:9",
      requestsPerMinute: 6000,
      timeoutMs: 1000,
      maxBytes: 1024,
      retries: 0,
      signal: new AbortController().signal,
    });
    await assert.rejects(client.json({ path: "/" }), (error: SourceFailure) =>
      error.reason.startsWith("network: ECONNREFUSED"),
    );
  });

  test("requests to one source are paced at its rate", async () => {
    fakes.fault = "none";
    const client = clientFor("anubis", { id: "paced", requestsPerMinute: 300 });
    const started = Date.now();
    for (let i = 0; i < 3; i++) await client.json({ path: "/anubis/subdomains/lab.test" });
    assert.ok(Date.now() - started >= 380, "three requests at 5/s take at least 400 ms");
  });

  test("Retry-After as seconds and as an HTTP date", () => {
    assert.equal(retryAfterMs("7"), 7000);
    assert.equal(
      retryAfterMs("Wed, 21 Oct 2015 07:28:10 GMT", Date.parse("Wed, 21 Oct 2015 07:28:00 GMT")),
      10_000,
    );
    assert.equal(retryAfterMs("soon"), undefined);
  });
});

describe("names from sources", () => {
  test("lower case, `*.` and the trailing dot stripped, IDNA", () => {
    assert.deepEqual(normaliseName(" WWW.Lab.Test. "), { ok: true, name: "www.lab.test" });
    assert.deepEqual(normaliseName("*.*.lab.test"), { ok: true, name: "lab.test" });
    assert.deepEqual(normaliseName("bücher.lab.test"), { ok: true, name: "xn--bcher-kva.lab.test" });
  });

  test("refused with a reason: too long, undecodable punycode, control characters, not a host", () => {
    const long = `${`${"a".repeat(60)}.`.repeat(5)}lab.test`;
    assert.equal(long.length > 253, true);
    assert.deepEqual(normaliseName(long), { ok: false, reason: "longer than 253 characters" });
    assert.deepEqual(normaliseName("xn--zzzzzzzz-9999.lab.test"), {
      ok: false,
      reason: "punycode that does not decode",
    });
    assert.deepEqual(normaliseName("www.lab.test\u0000evil"), { ok: false, reason: "control characters" });
    assert.deepEqual(normaliseName("not a name"), { ok: false, reason: "not a host name" });
    assert.deepEqual(normaliseName("localhost"), { ok: false, reason: "not a host name" });
  });

  test("hosts of archived URLs and names inside free text", () => {
    assert.equal(hostOfUrl("https://Old.Lab.Test:8443/a?b"), "old.lab.test");
    assert.equal(hostOfUrl("old.lab.test/path"), "old.lab.test");
    assert.deepEqual(namesInText('api = "https://api.lab.test/x" # not xlab.test.evil', "lab.test"), [
      "api.lab.test",
    ]);
  });
});
