/**
 * Collections of any size built directly in the store, for result tests and the results benchmark: the
 * entities and findings a discovery run would have found, staged and merged through the real write path
 * (EntitiesRepository.stage, then finishRun), without the network. Everything is a function of the host
 * number, so a test can compute what the API must answer.
 *
 * Per host i: an IpAddress, a NetworkService on port 80 and 443 (and 22 on every other host), an
 * application (Uri) on 80 and 443 with products and CVEs from the shipped vulnerability seed, every
 * other host a DNS name resolving to it, and a NetBlock per /24. One issue per four applications.
 */
import type { Kysely } from "kysely";
import { AccountsRepository } from "../../src/store/accounts.ts";
import { CollectionsRepository } from "../../src/store/collections.ts";
import { EntitiesRepository, type Finding, type StagedEntity } from "../../src/store/entities.ts";
import type { Database } from "../../src/store/schema.ts";

export interface FixtureOptions {
  hosts: number;
  /** Hosts present in this run: a function of the host number (default: all). */
  present?: (host: number) => boolean;
  /** A suffix that changes the title of the applications of the hosts it is given for (a content change). */
  retitle?: (host: number) => string | undefined;
  /**
   * One nginx (SHARED_ADDRESS, port 443) answering for this many names, `sharedName(i)`: an application
   * per name, each with the same inferred CVE (SHARED_ISSUE) — one finding seen through many names.
   */
  sharedNames?: number;
  /** Saves the staged run as the collection's results (default: `EntitiesRepository.finishRun`, here). */
  save?: (runId: number, collectionId: number) => Promise<unknown>;
}

/** One staged sighting of `kind` `name`, scoped, at depth 1, with no details unless `extra` gives them. */
export const stagedEntity = (
  kind: string,
  name: string,
  extra: Partial<StagedEntity> = {},
): StagedEntity => ({
  kind,
  name,
  details: {},
  scoped: true,
  hidden: false,
  depth: 1,
  aliases: [],
  ancestors: [],
  ...extra,
});

export const ip = (host: number) => `10.${(host >> 16) & 255}.${(host >> 8) & 255}.${host & 255}`;
export const dnsName = (host: number) => `h${host}.corp.example`;
export const hasName = (host: number) => host % 2 === 0;
export const portsOf = (host: number) => (host % 2 === 1 ? [22, 80, 443] : [80, 443]);
export const applicationName = (host: number, port: number) =>
  `${port === 443 ? "https" : "http"}://${ip(host)}:${port}`;
export const netblockOf = (host: number) => `${ip(host).split(".").slice(0, 3).join(".")}.0/24`;

const PRODUCTS: Array<[string, string[]]> = [
  ["nginx", ["1.18.0", "1.25.3", ""]],
  ["Apache HTTP Server", ["2.4.49", "2.4.57"]],
  ["Microsoft IIS", ["10.0"]],
  ["jQuery", ["3.4.1", "1.12.4"]],
  ["WordPress", ["5.8.2"]],
  ["PHP", ["7.3.10", "8.2.1"]],
];
const FLAT_PRODUCTS = PRODUCTS.flatMap(([name, versions]) =>
  versions.map((v) => [name, v] as [string, string]),
);

/** The products of an application: two of the catalogue, by host and port. */
export const productsOfApplication = (host: number, port: number): Array<[string, string]> => {
  const first = FLAT_PRODUCTS[(host + port) % FLAT_PRODUCTS.length];
  const second = FLAT_PRODUCTS[(host * 7 + port + 3) % FLAT_PRODUCTS.length];
  return first[0] === second[0] ? [first] : [first, second];
};

/** A script every fifth host's applications load from a third party (a connection). */
export const THIRD_PARTY_SCRIPT = "https://cdn.example-cdn.net/lib.js";

export const ISSUES = [
  { name: "exposed_git_repository", pretty: "Exposed .git repository", severity: 1 },
  { name: "directory_listing", pretty: "Directory listing", severity: 3 },
  { name: "missing_hsts", pretty: "Missing HSTS header", severity: 4 },
  { name: "version_disclosure", pretty: "Version disclosure", severity: 5 },
  { name: "login_form_over_http", pretty: "Login form over HTTP", severity: 2 },
];
/** The issue of an application, if it has one (one in four applications). */
export const issueOf = (host: number, port: number) =>
  (host + port) % 4 === 0 ? ISSUES[(host + Math.floor(port / 7)) % ISSUES.length] : undefined;

export const SHARED_ADDRESS = "10.250.0.1";
export const sharedName = (index: number) =>
  `https://www${String(index).padStart(3, "0")}.shared.example:443`;
export const SHARED_ISSUE = {
  name: "inferred_cve_2021_23017",
  pretty: "nginx 1.18.0: CVE-2021-23017 (inferred from the version)",
  severity: 2,
};

/** CVE ids of the shipped vulnerability seed, one list per product version that carries any. */
async function cvesByProduct(db: Kysely<Database>): Promise<Map<string, string[]>> {
  const ids = (await db.selectFrom("vuln_cves").select("cve_id").orderBy("cve_id").limit(40).execute()).map(
    (row) => row.cve_id,
  );
  const byProduct = new Map<string, string[]>();
  FLAT_PRODUCTS.forEach(([name, version], index) => {
    if (index % 2 === 0 && ids.length > 0 && version)
      byProduct.set(`${name} ${version}`, [ids[index % ids.length], ids[(index * 3 + 1) % ids.length]]);
  });
  return byProduct;
}

function application(
  host: number,
  port: number,
  cves: Map<string, string[]>,
  titleSuffix = "",
): StagedEntity {
  const products = productsOfApplication(host, port);
  const name = applicationName(host, port);
  return {
    kind: "Uri",
    name,
    scoped: host % 10 !== 9,
    hidden: host % 25 === 24,
    depth: 3,
    aliases: [],
    ancestors: [{ name: `${ip(host)}:${port}/tcp`, type: "Service::Entity::NetworkService" }],
    taskResult: {
      name: `http:NetworkService:${ip(host)}:${port}/tcp`,
      task: "http",
      entity_type: "Service::Entity::NetworkService",
      entity_name: `${ip(host)}:${port}/tcp`,
      depth: 3,
    },
    details: {
      uri: `${name}/`,
      code: "200",
      title: `Portal ${host}${titleSuffix}`,
      headers: ["server: nginx", "content-type: text/html"],
      cookies: "",
      redirect_chain: [],
      scripts: host % 5 === 0 ? [`${name}/app.js`, THIRD_PARTY_SCRIPT] : [`${name}/app.js`],
      forms: host % 3 === 0,
      request_hosts: [ip(host)],
      content: [{ name: "directory listing", type: "content", result: false }],
      cloud_providers: [],
      cloud_hosted: false,
      api_endpoint: false,
      response_data_hash: `hash-${host}-${port}`,
      fingerprint: products.map(([product, version]) => ({
        product,
        issue: false,
        inference: false,
        vendor: product.split(" ")[0].toLowerCase(),
        vulns: (cves.get(`${product} ${version}`.trim()) ?? []).map((cve) => ({
          cve,
          cvss_v3_score: null,
          cvss_v2_score: null,
          cwe: "",
          kev: false,
        })),
        cpe: `cpe:2.3:a:${product.toLowerCase().replace(/ /g, "_")}:${version || "*"}`,
        match_type: "content_headers",
        type: "fingerprint",
        match_details: `server header "${product}"`,
        tags: ["Web servers"],
      })),
      products,
      protocol: "HTTP/1.1",
      service: port === 443 ? "https" : "http",
      port,
      ip_address: ip(host),
      hostname: null,
      net_name: "Example Net",
      asn: "AS64500",
      net_country_code: "NL",
    },
  };
}

/** What run `host` contributes: its entities and findings. */
function hostWork(host: number, cves: Map<string, string[]>, titleSuffix?: string) {
  const address = ip(host);
  const entities: StagedEntity[] = [
    {
      kind: "IpAddress",
      name: address,
      scoped: host % 10 !== 9,
      hidden: host % 25 === 24,
      depth: hasName(host) ? 2 : 0,
      aliases: hasName(host) ? [{ kind: "DnsRecord", name: dnsName(host) }] : [],
      ancestors: [],
      details: {
        resolutions: hasName(host) ? [dnsName(host)] : [],
        net_name: "Example Net",
        geolocation: {
          continent: "Europe",
          country: "Netherlands",
          country_code: "NL",
          continent_code: "EU",
        },
        os: host % 2 === 1 ? "Ubuntu" : "",
        asn: "AS64500",
        netblock: netblockOf(host),
      },
    },
  ];
  if (hasName(host))
    entities.push({
      kind: "DnsRecord",
      name: dnsName(host),
      scoped: true,
      hidden: false,
      depth: 1,
      aliases: [{ kind: "IpAddress", name: address }],
      ancestors: [{ name: "corp.example", type: "Service::Entity::Domain" }],
      details: { resolves: true, addresses: [address], records: { a: [address] } },
    });
  const findings: Finding[] = [];
  for (const port of portsOf(host)) {
    entities.push({
      kind: "NetworkService",
      name: `${address}:${port}/tcp`,
      scoped: host % 10 !== 9,
      hidden: false,
      depth: 2,
      aliases: [],
      ancestors: [{ name: address, type: "Service::Entity::IpAddress" }],
      details: {
        ip_address: address,
        port,
        protocol: "tcp",
        service: port === 22 ? "ssh" : port === 443 ? "https" : "http",
      },
    });
    if (port === 22) continue;
    entities.push(application(host, port, cves, titleSuffix));
    const issue = issueOf(host, port);
    if (issue)
      findings.push({
        name: issue.name,
        entityKind: "Uri",
        entityName: applicationName(host, port),
        prettyName: issue.pretty,
        severity: issue.severity,
        confidence: "confirmed",
        category: "web",
        description: `${issue.pretty} on ${applicationName(host, port)}.`,
        remediation: "Fix it.",
        references: [{ type: "description", uri: "https://owasp.org/" }],
        details: { uri: `${applicationName(host, port)}/`, status: "200" },
        scoped: host % 10 !== 9,
      });
  }
  return { entities, findings };
}

/** The shared nginx and its `count` names, each application with the same inferred CVE. */
function sharedWork(count: number) {
  const service = `${SHARED_ADDRESS}:443/tcp`;
  const entities: StagedEntity[] = [
    {
      kind: "NetworkService",
      name: service,
      scoped: true,
      hidden: false,
      depth: 2,
      aliases: [],
      ancestors: [],
      details: { ip_address: SHARED_ADDRESS, port: 443, protocol: "tcp", service: "https" },
    },
  ];
  const findings: Finding[] = [];
  for (let index = 0; index < count; index++) {
    const name = sharedName(index);
    entities.push({
      kind: "Uri",
      name,
      scoped: true,
      hidden: false,
      depth: 3,
      aliases: [],
      ancestors: [{ name: service, type: "Service::Entity::NetworkService" }],
      details: {
        uri: `${name}/`,
        code: "200",
        title: "Welcome to nginx!",
        port: 443,
        ip_address: SHARED_ADDRESS,
      },
    });
    findings.push({
      name: SHARED_ISSUE.name,
      entityKind: "Uri",
      entityName: name,
      prettyName: SHARED_ISSUE.pretty,
      severity: SHARED_ISSUE.severity,
      confidence: "potential",
      category: "vulnerability",
      description: "CVE-2021-23017: a DNS resolver off-by-one in nginx before 1.21.0.",
      remediation: "Upgrade nginx.",
      references: [{ type: "description", uri: "https://nvd.nist.gov/vuln/detail/CVE-2021-23017" }],
      details: { cve: "CVE-2021-23017" },
      scoped: true,
    });
  }
  return { entities, findings };
}

/** The netblocks of the hosts present. */
function netblocks(hosts: number[]): StagedEntity[] {
  const blocks = new Map<string, string[]>();
  for (const host of hosts) blocks.set(netblockOf(host), [...(blocks.get(netblockOf(host)) ?? []), ip(host)]);
  return [...blocks].map(([name, addresses]) => ({
    kind: "NetBlock",
    name,
    scoped: true,
    hidden: false,
    depth: 3,
    aliases: [],
    ancestors: [],
    details: {
      asn: "AS64500",
      organization: "Example Networks",
      net_name: "Example Net",
      geolocation: { continent: "Europe", country: "Netherlands", country_code: "NL", continent_code: "EU" },
      addresses,
    },
  }));
}

export interface FixtureCollection {
  collectionId: number;
  name: string;
}

/** A new account, team and collection (with one seed) to build runs in. */
export async function createFixtureCollection(
  db: Kysely<Database>,
  name: string,
): Promise<FixtureCollection> {
  const accounts = new AccountsRepository(db);
  const account = await accounts.createAccount(`${name}-account`, "active");
  const team = await accounts.createTeam(account.id, `${name}-team`);
  const collection = await new CollectionsRepository(db).create(account.id, team.id, name, [
    { type: "Domain", name: "corp.example" },
  ]);
  return { collectionId: collection!.id, name };
}

/**
 * One finished run of the collection that found `options.hosts` hosts (those `present`), staged in
 * task-sized batches and merged. Answers the run's id.
 */
export async function buildRun(
  db: Kysely<Database>,
  collection: FixtureCollection,
  options: FixtureOptions,
): Promise<number> {
  const now = new Date().toISOString();
  const run = await db
    .insertInto("runs")
    .values({
      collection_id: collection.collectionId,
      trigger: "forced",
      status: "started",
      priority: 1,
      created_at: now,
      started_at: now,
      updated_at: now,
      tasks_total: 0,
      tasks_done: 0,
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  // As RunsRepository.start does: the run's working tables are intact (store/working-marks.ts).
  await db.insertInto("run_working_marks").values({ run_id: run.id }).execute();
  const entities = new EntitiesRepository(db);
  const cves = await cvesByProduct(db);
  const present: number[] = [];
  for (let host = 0; host < options.hosts; host++) if (options.present?.(host) ?? true) present.push(host);
  for (let start = 0; start < present.length; start += 250) {
    const work = { entities: [] as StagedEntity[], findings: [] as Finding[], notes: [] };
    for (const host of present.slice(start, start + 250)) {
      const found = hostWork(host, cves, options.retitle?.(host));
      work.entities.push(...found.entities);
      work.findings.push(...found.findings);
    }
    await entities.stage(run.id, collection.collectionId, work);
  }
  if (options.sharedNames)
    await entities.stage(run.id, collection.collectionId, { ...sharedWork(options.sharedNames), notes: [] });
  await entities.stage(run.id, collection.collectionId, {
    entities: netblocks(present),
    findings: [],
    notes: [],
  });
  await (options.save ?? ((runId, collectionId) => entities.finishRun(runId, collectionId)))(
    run.id,
    collection.collectionId,
  );
  const finished = new Date().toISOString();
  await db
    .updateTable("runs")
    .set({ status: "finished", finished_at: finished, updated_at: finished, finishing_at: finished })
    .where("id", "=", run.id)
    .execute();
  return run.id;
}

/** How many entities a run of `hosts` hosts holds, by kind. */
export function fixtureCounts(hosts: number, present: (host: number) => boolean = () => true) {
  const counts = { IpAddress: 0, DnsRecord: 0, NetworkService: 0, Uri: 0, NetBlock: 0, issues: 0 };
  const blocks = new Set<string>();
  for (let host = 0; host < hosts; host++) {
    if (!present(host)) continue;
    counts.IpAddress++;
    if (hasName(host)) counts.DnsRecord++;
    counts.NetworkService += portsOf(host).length;
    for (const port of portsOf(host).filter((p) => p !== 22)) {
      counts.Uri++;
      if (issueOf(host, port)) counts.issues++;
    }
    blocks.add(netblockOf(host));
  }
  counts.NetBlock = blocks.size;
  return counts;
}
