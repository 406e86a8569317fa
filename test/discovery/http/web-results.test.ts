import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Value } from "typebox/value";
import { buildConnections } from "../../../src/core/connections.ts";
import type { ResultEntity } from "../../../src/core/facts.ts";
import { fingerprintHttp, toFingerprints } from "../../../src/discovery/fingerprint/fingerprint.ts";
import { ConnectionItem } from "../../../src/results/connections.ts";
import { buildProducts } from "../../../src/results/products.ts";
import { buildVulnerabilities, VulnerabilityItem } from "../../../src/results/vulnerabilities.ts";
import { openStore, type Store } from "../../../src/store/database.ts";
import { migrateToLatest } from "../../../src/store/migrate.ts";
import { VulnerabilityRepository } from "../../../src/store/vulns.ts";
import { createTestStore, type TestStore } from "../../helpers/stores.ts";

describe("web results", () => {
  let testStore: TestStore;
  let store: Store;
  let repository: VulnerabilityRepository;
  let entities: ResultEntity[];

  const application = async (name: string, server: string, extra: Record<string, unknown> = {}) => {
    const products = await toFingerprints(
      fingerprintHttp({
        url: `${name}/`,
        headers: [["server", server]],
        setCookies: [],
        body: "",
        meta: {},
        scripts: [],
      }),
      repository,
    );
    return {
      kind: "Uri",
      name,
      scoped: true,
      details: {
        fingerprint: products.map((product) => product.fingerprint),
        products: products.map((product) => [product.detection.name, product.detection.version]),
        ...extra,
      },
    };
  };

  before(async () => {
    testStore = await createTestStore("sqlite");
    store = openStore(testStore.config);
    await migrateToLatest(store);
    repository = new VulnerabilityRepository(store.db);
    entities = [
      await application("http://www.acme.test:80", "Apache/2.4.49", {
        scripts: [
          "https://cdn.jsdelivr.net/npm/jquery@3.4.1/dist/jquery.min.js",
          "http://www.acme.test/app.js",
        ],
        request_hosts: ["cdn.jsdelivr.net", "fonts.gstatic.com", "www.acme.test"],
        redirect_chain: ["http://www.acme.test/", "https://login.okta.com/start"],
      }),
      await application("https://shop.acme.test:443", "Apache/2.4.50"),
      await application("http://127.10.0.5:8080", "nginx/1.25.3"),
      {
        kind: "Domain",
        name: "acme.test",
        scoped: true,
        details: { records: { mx: ["1 aspmx.l.google.com"], ns: ["ns1.acme.test"] } },
      },
      {
        kind: "Uri",
        name: "https://out.example.org:443",
        scoped: false,
        details: { scripts: ["https://evil.example.net/x.js"] },
      },
    ];
  });
  after(async () => {
    await store.close();
    await testStore.drop();
  });

  it("counts products with their versions", () => {
    assert.deepEqual(buildProducts(entities), [
      { product: "Apache HTTP Server 2.4.49", count: "1" },
      { product: "Apache HTTP Server 2.4.50", count: "1" },
      { product: "Nginx 1.25.3", count: "1" },
    ]);
  });

  it("lists each CVE once with its scores, KEV entry and every affected application", async () => {
    const vulnerabilities = await buildVulnerabilities(entities, repository);
    for (const item of vulnerabilities) assert.ok(Value.Check(VulnerabilityItem, item), item.cve);
    assert.deepEqual(
      vulnerabilities.map((item) => [item.cve, item.count, item.affected]),
      [
        ["CVE-2021-42013", 2, ["http://www.acme.test:80", "https://shop.acme.test:443"]],
        ["CVE-2021-41773", 1, ["http://www.acme.test:80"]],
      ],
    );
    const [worst] = vulnerabilities;
    assert.equal(worst.score, 9.8);
    assert.equal(worst.cvss_v2_score, 7.5);
    assert.equal(worst.cwe, "CWE-22");
    assert.equal(worst.shortname, "cve_2021_42013");
    assert.equal(worst.name, "Apache HTTP Server Path Traversal Vulnerability");
    assert.equal(worst.exploits[0].date_added, "2021-11-03");
  });

  it("names the third parties outside the scope that the surface depends on", () => {
    const connections = buildConnections(
      entities,
      (host) => host === "acme.test" || host.endsWith(".acme.test"),
    );
    for (const item of connections) assert.ok(Value.Check(ConnectionItem, item), item.name);
    assert.deepEqual(
      connections.map((item) => [item.name, item.kinds, item.count]),
      [
        ["google.com", ["mail"], 1],
        ["gstatic.com", ["web_resource"], 1],
        ["jsdelivr.net", ["script"], 1],
        ["okta.com", ["redirect"], 1],
      ],
    );
  });

  it("tells stylesheets, frames and forms apart, and follows a name's CNAME and SPF includes out of scope", () => {
    const inScope = (host: string) => host === "acme.test" || host.endsWith(".acme.test");
    const connections = buildConnections(
      [
        {
          kind: "Uri",
          name: "https://www.acme.test:443",
          scoped: true,
          details: {
            scripts: ["https://cdn.vendor.test/app.js"],
            request_hosts: [
              "cdn.vendor.test",
              "fonts.fontfoundry.test",
              "chat.widgets.test",
              "forms.crm.test",
            ],
            resource_hosts: {
              stylesheet: ["cdn.vendor.test", "fonts.fontfoundry.test"],
              frame: ["chat.widgets.test"],
              form: ["forms.crm.test"],
            },
          },
        },
        {
          kind: "DnsRecord",
          name: "status.acme.test",
          scoped: true,
          details: { records: { cname: ["acme.statuspage.test"] } },
        },
        {
          kind: "Domain",
          name: "acme.test",
          scoped: true,
          details: { records: {}, spf_includes: ["_spf.mailhost.test", "_spf.acme.test"] },
        },
      ],
      inScope,
    );
    for (const item of connections) assert.ok(Value.Check(ConnectionItem, item), item.name);
    assert.deepEqual(
      connections.map((item) => [item.name, item.kinds, item.used_by]),
      [
        ["crm.test", ["form"], ["https://www.acme.test:443"]],
        ["fontfoundry.test", ["stylesheet"], ["https://www.acme.test:443"]],
        ["mailhost.test", ["spf"], ["acme.test"]],
        ["statuspage.test", ["cname"], ["status.acme.test"]],
        ["vendor.test", ["script", "stylesheet"], ["https://www.acme.test:443"]],
        ["widgets.test", ["frame"], ["https://www.acme.test:443"]],
      ],
    );
  });
});

describe("issues result", () => {
  it("writes a raised check in the spec's Issue shape", async () => {
    const { issueItem, IssueItem } = await import("../../../src/results/issues.ts");
    // The exposed-Git check is a template of the shipped library now.
    const { BUILT_IN_DIRECTORY, loadDirectory } = await import("../../../src/discovery/templates/library.ts");
    const { issueOfTemplate } = await import("../../../src/discovery/modules/templates.ts");
    const library = await loadDirectory(BUILT_IN_DIRECTORY, true);
    const gitHead = library.templates.find((loaded) => loaded.template.id === "git-head")!;
    const found = issueOfTemplate(gitHead, { kind: "Uri", name: "http://www.acme.test:80" }, [
      {
        request: {
          method: "GET",
          url: "http://www.acme.test/.git/HEAD",
          headers: {},
          hostname: "www.acme.test",
        },
        status: "200",
        uri: "http://www.acme.test/.git/HEAD",
        matcherNames: [],
        extracted: { head: ["ref: refs/heads/master"] },
      },
    ]);
    assert.equal(found.name, "exposed_git_repository");
    const item = issueItem({
      ...found,
      id: 7,
      entityKind: found.entity.kind,
      entityName: found.entity.name,
      scoped: true,
      firstSeen: "2026-11-22T10:00:00.000Z",
      lastSeen: "2026-11-22T10:00:00.000Z",
      aliasGroup: 3,
      organization: "",
    });
    assert.ok(Value.Check(IssueItem, item));
    assert.equal(item.severity, "0.2e1");
    assert.equal(item.entity_type, "Service::Entity::Uri");
    assert.equal(item.details.status, "200");
    assert.equal(item.details.pretty_name, "Git repository exposed");
    assert.equal(item.first_seen, "2026-11-22 10:00:00 UTC");
  });
});
