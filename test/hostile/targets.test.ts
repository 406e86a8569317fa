/**
 * Each hostile target against the module that meets it: the module finishes, within a time limit that
 * only proves it does not hang, and the process's memory stays bounded while it works; what the cap
 * let through is what the configuration says (bytes, redirects, records, names).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { FoundEntity } from "../../src/core/entities.ts";
import type { DiscoveryLimits, DiscoveryModule } from "../../src/discovery/module.ts";
import { dnsRecords } from "../../src/discovery/modules/dns.ts";
import { zoneTransfer } from "../../src/discovery/modules/dns-axfr.ts";
import { createHttpModule } from "../../src/discovery/modules/http.ts";
import { portScan } from "../../src/discovery/modules/ports.ts";
import { handshake, tlsCertificates } from "../../src/discovery/modules/tls.ts";
import { HttpClient } from "../../src/discovery/net/http-fetch.ts";
import { MiB, measure } from "../helpers/bounds.ts";
import { namesOf, runModule } from "../helpers/discovery.ts";
import {
  CROWD_SIZE,
  HOSTILE_NAMES,
  HOSTILE_ZONE,
  type HostileHost,
  type HostileLab,
  SAN_COUNT,
  SMALL_CAPS,
  startHostileLab,
} from "../lab/hostile.ts";

/** Short, so the trickling servers cost moments; DNS gets longer (its answers must arrive on a busy machine). */
const TIMEOUT_MS = 500;
const DNS_TIMEOUT_MS = 1500;
const LIMITS: DiscoveryLimits = SMALL_CAPS;
/** Far above what a capped module holds, far below what an uncapped one would (gigabytes). */
const MEMORY_BOUND = 64 * MiB;
/** Not a speed claim: a module that hangs on a target never gets here. */
const TIME_LIMIT_MS = 15_000;

let lab: HostileLab;
before(async () => {
  lab = await startHostileLab();
});
after(async () => lab?.stop());

function withinBounds(result: { peakGrowth: number; elapsedMs: number }, what: string) {
  assert.ok(
    result.peakGrowth < MEMORY_BOUND,
    `${what}: memory grew by ${(result.peakGrowth / MiB).toFixed(1)} MiB`,
  );
  assert.ok(result.elapsedMs < TIME_LIMIT_MS, `${what}: took ${Math.round(result.elapsedMs)} ms`);
}

/** One module on one entity, against the hostile lab, measured. */
async function meet(module: DiscoveryModule, entity: FoundEntity, timeoutMs = TIMEOUT_MS) {
  const result = await measure(() =>
    runModule(module, entity, {
      dnsServers: [lab.resolver],
      ports: [22, 80, 443],
      timeoutMs,
      allow: [lab.block],
      limits: LIMITS,
    }),
  );
  withinBounds(result, `${module.name} on ${entity.name}`);
  return result.value;
}

function webService(host: HostileHost): FoundEntity {
  const { ip, port, name } = lab.targets[host];
  return {
    kind: "NetworkService",
    name: `${ip}:${port}/tcp`,
    details: { ip_address: ip, port, service: "http", hostname: name },
  };
}

/** A client as the http module makes one, pinned to a hostile host, with the test caps. */
async function withClient<T>(host: HostileHost, use: (client: HttpClient, url: string) => Promise<T>) {
  const { ip, name } = lab.targets[host];
  const client = new HttpClient({
    pins: { [name]: ip },
    limits: {
      timeoutMs: TIMEOUT_MS,
      maxBodyBytes: LIMITS.httpMaxBodyBytes,
      maxHeaderBytes: LIMITS.httpMaxHeaderBytes,
      maxRedirects: LIMITS.httpMaxRedirects,
    },
    signal: new AbortController().signal,
    mayTouch: () => true,
  });
  const result = await measure(async () => {
    try {
      return await use(client, `http://${name}/`);
    } finally {
      await client.close();
    }
  });
  withinBounds(result, host);
  return result.value;
}

describe("hostile web servers", () => {
  test("an endless body is read up to SIGHTLINE_HTTP_MAX_BODY_BYTES, and the application is still recorded", async () => {
    const exchange = await withClient("endless", (client, url) => client.fetch(url));
    assert.equal(exchange.status, 200);
    assert.equal(exchange.truncated, true);
    assert.equal(exchange.body.length, LIMITS.httpMaxBodyBytes);
    const outcome = await meet(createHttpModule(), webService("endless"));
    assert.ok(namesOf(outcome, "Uri").includes(`http://${lab.targets.endless.name}:80`));
  });

  test("a gzip bomb is decompressed only up to the same bound", async () => {
    const exchange = await withClient("bomb", (client, url) => client.fetch(url));
    assert.equal(exchange.truncated, true);
    assert.equal(exchange.body.length, LIMITS.httpMaxBodyBytes);
    assert.ok(
      exchange.body.every((byte) => byte === 0),
      "the body is the decompressed zeros, not the gzip bytes",
    );
    await meet(createHttpModule(), webService("bomb"));
  });

  test("an endless header section fails the request past SIGHTLINE_HTTP_MAX_HEADER_BYTES", async () => {
    await withClient("headers", (client, url) =>
      assert.rejects(client.fetch(url), (error: Error & { code?: string }) => {
        assert.match(`${error.code} ${error.message}`, /HEADERS_OVERFLOW|header/i);
        return true;
      }),
    );
    const outcome = await meet(createHttpModule(), webService("headers"));
    assert.deepEqual(namesOf(outcome, "Uri"), []);
  });

  test("a redirect loop is followed SIGHTLINE_HTTP_MAX_REDIRECTS times", async () => {
    const followed = await withClient("redirects", (client, url) => client.fetchFollowing(url));
    assert.equal(followed.final.status, 302);
    assert.equal(followed.chain.length, LIMITS.httpMaxRedirects);
    assert.equal(followed.final.url, `http://${lab.targets.redirects.name}/loop/${LIMITS.httpMaxRedirects}`);
    const outcome = await meet(createHttpModule(), webService("redirects"));
    const [application] = outcome.entities.filter((entity) => entity.kind === "Uri");
    assert.equal(application?.details?.code, "302");
  });

  test("headers trickled a byte a second are given up at the time bound", async () => {
    await withClient("trickle", (client, url) => assert.rejects(client.fetch(url)));
    const outcome = await meet(createHttpModule(), webService("trickle"));
    assert.deepEqual(namesOf(outcome, "Uri"), []);
  });

  test("a body trickled a byte a second is cut at the time bound, keeping what arrived", async () => {
    const exchange = await withClient("drip", (client, url) => client.fetch(url));
    assert.equal(exchange.status, 200);
    assert.equal(exchange.truncated, true);
    assert.match(exchange.body.toString(), /^<html><head><title>Drip<\/title>/);
  });

  test("malformed HTTP of every kind fails the request and leaves nothing behind", async () => {
    await withClient("garbage", async (client, url) => {
      for (let kind = 0; kind < 4; kind++) await assert.rejects(client.fetch(url));
    });
    const outcome = await meet(createHttpModule(), webService("garbage"));
    assert.deepEqual(namesOf(outcome, "Uri"), []);
  });
});

describe("hostile TLS servers", () => {
  const tlsService = (host: HostileHost): FoundEntity => {
    const { ip, port } = lab.targets[host];
    return { kind: "NetworkService", name: `${ip}:${port}/tcp`, details: { ip_address: ip, port } };
  };
  const shake = async (host: HostileHost) => {
    const { ip, port } = lab.targets[host];
    const result = await measure(() =>
      handshake(ip, port, { timeoutMs: TIMEOUT_MS, signal: new AbortController().signal }),
    );
    withinBounds(result, host);
    return result.value;
  };

  test("a certificate that is not DER fails the handshake, and no certificate is recorded", async () => {
    const result = await shake("badcert");
    assert.equal(result.ok, false);
    const outcome = await meet(tlsCertificates, tlsService("badcert"));
    assert.deepEqual(namesOf(outcome, "SslCertificate"), []);
  });

  test("a certificate message of 16 MB is refused, not read", async () => {
    const result = await shake("hugecert");
    assert.equal(result.ok, false);
    const outcome = await meet(tlsCertificates, tlsService("hugecert"));
    assert.deepEqual(namesOf(outcome, "SslCertificate"), []);
  });

  test("a certificate naming thousands of hosts gives SIGHTLINE_TLS_MAX_NAMES of them", async () => {
    const outcome = await meet(tlsCertificates, tlsService("sans"));
    const [certificate] = outcome.entities.filter((entity) => entity.kind === "SslCertificate");
    assert.ok(certificate?.details, "the certificate is recorded");
    assert.equal((certificate.details.alt_names as string[]).length, LIMITS.tlsMaxNames);
    assert.equal(certificate.details.alt_names_count, SAN_COUNT);
    assert.equal(namesOf(outcome, "DnsRecord").length, LIMITS.tlsMaxNames);
    assert.ok(outcome.notes.some((note) => /SIGHTLINE_TLS_MAX_NAMES/.test(note)));
  });
});

describe("hostile banner services", () => {
  const scan = (host: HostileHost) => meet(portScan, { kind: "IpAddress", name: lab.targets[host].ip });

  test("a service that never speaks and never closes is recorded open, without a banner", async () => {
    const outcome = await scan("mute");
    const [service] = outcome.entities.filter((entity) => entity.kind === "NetworkService");
    assert.equal(service?.name, `${lab.targets.mute.ip}:22/tcp`);
    assert.equal(service?.details?.banner, "");
  });

  test("an endless greeting is kept up to SIGHTLINE_BANNER_MAX_BYTES", async () => {
    const outcome = await scan("chatter");
    const [service] = outcome.entities.filter((entity) => entity.kind === "NetworkService");
    const banner = String(service?.details?.banner);
    assert.match(banner, /^SSH-2\.0-a+$/);
    assert.equal(banner.length, LIMITS.bannerMaxBytes);
  });
});

describe("a hostile DNS server", () => {
  const lookUp = (name: string) => meet(dnsRecords, { kind: "DnsRecord", name }, DNS_TIMEOUT_MS);

  test("a CNAME loop ends: the target is recorded once and the lookup finishes", async () => {
    const outcome = await lookUp(HOSTILE_NAMES.loop);
    assert.deepEqual(namesOf(outcome, "DnsRecord"), [`loop-a.${HOSTILE_ZONE}`, `loop-b.${HOSTILE_ZONE}`]);
  });

  test("an endless CNAME chain yields one step per lookup (the engine's depth bounds the rest)", async () => {
    const outcome = await lookUp(HOSTILE_NAMES.chain);
    assert.deepEqual(namesOf(outcome, "DnsRecord"), [`chain-0.${HOSTILE_ZONE}`, `chain-1.${HOSTILE_ZONE}`]);
  });

  test("oversized TXT records are cut to SIGHTLINE_DNS_MAX_TXT_LENGTH, and their number to SIGHTLINE_DNS_MAX_RECORDS", async () => {
    const outcome = await lookUp(HOSTILE_NAMES.bigTxt);
    const [record] = outcome.entities.filter((entity) => entity.name === HOSTILE_NAMES.bigTxt);
    assert.ok(record?.details, "the name is recorded");
    const txt = (record.details.records as { txt: string[] }).txt;
    assert.equal(txt.length, LIMITS.dnsMaxRecords);
    for (const text of txt) assert.equal(text.length, LIMITS.dnsMaxTxtLength);
    assert.ok(outcome.notes.some((note) => /SIGHTLINE_DNS_MAX_RECORDS/.test(note)));
  });

  test("a thousand addresses for one name become SIGHTLINE_DNS_MAX_RECORDS hosts to scan", async () => {
    const outcome = await lookUp(HOSTILE_NAMES.crowd);
    assert.equal(namesOf(outcome, "IpAddress").length, LIMITS.dnsMaxRecords);
    assert.ok(outcome.notes.some((note) => note.includes(`A (${CROWD_SIZE - LIMITS.dnsMaxRecords} more)`)));
  });

  test("truncated, garbled and unanswered names end in a finished lookup with a note, not a hang", async () => {
    const names = [HOSTILE_NAMES.truncated, HOSTILE_NAMES.garbled, HOSTILE_NAMES.silent];
    const outcomes = await Promise.all(names.map(lookUp));
    for (const [i, name] of names.entries()) assert.deepEqual(namesOf(outcomes[i]!, "IpAddress"), [], name);
    assert.ok(outcomes[2]!.notes.some((note) => /No DNS server answered/.test(note)));
  });

  test("a zone transfer that never ends is cut at SIGHTLINE_AXFR_MAX_RECORDS", async () => {
    const outcome = await meet(zoneTransfer, { kind: "Domain", name: HOSTILE_ZONE }, DNS_TIMEOUT_MS);
    assert.equal(outcome.issues.filter((issue) => issue.name === "dns_zone_transfer_allowed").length, 1);
    const names = namesOf(outcome, "DnsRecord");
    assert.ok(names.length > 0 && names.length <= LIMITS.axfrMaxRecords, `${names.length} names`);
    assert.ok(outcome.notes.some((note) => /SIGHTLINE_AXFR_MAX_RECORDS/.test(note)));
  });
});
