/**
 * The web results through the API, on SQLite and PostgreSQL, after a discovery run on the lab:
 * applications (every web port of every address and of every name resolving to it), products,
 * vulnerabilities, issues and connections, compared with the lab's ground truth both ways (everything
 * planted is found, clean hosts raise nothing), and checked field by field against the spec's shapes.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { formatDecimalExponent, parseDecimalExponent } from "../../src/core/formats.ts";
import { LAB_DOMAINS, type LabServer, startLabServer } from "../helpers/lab-server.ts";
import type { Keys, TestServer } from "../helpers/server.ts";
import {
  APPLICATION,
  APPLICATION_DETAILS,
  FINGERPRINT,
  ISSUE,
  VULNERABILITY,
} from "../helpers/spec-fields.ts";
import { dialects } from "../helpers/stores.ts";
import type { ApplicationTruth, Lab, LabTruth } from "../lab/index.ts";
import { inferredCveIssue } from "../lab/web-truth.ts";
import { force, getRun, waitFor } from "../runs/helpers.ts";

const PATHS = ["applications", "issues", "products", "vulnerabilities", "connections"];
const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/;

// biome-ignore lint/suspicious/noExplicitAny: items as the API answers them
type Item = any;

/** A decimal-exponent string in its one normal form. */
function assertDecimalExponent(value: unknown, what: string): number {
  assert.equal(typeof value, "string", what);
  const number = parseDecimalExponent(value as string);
  assert.equal(formatDecimalExponent(number), value, `${what} is in normal form`);
  return number;
}

const strings = (value: unknown) => Array.isArray(value) && value.every((item) => typeof item === "string");

/** The shipped vulnerability database, to know each CVE's scores and KEV entry. */
const SEED_CVES = new Map<string, Item>(
  JSON.parse(readFileSync(new URL("../../vulndb/seed.json", import.meta.url), "utf8")).vulnerabilities.map(
    (entry: Item) => [entry.cve.id, entry.cve],
  ),
);

/** A CVE's v3 and v2 base scores as NVD gives them (its own Primary metric first). */
function seedScores(id: string): { v3: number | null; v2: number | null } {
  const metrics = SEED_CVES.get(id).metrics;
  const primary = (list: Item[] | undefined) =>
    (list?.find((metric) => metric.type === "Primary") ?? list?.[0])?.cvssData.baseScore ?? null;
  return {
    v3: primary([...(metrics.cvssMetricV31 ?? []), ...(metrics.cvssMetricV30 ?? [])]),
    v2: primary(metrics.cvssMetricV2),
  };
}

const productName = (product: { name: string; version: string }) =>
  `${product.name} ${product.version}`.trim();

for (const { dialect, skip } of await dialects()) {
  describe(`web results API on ${dialect}`, { skip }, () => {
    let lab: Lab;
    let truth: LabTruth;
    let t: TestServer;
    let stranger: Keys;
    let server: LabServer;
    let expected: ApplicationTruth[];
    const read = async (path: string) => {
      const response = await t.request("GET", `/api/collections/lab/${path}`);
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.success, true);
      return response.body.result as Item[];
    };

    before(async () => {
      server = await startLabServer(dialect);
      ({ lab, t, stranger } = server);
      truth = lab.truth;
      expected = truth.applications.filter((app) => app.zone === null || LAB_DOMAINS.includes(app.zone));
    });
    after(() => server?.close());

    test("before any finished run every web result is [], and 404 for a collection the user cannot see", async () => {
      for (const path of PATHS) {
        const response = await t.request("GET", `/api/collections/lab/${path}`);
        assert.equal(response.status, 200, response.text);
        assert.deepEqual(response.body, { success: true, message: "success", result: [] });
        assert.equal(response.headers.get("x-total-count"), "0");
        const hidden = await t.request("GET", `/api/collections/lab/${path}`, { keys: stranger });
        assert.equal(hidden.status, 404, path);
        assert.equal(hidden.body.success, false);
        assert.equal(hidden.body.error.code, "not_found");
        assert.equal((await t.request("GET", `/api/collections/nope/${path}`)).status, 404);
      }
    });

    test("the OpenAPI document carries the spec's shapes", async () => {
      const doc = (await t.request("GET", "/api/openapi.json", { keys: null })).body;
      const item = (path: string) =>
        doc.paths[`/api/collections/{collection_name}/${path}`].get.responses["200"].content[
          "application/json"
        ].schema.properties.result.items;
      const keys = (schema: Item) => Object.keys(schema.properties).sort();
      assert.deepEqual(keys(item("applications")), APPLICATION);
      assert.deepEqual(keys(item("applications").properties.details), APPLICATION_DETAILS);
      assert.deepEqual(
        keys(item("applications").properties.details.properties.fingerprint.items),
        FINGERPRINT,
      );
      assert.deepEqual(keys(item("issues")), ISSUE);
      assert.ok(item("issues").properties.details.properties.request.properties.hostname);
      assert.deepEqual(keys(item("products")), ["count", "product"]);
      assert.deepEqual(keys(item("vulnerabilities")), VULNERABILITY);
      assert.deepEqual(keys(item("connections")), ["count", "hosts", "kinds", "name", "used_by"]);
      for (const path of PATHS)
        assert.ok(
          doc.paths[`/api/collections/{collection_name}/${path}`].get.parameters.some(
            (p: { name: string }) => p.name === "limit",
          ),
        );
    });

    describe("after a run", () => {
      let applications: Item[];
      let issues: Item[];

      before(async () => {
        const id = await force(t, "lab");
        // The whole lab, templates included, on a shared 2-core machine: more than waitForRun's 15 s.
        const run = await waitFor(
          async () => {
            const current = await getRun(t, "lab", id);
            return ["finished", "failed"].includes(current.status) ? current : undefined;
          },
          `run ${id} of lab to finish`,
          90_000,
        );
        assert.equal(run.status, "finished", JSON.stringify(run));
        applications = await read("applications");
        issues = await read("issues");
      });

      test("every web application of the lab, by address and by each name resolving to it, and no other", () => {
        // Hosts whose web truth the lab declares; others (if a world adds some) are not judged here.
        const known = new Set(truth.applications.map((app) => `${app.ip}:${app.port}`));
        const found = applications.filter((app) =>
          known.has(`${app.details.ip_address}:${parseDecimalExponent(app.details.port)}`),
        );
        assert.deepEqual(found.map((app) => app.name).sort(), expected.map((app) => app.name).sort());
        assert.equal(new Set(applications.map((app) => app.name)).size, applications.length, "each once");
        const globex = expected.filter((app) => app.zone === "globex.test");
        assert.ok(globex.length >= 7, "the web world's applications are in the truth");
      });

      test("name-based virtual hosts on one address answer as different applications", () => {
        const byName = new Map(applications.map((app) => [app.name, app]));
        const www = byName.get("http://www.globex.test:80");
        const portal = byName.get("http://portal.globex.test:80");
        const address = byName.get(`http://${www.details.ip_address}:80`);
        assert.equal(www.details.ip_address, portal.details.ip_address);
        assert.deepEqual(
          [www, portal, address].map((app) => app.details.title),
          ["Globex Corporation", "Globex Employee Portal", "Welcome to nginx!"],
        );
        assert.ok(portal.details.headers.includes("server: Microsoft-IIS/10.0"));
        assert.ok(www.details.headers.includes("server: nginx"));
      });

      test("each application's details: what was served, its products with CPEs, where it sits", () => {
        const byName = new Map(applications.map((app) => [app.name, app]));
        const hostIds = new Map<string, number>();
        for (const want of expected) {
          const app = byName.get(want.name);
          const d = app.details;
          assert.equal(d.code, "200", want.name);
          assert.equal(d.title, want.title, want.name);
          assert.equal(d.service, want.scheme);
          assert.equal(parseDecimalExponent(d.port), want.port);
          assert.equal(d.ip_address, want.ip);
          assert.equal(new URL(d.uri).hostname, want.host);
          assert.equal(d.protocol, "HTTP/1.1");
          assert.equal(d.scoped, true);
          assert.equal(d.net_name, "Loopback");
          assert.equal(d.asn, "");
          assert.equal(d.net_country_code, "");
          assert.equal(app.organization, "", "special ranges have no owner");
          const hostId = assertDecimalExponent(d.host_id, "host_id");
          assert.ok(hostId >= 1);
          assert.equal(hostIds.get(want.ip) ?? hostId, hostId, "one host id per address");
          hostIds.set(want.ip, hostId);

          const fingerprints = d.fingerprint as Item[];
          for (const product of want.products) {
            const seen = fingerprints.find((f) => f.product === product.name);
            assert.ok(seen, `${want.name}: ${product.name}`);
            assert.equal(seen.cpe, product.cpe, `${want.name}: ${product.name} CPE`);
            assert.deepEqual(seen.vulns.map((v: Item) => v.cve).sort(), [...product.cves].sort());
            assert.equal(seen.issue, product.cves.length > 0);
            assert.ok(
              d.products.some((pair: string[]) => pair[0] === product.name && pair[1] === product.version),
              `${want.name}: products pair of ${product.name}`,
            );
          }
          for (const seen of fingerprints)
            if (seen.match_type !== "implied")
              assert.ok(
                want.products.some((product) => product.name === seen.product),
                `${want.name}: ${seen.product} (${seen.match_details}) is not there`,
              );
          for (const party of want.thirdParties) assert.ok(d.request_hosts.includes(party.host));
          if (want.thirdParties.some((party) => party.kind === "script"))
            assert.ok(d.scripts.includes("https://cdn.thirdparty.test/app.js"));
        }
        assert.ok(new Set(hostIds.values()).size > 1, "addresses have their own host ids");
      });

      test("field by field, every application has the spec's types and formats", () => {
        assert.ok(applications.length > 0);
        for (const app of applications) {
          assert.deepEqual(Object.keys(app).sort(), APPLICATION);
          assert.deepEqual(Object.keys(app.details).sort(), APPLICATION_DETAILS);
          assert.match(app.first_seen, TIMESTAMP);
          assert.match(app.last_seen, TIMESTAMP);
          assertDecimalExponent(app.alias_group, "alias_group");
          assert.match(app.name, /^https?:\/\/[^/]+:\d+$/);
          assert.equal(typeof app.organization, "string");
          assert.ok(app.ancestors.length > 0, "an application is reached from a seed");
          assert.deepEqual(app.ancestors[0], {
            name: app.ancestors[0].name,
            type: "Service::Entity::Domain",
          });
          for (const ancestor of app.ancestors) assert.match(ancestor.type, /^Service::Entity::\w+$/);
          assert.ok(app.task_results.length > 0);
          for (const result of app.task_results) {
            assert.deepEqual(Object.keys(result).sort(), [
              "depth",
              "entity_name",
              "entity_type",
              "name",
              "task",
            ]);
            assert.equal(result.task, "http");
            assert.equal(result.entity_type, "Service::Entity::NetworkService");
            assertDecimalExponent(result.depth, "depth");
          }
          const d = app.details;
          for (const field of ["code", "title", "cookies", "protocol", "net_name", "ip_address", "uri"])
            assert.equal(typeof d[field], "string", field);
          for (const field of ["service", "net_country_code", "asn", "response_data_hash"])
            assert.equal(typeof d[field], "string", field);
          for (const field of ["cloud_hosted", "api_endpoint", "scoped", "forms"])
            assert.equal(typeof d[field], "boolean", field);
          for (const field of ["cloud_providers", "scripts", "redirect_chain", "headers", "request_hosts"])
            assert.ok(strings(d[field]), field);
          assert.match(d.code, /^\d{3}$/);
          assert.match(d.response_data_hash, /^[0-9a-f]{64}$/);
          assertDecimalExponent(d.port, "port");
          assertDecimalExponent(d.host_id, "host_id");
          for (const header of d.headers) assert.match(header, /^[a-z0-9-]+: /);
          assert.ok(d.products.every((pair: unknown) => strings(pair) && (pair as string[]).length === 2));
          for (const check of d.content) {
            assert.equal(typeof check.name, "string");
            assert.equal(check.type, "content");
            assert.equal(typeof check.result, "boolean");
          }
          for (const fingerprint of d.fingerprint) {
            assert.deepEqual(Object.keys(fingerprint).sort(), FINGERPRINT);
            assert.equal(fingerprint.type, "fingerprint");
            for (const field of ["issue", "inference"]) assert.equal(typeof fingerprint[field], "boolean");
            for (const field of ["product", "vendor", "cpe", "match_type", "match_details"])
              assert.equal(typeof fingerprint[field], "string");
            assert.ok(strings(fingerprint.tags));
            assert.ok(Array.isArray(fingerprint.vulns));
            if (fingerprint.cpe) assert.match(fingerprint.cpe, /^cpe:2\.3:[aho]:/);
          }
        }
      });

      test("every planted weakness raises its issue on its application, and nothing else is raised there", () => {
        for (const want of expected) {
          const raised = issues
            .filter(
              (issue) => issue.entity_type === "Service::Entity::Uri" && issue.entity_name === want.name,
            )
            .map((issue) => issue.name)
            .sort();
          assert.deepEqual(raised, want.issues, want.name);
        }
        const clean = expected.filter((app) => app.issues.length === 0 && app.zone === "globex.test");
        assert.ok(clean.length >= 3, "the lab has clean applications");
        const planted = new Set(expected.flatMap((app) => app.issues));
        for (const name of [
          "directory_listing",
          "exposed_git_repository",
          "missing_hsts_header",
          "insecure_cookie",
          "login_form_without_tls",
          "server_version_disclosure",
        ])
          assert.ok(planted.has(name), `the lab plants ${name}`);
      });

      test("web issues carry their proof", () => {
        const on = (application: string, name: string) => {
          const found = issues.find((issue) => issue.entity_name === application && issue.name === name);
          assert.ok(found, `${name} on ${application}`);
          return found.details;
        };
        for (const issue of issues.filter(
          (i) => i.entity_type === "Service::Entity::Uri" && i.confidence === "confirmed",
        )) {
          const { request, uri, status } = issue.details;
          const host = new URL(issue.entity_name).hostname;
          assert.equal(request.method, "GET");
          assert.equal(new URL(request.url).hostname, host);
          assert.equal(request.hostname, host);
          assert.equal(typeof request.headers["user-agent"], "string");
          assert.equal(uri, request.url);
          assert.equal(status, "200");
        }
        const proofs: Array<[string, string, string, unknown]> = [
          [
            "http://legacy.globex.test:80",
            "exposed_git_repository",
            "uri",
            "http://legacy.globex.test/.git/HEAD",
          ],
          ["http://legacy.globex.test:80", "exposed_git_repository", "head", "ref: refs/heads/master"],
          ["http://legacy.globex.test:80", "directory_listing", "uri", "http://legacy.globex.test/"],
          [
            "http://legacy.globex.test:80",
            "server_version_disclosure",
            "headers_disclosed",
            ["server: Apache/2.4.49 (Unix)"],
          ],
          ["https://shop.globex.test:443", "insecure_cookie", "cookie", "cart_id"],
          ["https://shop.globex.test:443", "insecure_cookie", "missing", ["Secure", "HttpOnly"]],
          ["https://shop.globex.test:443", "missing_hsts_header", "uri", "https://shop.globex.test/"],
          [
            "http://blog.globex.test:80",
            "login_form_without_tls",
            "insecure_resource_url",
            "http://blog.globex.test/wp-login.php",
          ],
          [
            "http://portal.globex.test:80",
            "login_form_without_tls",
            "insecure_resource_url",
            "http://portal.globex.test/Account/Login.aspx",
          ],
        ];
        for (const [application, name, field, value] of proofs)
          assert.deepEqual(on(application, name)[field], value, `${name} on ${application}: ${field}`);
      });

      test("CVEs inferred from product versions are potential issues naming the product", () => {
        const inferred = issues.filter((issue) => issue.name.startsWith("inferred_cve_"));
        assert.ok(inferred.length > 0);
        for (const issue of inferred) {
          assert.match(issue.name, /^inferred_cve_\d{4}_\d{4,}$/);
          assert.equal(issue.confidence, "potential");
          assert.equal(issue.details.category, "vulnerability");
          assert.equal(inferredCveIssue(issue.details.cve), issue.name);
          const { v3, v2 } = seedScores(issue.details.cve);
          const score = v3 ?? v2 ?? 0;
          const severity = score >= 9 ? 1 : score >= 7 ? 2 : score >= 4 ? 3 : 4;
          assert.equal(parseDecimalExponent(issue.severity), severity, issue.details.cve);
          assert.match(issue.details.affected_software[0].cpe, /^cpe:2\.3:a:/);
        }
        const apache = inferred.find(
          (issue) =>
            issue.entity_name === "http://legacy.globex.test:80" && issue.name === "inferred_cve_2021_41773",
        );
        assert.equal(
          apache.details.affected_software[0].cpe,
          "cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*",
        );
        assert.equal(apache.details.exploited_in_the_wild, true);
        // Services: the CVEs of their banners' products, and only those.
        for (const { service, products } of truth.serviceProducts) {
          // Exposures proven on the same services (a reachable database) are the exposure tests' to check.
          const raised = issues
            .filter((issue) => issue.entity_name === service && issue.name.startsWith("inferred_cve_"))
            .map((issue) => issue.name);
          assert.deepEqual(
            raised.sort(),
            products.flatMap((p) => p.cves.map(inferredCveIssue)).sort(),
            service,
          );
        }
      });

      test("DNS, mail and TLS weaknesses are issues too, both ways", () => {
        const has = (name: string, entity: string) =>
          issues.some((issue) => issue.name === name && issue.entity_name === entity);
        for (const { name } of truth.danglingCnames) assert.ok(has("dns_dangling_cname", name), name);
        const zones = truth.zones.filter((zone) => !zone.reverse && LAB_DOMAINS.includes(zone.name));
        for (const zone of zones) {
          const txt = (owner: string) =>
            zone.records.filter((r) => r.type === "TXT" && r.name === owner).map((r) => String(r.data));
          assert.equal(has("dns_zone_transfer_allowed", zone.name), zone.axfr, zone.name);
          assert.equal(
            has("email_spf_missing", zone.name),
            !txt(zone.name).some((v) => v.startsWith("v=spf1")),
          );
          assert.equal(
            has("email_dmarc_missing", zone.name),
            txt(`_dmarc.${zone.name}`).length === 0,
            zone.name,
          );
        }
        for (const certificate of truth.certificates) {
          const service = `${certificate.endpoint}/tcp`;
          assert.equal(has("tls_certificate_expired", service), certificate.expired, service);
          assert.equal(has("tls_certificate_self_signed", service), certificate.selfSigned, service);
        }
        const dangling = issues.find((issue) => issue.name === "dns_dangling_cname");
        assert.equal(dangling.entity_type, "Service::Entity::DnsRecord");
        assert.equal(dangling.details.target, "acme-legacy.cloudapp.test");
      });

      test("the clean zone and clean hosts raise nothing at all", () => {
        const cleanHosts = truth.hosts.filter((host) =>
          host.names.some((name) => ["status.globex.test", "docs.globex.test"].includes(name)),
        );
        assert.equal(cleanHosts.length, 2);
        for (const issue of issues) {
          const entity = issue.entity_name as string;
          assert.ok(
            !(entity === "globex.test" || entity.endsWith(".globex.test")),
            `${issue.name} on ${entity}`,
          );
          for (const host of cleanHosts)
            assert.ok(
              ![host.ip, ...host.names].some(
                (name) => entity.includes(`//${name}:`) || entity.startsWith(`${name}:`),
              ),
              `${issue.name} on clean ${entity}`,
            );
        }
      });

      test("field by field, every issue has the spec's types and formats", () => {
        for (const issue of issues) {
          assert.deepEqual(Object.keys(issue).sort(), ISSUE);
          assert.match(issue.id, /^\d+$/);
          for (const field of ["name", "pretty_name", "entity_name", "organization", "description"])
            assert.equal(typeof issue[field], "string", field);
          assert.match(issue.entity_type, /^Service::Entity::\w+$/);
          assert.match(issue.first_seen, TIMESTAMP);
          assert.match(issue.last_seen, TIMESTAMP);
          assert.ok(
            assertDecimalExponent(issue.alias_group_id, "alias_group_id") >= 1,
            "its entity is known",
          );
          const severity = assertDecimalExponent(issue.severity, "severity");
          assert.ok(severity >= 1 && severity <= 5);
          assert.ok(["confirmed", "potential"].includes(issue.confidence));
          assert.equal(issue.scoped, true);
          const d = issue.details;
          assert.equal(d.name, issue.name);
          assert.equal(d.pretty_name, issue.pretty_name);
          assert.equal(d.severity, issue.severity);
          assert.equal(d.description, issue.description);
          for (const field of ["remediation", "category"]) assert.equal(typeof d[field], "string");
          assert.ok(d.references.length > 0);
          for (const reference of d.references) {
            assert.deepEqual(Object.keys(reference).sort(), ["type", "uri"]);
            assert.match(reference.uri, /^https?:\/\//);
          }
        }
        const severities = issues.map((issue) => parseDecimalExponent(issue.severity));
        assert.deepEqual(
          severities,
          [...severities].sort((a, b) => a - b),
          "most severe first",
        );
        assert.equal(new Set(issues.map((issue) => issue.id)).size, issues.length);
      });

      test("products: each planted product and version with how many applications and services run it", async () => {
        const products = await read("products");
        const counts = new Map<string, number>();
        const entities = [
          ...expected.map((app) => app.products),
          ...truth.serviceProducts.map((service) => service.products),
        ];
        for (const list of entities)
          for (const name of new Set(list.map(productName))) counts.set(name, (counts.get(name) ?? 0) + 1);
        const found = new Map(products.map((item) => [item.product, item.count]));
        for (const [name, count] of counts) assert.equal(found.get(name), String(count), name);
        // Anything else is a product a rule infers from another (IIS → Windows Server), never one seen.
        for (const item of products) {
          assert.deepEqual(Object.keys(item).sort(), ["count", "product"]);
          assert.match(item.count, /^[1-9]\d*$/);
          if (counts.has(item.product)) continue;
          const carriers = applications.flatMap((app) =>
            (app.details.products as string[][])
              .filter(([name, version]) => productName({ name, version }) === item.product)
              .map(([name]) => (app.details.fingerprint as Item[]).find((f) => f.product === name)),
          );
          assert.ok(carriers.length > 0 && carriers.every((f) => f.match_type === "implied"), item.product);
        }
        assert.ok(found.has("Apache HTTP Server 2.4.49"));
        assert.ok(found.has("vsftpd 2.3.4"));
        assert.ok(found.has("OpenSSH 8.5p1"));
        const counted = products.map((item) => Number(item.count));
        assert.deepEqual(
          counted,
          [...counted].sort((a, b) => b - a),
          "most common first",
        );
      });

      test("vulnerabilities: each CVE of the shipped database that a found version carries, with what it affects", async () => {
        const vulnerabilities = await read("vulnerabilities");
        const affected = new Map<string, string[]>();
        const add = (cve: string, name: string) => affected.set(cve, [...(affected.get(cve) ?? []), name]);
        for (const app of expected)
          for (const product of app.products) for (const cve of product.cves) add(cve, app.name);
        for (const { service, products } of truth.serviceProducts)
          for (const product of products) for (const cve of product.cves) add(cve, service);
        assert.deepEqual(vulnerabilities.map((v) => v.cve).sort(), [...affected.keys()].sort());
        for (const vulnerability of vulnerabilities) {
          assert.deepEqual(Object.keys(vulnerability).sort(), VULNERABILITY);
          const want = [...new Set(affected.get(vulnerability.cve))].sort();
          assert.deepEqual(vulnerability.affected, want, vulnerability.cve);
          assert.equal(vulnerability.count, want.length);
          assert.ok(Number.isInteger(vulnerability.count));
          assert.equal(vulnerability.shortname, vulnerability.cve.toLowerCase().replace(/-/g, "_"));
          const cve = SEED_CVES.get(vulnerability.cve);
          assert.equal(vulnerability.description, cve.descriptions[0].value);
          assert.match(vulnerability.cwe, /^CWE-\d+/);
          const { v3, v2 } = seedScores(vulnerability.cve);
          assert.equal(vulnerability.cvss_v3_score, v3);
          assert.equal(vulnerability.cvss_v2_score, v2 ?? 0);
          assert.equal(vulnerability.score, v3 ?? v2);
          assert.equal(typeof vulnerability.name, "string");
          if (cve.cisaExploitAdd) {
            assert.equal(vulnerability.exploits.length, 1);
            assert.equal(vulnerability.exploits[0].source, "CISA KEV");
            assert.equal(vulnerability.exploits[0].date_added, cve.cisaExploitAdd);
            assert.equal(vulnerability.name, cve.cisaVulnerabilityName);
          } else assert.deepEqual(vulnerability.exploits, []);
        }
        const apache = vulnerabilities.find((v) => v.cve === "CVE-2021-41773");
        assert.ok(apache.affected.includes("http://legacy.globex.test:80"));
        assert.ok(
          apache.affected.some((name: string) => name.startsWith("http://") && name.endsWith(":8080")),
        );
      });

      test("the CDN jQuery is jQuery 3.4.1 with its CVEs and KEV flag; jQuery UI is read from a banner", async () => {
        const blog = applications.find((app) => app.name === "http://blog.globex.test:80")!;
        const fingerprints = blog.details.fingerprint as Item[];
        const jquery = fingerprints.find((f) => f.product === "jQuery")!;
        assert.equal(jquery.cpe, "cpe:2.3:a:jquery:jquery:3.4.1:*:*:*:*:*:*:*");
        assert.equal(jquery.match_type, "script_src");
        assert.match(jquery.match_details, /cdn\.jsdelivr\.net\/npm\/jquery@3\.4\.1\//);
        assert.deepEqual(jquery.vulns.map((v: Item) => [v.cve, v.kev]).sort(), [
          ["CVE-2020-11022", false],
          ["CVE-2020-11023", true],
        ]);
        const ui = fingerprints.find((f) => f.product === "jQuery UI")!;
        assert.equal(ui.cpe, "cpe:2.3:a:jquery:jquery_ui:1.12.1:*:*:*:*:*:*:*");
        assert.equal(ui.match_type, "script_banner");
        const products = (await read("products")).map((item) => item.product);
        assert.ok(products.includes("jQuery 3.4.1"));
        assert.ok(products.includes("jQuery UI 1.12.1"));
        const kev = (await read("vulnerabilities")).find((v) => v.cve === "CVE-2020-11023")!;
        assert.ok(kev.affected.includes("http://blog.globex.test:80"));
        assert.equal(kev.exploits[0].source, "CISA KEV");
        assert.equal(kev.name, "JQuery Cross-Site Scripting (XSS) Vulnerability");
        const issue = issues.find(
          (i) => i.name === "inferred_cve_2020_11023" && i.entity_name === "http://blog.globex.test:80",
        );
        assert.ok(issue, "the inferred CVE issue on the blog");
      });

      test("connections: the third parties the applications load from, by registrable domain", async () => {
        const all = await read("connections");
        // What the collection's names point at (world.ts plants them): CNAMEs into a cloud provider's
        // zone, and the mail provider acme.test's SPF policy includes, with the one that includes.
        const NAME_KINDS = ["cname", "mail", "spf", "dns"];
        const ofNames = all.filter((c) => c.kinds.every((kind: string) => NAME_KINDS.includes(kind)));
        assert.deepEqual(ofNames.map((c) => [c.name, c.kinds, c.hosts, c.used_by]).sort(), [
          [
            "cloudapp.test",
            ["cname"],
            ["acme-legacy.cloudapp.test", "acme-prod.cloudapp.test"],
            ["app.acme.test", "old.acme.test"],
          ],
          ["mailhost.test", ["spf"], ["_spf.mailhost.test", "_spf2.mailhost.test"], ["acme.test"]],
        ]);
        const connections = all.filter((c) => !ofNames.includes(c));
        assert.deepEqual(
          connections.sort((a, b) => a.name.localeCompare(b.name)),
          truth.connections.map((c) => ({
            name: c.name,
            kinds: c.kinds,
            hosts: c.hosts,
            count: c.usedBy.length,
            used_by: c.usedBy,
          })),
        );
        assert.deepEqual(
          truth.connections.map((c) => c.name),
          [
            "adnetwork.test",
            "crm.test",
            "fontfoundry.test",
            "jsdelivr.net",
            "thirdparty.test",
            "videohost.test",
          ],
        );
        // Decided by the run's finish with its own scope and kept with the run, not judged at reading.
        const kept = await t.server.services.store.db.selectFrom("run_connections").selectAll().execute();
        assert.equal(kept.length, 1);
        assert.deepEqual(
          (JSON.parse(kept[0].connections) as Array<{ name: string }>).map((c) => c.name).sort(),
          all.map((c) => c.name).sort(),
        );
      });

      test("limit and offset page the applications", async () => {
        const first = await t.request("GET", "/api/collections/lab/applications?limit=3&offset=2");
        assert.equal(first.headers.get("x-total-count"), String(applications.length));
        assert.deepEqual(first.body.result, applications.slice(2, 5));
        assert.equal(
          first.headers.get("link"),
          '</api/collections/lab/applications?limit=3&offset=5>; rel="next"',
        );
        const issuesPage = await t.request("GET", "/api/collections/lab/issues?limit=4&offset=1");
        assert.equal(issuesPage.headers.get("x-total-count"), String(issues.length));
        assert.deepEqual(issuesPage.body.result, issues.slice(1, 5));
      });
    });
  });
}
