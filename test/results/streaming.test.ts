/**
 * Every result endpoint over real HTTP on SQLite and PostgreSQL, for an empty collection, a small one and
 * a paged large one built in the store: shapes field by field against the spec's tables, streamed bodies
 * validated against the route's OpenAPI schema, paging, filters, 400s for unknown or malformed query
 * parameters, CSV and NDJSON exports, and compression.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { Ajv } from "ajv";
import { formatDecimalExponent, parseDecimalExponent, readableNumbers } from "../../src/core/formats.ts";
import { SEVERITIES } from "../../src/core/severities.ts";
import {
  applicationName,
  type FixtureCollection,
  fixtureCounts,
  hasName,
  ip,
  issueOf,
  portsOf,
  productsOfApplication,
} from "../helpers/result-fixtures.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { dialects } from "../helpers/stores.ts";
import {
  APPLICATION,
  allPages,
  apiCollection,
  assertShape,
  CONNECTION,
  DOMAIN,
  ENTITY,
  HOST,
  ISSUE,
  NETBLOCK,
  PRODUCT,
  parseCsv,
  rawGet,
  runIn,
  VULNERABILITY,
} from "./helpers.ts";

const LISTS = [
  "hosts",
  "domains",
  "netblocks",
  "recent",
  "applications",
  "issues",
  "products",
  "vulnerabilities",
  "connections",
];
const SHAPES = {
  applications: APPLICATION,
  connections: CONNECTION,
  domains: DOMAIN,
  netblocks: NETBLOCK,
  recent: ENTITY,
  issues: ISSUE,
  products: PRODUCT,
  vulnerabilities: VULNERABILITY,
};
const SMALL_HOSTS = 4;
const LARGE_HOSTS = 1500;

for (const { dialect, skip } of await dialects()) {
  describe(`streamed results on ${dialect}`, { skip }, () => {
    let t: TestServer;
    let small: FixtureCollection;
    let large: FixtureCollection;
    // biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document as JSON
    let openapi: any;

    before(async () => {
      t = await startTestServer(dialect, { schedulerIntervalSeconds: 3600 });
      await apiCollection(t, "empty");
      small = await apiCollection(t, "small");
      await runIn(t, small, { hosts: SMALL_HOSTS });
      large = await apiCollection(t, "large");
      await runIn(t, large, { hosts: LARGE_HOSTS });
      openapi = (await t.request("GET", "/api/openapi.json", { keys: null })).body;
    });
    after(async () => {
      await t?.close();
    });

    /** Validates a body against the route's documented 200 response. */
    function assertDocumented(path: string, body: unknown) {
      const operation = openapi.paths[`/api/collections/{collection_name}/${path}`].get;
      const schema = operation.responses["200"].content["application/json"].schema;
      const ajv = new Ajv({ strict: false, allErrors: true });
      const validate = ajv.compile(schema);
      assert.ok(validate(body), `${path}: ${JSON.stringify(validate.errors?.slice(0, 3))}`);
    }

    test("an empty collection: {} for hosts, [] for the lists, zero counts, header-only CSV", async () => {
      for (const path of LISTS) {
        const response = await t.request("GET", `/api/collections/empty/${path}`);
        assert.equal(response.status, 200, response.text);
        assert.deepEqual(response.body, {
          success: true,
          message: "success",
          result: path === "hosts" ? {} : [],
        });
        assert.equal(response.headers.get("x-total-count"), "0");
        assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
        assertDocumented(path, response.body);
        const csv = await t.request("GET", `/api/collections/empty/${path}?format=csv`);
        assert.equal(parseCsv(csv.text).length, 1, "the header row only");
        const ndjson = await t.request("GET", `/api/collections/empty/${path}?format=ndjson`);
        assert.equal(ndjson.text, "");
      }
      const overview = await t.request("GET", "/api/collections/empty/overview");
      assert.equal(overview.status, 200, overview.text);
      assert.equal(overview.body.result.last_run, null);
      assert.equal(overview.body.result.results_run_id, null);
      assert.equal(overview.body.result.seed_count, 1);
      assert.ok(Object.values(overview.body.result.counts).every((n) => n === 0));
    });

    test("a small collection: every item has the spec's fields in the spec's formats", async () => {
      for (const path of LISTS) {
        const response = await t.request("GET", `/api/collections/small/${path}`);
        assert.equal(response.status, 200, response.text);
        assertDocumented(path, response.body);
        const result = response.body.result;
        if (path === "hosts") {
          for (const [address, host] of Object.entries(result)) assertShape(host, HOST, `hosts[${address}]`);
        } else {
          assert.ok(result.length > 0, `${path} is not empty`);
          for (const [i, item] of result.entries())
            assertShape(item, SHAPES[path as keyof typeof SHAPES], `${path}[${i}]`);
        }
        assert.equal(response.headers.get("x-total-count"), String(Object.keys(result).length));
      }
    });

    test("a small collection: the values are what the run found", async () => {
      const hosts = (await t.request("GET", "/api/collections/small/hosts")).body.result;
      const expected = Array.from({ length: SMALL_HOSTS }, (_, host) => ip(host));
      assert.deepEqual(Object.keys(hosts).sort(), expected.sort());
      for (let host = 0; host < SMALL_HOSTS; host++) {
        const value = hosts[ip(host)];
        assert.deepEqual(
          value.ports,
          portsOf(host).map((port) => ({ number: formatDecimalExponent(port), protocol: "tcp" })),
        );
        assert.deepEqual(value.resolutions, hasName(host) ? [`h${host}.corp.example`] : []);
        assert.equal(value.os, host % 2 === 1 ? "Ubuntu" : "");
        assert.equal(value.geolocation.country_code, "NL");
      }

      const issues = (await t.request("GET", "/api/collections/small/issues")).body.result;
      const planted = [];
      for (let host = 0; host < SMALL_HOSTS; host++)
        for (const port of [80, 443]) {
          const issue = issueOf(host, port);
          if (issue) planted.push({ ...issue, entity: applicationName(host, port) });
        }
      assert.deepEqual(
        issues.map((i: { name: string; entity_name: string; severity: string }) => [
          i.name,
          i.entity_name,
          parseDecimalExponent(i.severity),
        ]),
        planted
          .sort((a, b) => a.severity - b.severity || a.name.localeCompare(b.name))
          .map((i) => [i.name, i.entity, i.severity]),
        "most severe first",
      );
      for (const issue of issues) {
        assert.equal(issue.entity_type, "Service::Entity::Uri");
        assert.equal(issue.organization, "Example Networks", "the owner of the block the entity is on");
        assert.equal(issue.details.severity, issue.severity);
        assert.ok(parseDecimalExponent(issue.alias_group_id) >= 1);
      }

      const applications = (await t.request("GET", "/api/collections/small/applications")).body.result;
      assert.deepEqual(
        applications.map((a: { name: string }) => a.name).sort(),
        Array.from({ length: SMALL_HOSTS }, (_, h) => [applicationName(h, 80), applicationName(h, 443)])
          .flat()
          .sort(),
      );
      const https1 = applications.find((a: { name: string }) => a.name === applicationName(1, 443));
      assert.equal(https1.details.port, "0.443e3");
      assert.equal(https1.details.ip_address, ip(1));
      assert.equal(https1.details.asn, "AS64500");
      assert.equal(https1.organization, "Example Networks");
      assert.ok(parseDecimalExponent(https1.details.host_id) >= 1, "the id of its host");
      assert.deepEqual(
        https1.details.products,
        productsOfApplication(1, 443).map(([name, version]) => [name, version]),
      );
      const connections = (await t.request("GET", "/api/collections/small/connections")).body.result;
      assert.deepEqual(
        connections.map((c: { name: string; kinds: string[]; count: number }) => [c.name, c.kinds, c.count]),
        [["example-cdn.net", ["script"], 2]],
        "host 0's two applications load a script from it",
      );

      const counts = new Map<string, number>();
      for (let host = 0; host < SMALL_HOSTS; host++)
        for (const port of [80, 443])
          for (const [name, version] of productsOfApplication(host, port)) {
            const label = `${name} ${version}`.trim();
            counts.set(label, (counts.get(label) ?? 0) + 1);
          }
      const products = (await t.request("GET", "/api/collections/small/products")).body.result;
      assert.deepEqual(
        Object.fromEntries(
          products.map((p: { product: string; count: string }) => [p.product, Number(p.count)]),
        ),
        Object.fromEntries(counts),
      );
      const numbers = products.map((p: { count: string }) => Number(p.count));
      assert.deepEqual(
        numbers,
        [...numbers].sort((a, b) => b - a),
        "most common first",
      );

      const vulnerabilities = (await t.request("GET", "/api/collections/small/vulnerabilities")).body.result;
      for (const vulnerability of vulnerabilities) {
        assert.match(vulnerability.cve, /^CVE-\d{4}-\d+$/);
        assert.equal(vulnerability.shortname, vulnerability.cve.toLowerCase().replaceAll("-", "_"));
        assert.equal(vulnerability.count, vulnerability.affected.length);
      }

      const overview = (await t.request("GET", "/api/collections/small/overview")).body.result;
      const truth = fixtureCounts(SMALL_HOSTS);
      assert.deepEqual(
        {
          hosts: overview.counts.hosts,
          applications: overview.counts.applications,
          services: overview.counts.services,
          issues: overview.counts.issues,
          netblocks: overview.counts.netblocks,
          products: overview.counts.products,
        },
        {
          hosts: truth.IpAddress,
          applications: truth.Uri,
          services: truth.NetworkService,
          issues: truth.issues,
          netblocks: truth.NetBlock,
          products: counts.size,
        },
      );
      assert.equal(
        overview.issues_by_severity.reduce((sum: number, s: { count: number }) => sum + s.count, 0),
        truth.issues,
      );
      assert.deepEqual(
        overview.issues_by_severity.map((s: { severity: string }) => s.severity),
        [1, 2, 3, 4, 5].map(formatDecimalExponent),
      );
      assert.equal(overview.last_run.status, "finished");
      assert.equal(overview.new_since_previous_run.previous_run_id, null);
      assert.equal(overview.new_since_previous_run.issues, truth.issues, "a first run: everything is new");
    });

    test("a large collection paged: pages put together are the whole list, with totals and Link headers", async () => {
      const truth = fixtureCounts(LARGE_HOSTS);
      const whole = await t.request("GET", "/api/collections/large/hosts");
      assert.equal(Object.keys(whole.body.result).length, truth.IpAddress);
      assert.equal(whole.headers.get("x-total-count"), String(truth.IpAddress));
      const hosts = await allPages(t, "/api/collections/large/hosts?limit=400");
      assert.equal(hosts.total, truth.IpAddress);
      assert.equal(hosts.pages.length, Math.ceil(truth.IpAddress / 400));
      assert.deepEqual(Object.assign({}, ...hosts.pages), whole.body.result);
      assert.deepEqual(
        Object.keys(Object.assign({}, ...hosts.pages)),
        Object.keys(whole.body.result),
        "the same order",
      );

      const issues = await t.request("GET", "/api/collections/large/issues");
      assert.equal(issues.body.result.length, truth.issues);
      const paged = await allPages(t, "/api/collections/large/issues?limit=300");
      assert.deepEqual(paged.pages.flat(), issues.body.result);
      const severities = issues.body.result.map((i: { severity: string }) =>
        parseDecimalExponent(i.severity),
      );
      assert.deepEqual(
        severities,
        [...severities].sort((a, b) => a - b),
      );
      assertDocumented("issues", issues.body);

      const recent = await allPages(t, "/api/collections/large/recent?limit=5000");
      const all = recent.pages.flat() as Array<{ type: string; name: string }>;
      assert.equal(recent.total, all.length);
      assert.equal(
        all.filter((e) => e.type === "Service::Entity::Uri").length,
        truth.Uri,
        "every application, once",
      );
      assert.equal(
        new Set(all.map((e) => `${e.type} ${e.name}`)).size,
        all.length,
        "no duplicates across pages",
      );

      const middle = await t.request("GET", "/api/collections/large/domains?limit=10&offset=100");
      const domains = await t.request("GET", "/api/collections/large/domains");
      assert.deepEqual(middle.body.result, domains.body.result.slice(100, 110));
      assert.equal(domains.body.result.length, truth.DnsRecord);
    });

    test("filters narrow every list and keep its shape", async () => {
      const unscoped = (await t.request("GET", "/api/collections/large/hosts?scoped=false")).body.result;
      const expected = [];
      for (let host = 0; host < LARGE_HOSTS; host++) if (host % 10 === 9) expected.push(ip(host));
      assert.deepEqual(Object.keys(unscoped).sort(), expected.sort());
      assert.ok(Object.values(unscoped).every((h) => (h as { scoped: boolean }).scoped === false));

      const hidden = await t.request("GET", "/api/collections/large/hosts?hidden=true");
      assert.ok(Object.keys(hidden.body.result).length > 0);
      assert.ok(Object.values(hidden.body.result).every((h) => (h as { hidden: boolean }).hidden));
      assert.equal(hidden.headers.get("x-total-count"), String(Object.keys(hidden.body.result).length));

      const ssh = (await t.request("GET", "/api/collections/large/hosts?port=22&limit=50")).body.result;
      assert.ok(
        Object.values(ssh).every((h) =>
          (h as { ports: Array<{ number: string }> }).ports.some((p) => p.number === "0.22e2"),
        ),
      );
      const sshTotal = (await t.request("GET", "/api/collections/large/hosts?port=22")).headers.get(
        "x-total-count",
      );
      assert.equal(Number(sshTotal), LARGE_HOSTS / 2);

      const named = (await t.request("GET", "/api/collections/large/hosts?q=10.0.1.1")).body.result;
      assert.ok(Object.keys(named).length > 0);
      assert.ok(Object.keys(named).every((address) => address.includes("10.0.1.1")));

      const critical = (await t.request("GET", "/api/collections/large/issues?severity=1,2")).body.result;
      assert.ok(critical.length > 0);
      assert.ok(critical.every((i: { severity: string }) => ["0.1e1", "0.2e1"].includes(i.severity)));
      const git = (await t.request("GET", "/api/collections/large/issues?q=GIT")).body.result;
      assert.ok(git.length > 0 && git.every((i: { name: string }) => i.name === "exposed_git_repository"));

      const nginx = (await t.request("GET", "/api/collections/large/products?q=nginx")).body.result;
      assert.ok(nginx.length > 0 && nginx.every((p: { product: string }) => p.product.startsWith("nginx")));
      const literal = await t.request("GET", "/api/collections/large/products?q=%25");
      assert.deepEqual(literal.body.result, [], "% is a character to find, not a wildcard");
    });

    test("unknown or malformed query parameters are 400s naming each", async () => {
      const unknown = await t.request("GET", "/api/collections/small/hosts?colour=blue&limit=2");
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.success, false);
      assert.equal(unknown.body.error.code, "bad_request");
      assert.deepEqual(unknown.body.error.details, [{ field: "colour", message: "is not a known field" }]);
      assert.match(unknown.body.message, /colour/);

      const malformed = await t.request(
        "GET",
        "/api/collections/small/issues?limit=abc&scoped=maybe&severity=9",
      );
      assert.equal(malformed.status, 400);
      assert.deepEqual(malformed.body.error.details.map((d: { field: string }) => d.field).sort(), [
        "limit",
        "scoped",
        "severity",
      ]);
      // Each says what it asks for, in words.
      assert.equal(
        malformed.body.error.details.find((d: { field: string }) => d.field === "severity").message,
        "must be severities 1–5 or their words (critical, high, medium, low, informational), comma-separated, e.g. critical,high",
      );
      const empty = await t.request("GET", "/api/collections/small/applications?q=");
      assert.deepEqual(empty.body.error.details, [{ field: "q", message: "must not be empty" }]);
      const long = await t.request("GET", `/api/collections/small/applications?product=${"x".repeat(201)}`);
      assert.deepEqual(long.body.error.details, [
        { field: "product", message: "must be at most 200 characters long" },
      ]);
      const wrongList = await t.request("GET", "/api/collections/small/issues?port=80");
      assert.equal(wrongList.status, 400, "issues have no port filter");
      assert.equal(wrongList.body.error.details[0].field, "port");
      const format = await t.request("GET", "/api/collections/small/hosts?format=xml");
      assert.equal(format.status, 400);
      assert.match(format.body.error.details[0].message, /json, csv, ndjson/);
      const port = await t.request("GET", "/api/collections/small/hosts?port=70000");
      assert.equal(port.status, 400);
    });

    test("exports: CSV parses back to the JSON items, NDJSON is one object per line", async () => {
      const json = (await t.request("GET", "/api/collections/large/issues?limit=200")).body.result;
      const csv = await t.request("GET", "/api/collections/large/issues?limit=200&format=csv");
      assert.equal(csv.status, 200);
      assert.equal(csv.headers.get("content-type"), "text/csv; charset=utf-8");
      assert.equal(csv.headers.get("content-disposition"), 'attachment; filename="large-issues.csv"');
      const [header, ...rows] = parseCsv(csv.text);
      assert.deepEqual(header, Object.keys(json[0]));
      assert.equal(rows.length, json.length);
      rows.forEach((row, i) => {
        const item = json[i];
        header.forEach((column, c) => {
          // CSV is for people: the wire's decimal-exponent numbers are plain there ("0.1e1" → 1), and a
          // severity is its word ("0.2e1" → high).
          const value =
            column === "severity"
              ? SEVERITIES[parseDecimalExponent(item[column]) - 1]
              : readableNumbers(item[column], column);
          if (typeof value === "object") assert.deepEqual(JSON.parse(row[c]), value, column);
          else assert.equal(row[c], String(value), column);
        });
      });

      const hostsCsv = parseCsv((await t.request("GET", "/api/collections/small/hosts?format=csv")).text);
      assert.equal(hostsCsv[0][0], "ip", "a keyed result exports its key as the first column");
      assert.deepEqual(
        hostsCsv
          .slice(1)
          .map((row) => row[0])
          .sort(),
        Array.from({ length: SMALL_HOSTS }, (_, h) => ip(h)).sort(),
      );

      const ndjson = await t.request("GET", "/api/collections/large/issues?limit=200&format=ndjson");
      assert.equal(ndjson.headers.get("content-type"), "application/x-ndjson; charset=utf-8");
      const lines = ndjson.text.split("\n");
      assert.equal(lines.pop(), "", "every line ends with a newline");
      assert.deepEqual(
        lines.map((line) => JSON.parse(line)),
        json,
      );
      const hostLines = (await t.request("GET", "/api/collections/small/hosts?format=ndjson")).text
        .trim()
        .split("\n");
      assert.equal(hostLines.length, SMALL_HOSTS);
      assert.ok(hostLines.every((line) => typeof JSON.parse(line).ip === "string"));
    });

    test("compression: brotli or gzip as the client asks, identity otherwise, the same bytes inside", async () => {
      const path = "/api/collections/large/hosts";
      const plain = await rawGet(t, path, {});
      assert.equal(plain.headers["content-encoding"], undefined);
      const br = await rawGet(t, path, { "Accept-Encoding": "gzip;q=0.5, br" });
      assert.equal(br.headers["content-encoding"], "br");
      assert.equal(br.headers.vary, "Accept-Encoding");
      assert.ok(br.body.length * 5 < plain.body.length, "compressed well");
      assert.deepEqual(brotliDecompressSync(br.body), plain.body);
      const gzip = await rawGet(t, path, { "Accept-Encoding": "gzip, br;q=0" });
      assert.equal(gzip.headers["content-encoding"], "gzip");
      assert.deepEqual(gunzipSync(gzip.body), plain.body);
      const refused = await rawGet(t, path, { "Accept-Encoding": "identity" });
      assert.equal(refused.headers["content-encoding"], undefined);
    });

    test("a small answer goes out whole with its length, a large one streamed, the same bytes either way", async () => {
      for (const accept of ["identity", "gzip", "br"]) {
        const page = await rawGet(t, "/api/collections/large/hosts?limit=5", { "Accept-Encoding": accept });
        assert.equal(page.headers["transfer-encoding"], undefined, accept);
        assert.equal(page.headers["content-length"], String(page.body.length), accept);
        const text = (
          accept === "br" ? brotliDecompressSync : accept === "gzip" ? gunzipSync : (b: Buffer) => b
        )(page.body).toString();
        assert.equal(Object.keys(JSON.parse(text).result).length, 5, accept);
        // Read from the store (a key no other test asks for): a cached answer is sent whole whatever its size.
        const all = await rawGet(t, "/api/collections/large/hosts?offset=1", { "Accept-Encoding": accept });
        assert.equal(all.headers["transfer-encoding"], "chunked", accept);
        assert.equal(all.headers["content-length"], undefined, accept);
      }
    });
  });
}
