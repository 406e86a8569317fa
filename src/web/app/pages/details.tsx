/** What a result row opens: an application's HTTP picture, an issue's proof and fix, a host, a CVE. */
import type { ComponentChildren } from "preact";
import { collectionPath } from "../api.ts";
import { Fields, Section, Value } from "../components/fields.tsx";
import { ErrorNote, Loading } from "../components/notice.tsx";
import { ProvenanceGraph } from "../components/provenance.tsx";
import { SimpleTable } from "../components/simple-table.tsx";
import { kindOf, severityName, toNumber } from "../format.ts";
import type {
  Application,
  Connection,
  Domain,
  Entity,
  Host,
  Issue,
  NetBlock,
  Product,
  ServiceRow,
  Vulnerability,
} from "../model.ts";
import { useApi } from "../use-api.ts";

export function SeverityBadge({ severity }: { severity: unknown }) {
  const level = toNumber(severity);
  return (
    <span class={`badge severity-${Number.isFinite(level) ? level : "unknown"}`}>
      {severityName(severity)}
    </span>
  );
}

function Seen({ row }: { row: { first_seen?: string; last_seen?: string } }) {
  if (!row.first_seen && !row.last_seen) return null;
  return (
    <p class="meta">
      First seen {row.first_seen ?? "—"} · last seen {row.last_seen ?? "—"}
    </p>
  );
}

function HowReached({ entity }: { entity: Entity }) {
  if (!entity.ancestors?.length && !entity.task_results?.length) return null;
  return (
    <Section title="How it was reached">
      <ProvenanceGraph entity={entity} ancestors={entity.ancestors} taskResults={entity.task_results} />
    </Section>
  );
}

function List({
  items,
  ordered,
  empty,
}: {
  items: unknown[] | undefined;
  ordered?: boolean;
  empty: string;
}): ComponentChildren {
  if (!items || items.length === 0) return <p class="muted">{empty}</p>;
  const children = items.map((item, index) => (
    <li key={index}>
      <Value value={item} />
    </li>
  ));
  return ordered ? <ol class="values">{children}</ol> : <ul class="values">{children}</ul>;
}

/** The fields no section above showed, without the basics every entity has. */
function OtherDetails({ data, shown }: { data: object; shown: string[] }) {
  return (
    <Section title="Other details">
      <Fields data={data as Record<string, unknown>} skip={[...shown, ...ENTITY_BASICS]} />
    </Section>
  );
}

const ENTITY_BASICS = ["name", "type", "ancestors", "task_results", "first_seen", "last_seen"];

function splitHeader(line: string): [string, string] {
  const colon = line.indexOf(":");
  return colon < 0 ? [line, ""] : [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
}

const APPLICATION_SHOWN = [
  "code",
  "title",
  "uri",
  "ip_address",
  "port",
  "service",
  "protocol",
  "headers",
  "redirect_chain",
  "fingerprint",
  "certificate",
  "cookies",
  "scripts",
  "request_hosts",
  "content",
  "products",
];

/** The certificates the collection's domains result names for a host name (applications do not carry one). */
function useCertificatesOf(collection: string, hostname: string | undefined): string[] {
  const domains = useApi<Domain[]>(hostname ? collectionPath(collection, "/domains") : undefined);
  return (domains.data ?? []).find((domain) => domain.name === hostname)?.certificates ?? [];
}

function hostnameOf(uri: string): string | undefined {
  try {
    const host = new URL(uri).hostname;
    return /^[\d.]+$|^\[/.test(host) ? undefined : host;
  } catch {
    return undefined;
  }
}

/**
 * The API's chain lists the addresses that redirected (and, last, a target on another host, which is not
 * followed); the page that answered is the application's `uri`, shown at the end when it is not there.
 */
function RedirectChain({ chain, final }: { chain: string[] | undefined; final: string | undefined }) {
  if (!chain || chain.length === 0) return <p class="muted">No redirects.</p>;
  const answered = final && !chain.includes(final) ? final : undefined;
  return (
    <ol class="values redirect-chain">
      {chain.map((url, index) => (
        <li key={index}>
          <Value value={url} />
          {!answered && index === chain.length - 1 && (
            <span class="muted"> (on another host, not followed)</span>
          )}
        </li>
      ))}
      {answered && (
        <li>
          <Value value={answered} />
          <span class="muted"> (answered)</span>
        </li>
      )}
    </ol>
  );
}

export function ApplicationDetails({ app, collection }: { app: Application; collection: string }) {
  const d = app.details ?? {};
  const plainHttp = String(d.uri ?? app.name).startsWith("http:");
  const named = useCertificatesOf(collection, d.certificate || plainHttp ? undefined : hostnameOf(app.name));
  const certificates = [
    ...(app.ancestors ?? []).filter((a) => kindOf(a.type) === "SslCertificate").map((a) => a.name),
    ...named,
  ].filter((name, index, all) => all.indexOf(name) === index);
  return (
    <>
      <Seen row={app} />
      <dl class="fields summary">
        <div class="field">
          <dt>Status</dt>
          <dd>{d.code ? `HTTP ${d.code}` : "—"}</dd>
        </div>
        <div class="field">
          <dt>Title</dt>
          <dd>{d.title || <span class="muted">none</span>}</dd>
        </div>
        <div class="field">
          <dt>Address</dt>
          <dd>
            {d.ip_address ?? "—"}
            {d.port !== undefined ? ` port ${toNumber(d.port)}` : ""} {d.service ? `(${d.service})` : ""}
          </dd>
        </div>
        <div class="field">
          <dt>URI</dt>
          <dd>
            <Value value={d.uri ?? app.name} />
          </dd>
        </div>
      </dl>
      <Section title="Redirect chain">
        <RedirectChain chain={d.redirect_chain} final={d.uri} />
      </Section>
      <Section title="Response headers">
        <SimpleTable
          label="Response headers"
          headings={["Header", "Value"]}
          rows={(d.headers ?? []).map((line) =>
            splitHeader(line).map((part) => <code key={part}>{part}</code>),
          )}
          empty="No headers recorded."
        />
      </Section>
      <Section title="Fingerprints">
        <SimpleTable
          label="Fingerprints"
          headings={["Product", "CPE", "Match", "Known CVEs", "Tags"]}
          rows={(d.fingerprint ?? []).map((fingerprint) => [
            <>
              {[fingerprint.vendor, fingerprint.product].filter(Boolean).join(" ")}
              {fingerprint.inference ? <span class="muted"> (inferred)</span> : null}
            </>,
            <code key="cpe">{String(fingerprint.cpe ?? "")}</code>,
            [fingerprint.match_type, fingerprint.match_details].filter(Boolean).join(": "),
            Array.isArray(fingerprint.vulns) ? fingerprint.vulns.length : 0,
            Array.isArray(fingerprint.tags) ? fingerprint.tags.join(", ") : "",
          ])}
          empty="No product was fingerprinted."
        />
      </Section>
      <Section title="Certificate">
        {d.certificate ? (
          <Fields data={d.certificate} />
        ) : certificates.length > 0 ? (
          <List items={certificates} empty="" />
        ) : (
          <p class="muted">{plainHttp ? "None: served over plain HTTP." : "No certificate recorded."}</p>
        )}
      </Section>
      <Section title="Page">
        <dl class="fields">
          <div class="field">
            <dt>Cookies</dt>
            <dd>{d.cookies ? <code>{String(d.cookies)}</code> : <span class="muted">none</span>}</dd>
          </div>
          <div class="field">
            <dt>Scripts</dt>
            <dd>
              <List items={d.scripts as unknown[]} empty="none" />
            </dd>
          </div>
          <div class="field">
            <dt>Hosts it loads from</dt>
            <dd>
              <List items={d.request_hosts as unknown[]} empty="none" />
            </dd>
          </div>
          <div class="field">
            <dt>Content checks</dt>
            <dd>
              <List
                items={(d.content as Array<{ name: string; result: boolean }> | undefined)?.map(
                  (check) => `${check.name}: ${check.result ? "yes" : "no"}`,
                )}
                empty="none"
              />
            </dd>
          </div>
        </dl>
      </Section>
      <HowReached entity={{ ...app, type: app.type || "Service::Entity::Uri" }} />
      <OtherDetails data={d} shown={APPLICATION_SHOWN} />
    </>
  );
}

const ISSUE_SHOWN = [
  "request",
  "remediation",
  "references",
  "description",
  "proof",
  "severity",
  "pretty_name",
  "name",
  "category",
  "entities",
  "entity_count",
];

/** What an inferred-CVE issue says about the CVE itself, left to "Other details". */
const VULNERABILITY_FIELDS = ["cve", "cwe", "cvss_v3_score", "cvss_v2_score", "exploited_in_the_wild"];

export function IssueDetails({ issue }: { issue: Issue }) {
  const d = issue.details ?? {};
  // A finding seen through several names of one service (the issues list is grouped by finding).
  const entities = d.entities ?? [];
  const count = d.entity_count ?? 1;
  const request = d.request;
  // Checks record their evidence under names of their own (a body's head, a cookie, the TXT records
  // queried, what matched a banner…): everything but the explanation and the CVE's metadata is proof.
  const proofFields = Object.fromEntries(
    Object.entries(d).filter(
      ([key, value]) =>
        !ISSUE_SHOWN.includes(key) &&
        !VULNERABILITY_FIELDS.includes(key) &&
        value !== undefined &&
        value !== "",
    ),
  );
  return (
    <>
      <p class="issue-head">
        <SeverityBadge severity={issue.severity} /> <span class="badge">{issue.confidence}</span>{" "}
        {d.category && <span class="badge">{String(d.category)}</span>}
      </p>
      <p>
        {count > 1 && d.endpoint ? (
          <>
            On the service <code>{d.endpoint}</code>, seen through {count} names
          </>
        ) : (
          <>
            On {kindOf(issue.entity_type)} <code>{issue.entity_name}</code>
          </>
        )}
        {issue.scoped === false ? " (outside the collection's scope)" : ""}.
      </p>
      {count > 1 && (
        <Section title={`Seen through ${count} names of ${String(d.endpoint ?? "one service")}`}>
          <ul class="values">
            {entities.map((entity) => (
              <li key={`${entity.entity_type} ${entity.entity_name}`}>
                <code>{entity.entity_name}</code>
              </li>
            ))}
          </ul>
          {count > entities.length && (
            <p class="muted">
              and {(count - entities.length).toLocaleString("en")} more: the issues list without grouping has
              each of them.
            </p>
          )}
        </Section>
      )}
      <Seen row={issue} />
      <Section title="What it is">
        <p>
          {issue.description || String(d.description ?? "") || <span class="muted">No description.</span>}
        </p>
      </Section>
      <Section title="Proof">
        {request && (
          <div class="proof">
            <p>
              <code>
                {request.method ?? "GET"} {request.url ?? ""}
              </code>
            </p>
            {request.headers && Object.keys(request.headers).length > 0 && (
              <pre>
                {Object.entries(request.headers)
                  .map(([header, value]) => `${header}: ${value}`)
                  .join("\n")}
              </pre>
            )}
          </div>
        )}
        {Object.keys(proofFields).length > 0 ? (
          <Fields data={proofFields} />
        ) : (
          !request && <p class="muted">No proof recorded.</p>
        )}
      </Section>
      <Section title="Remediation">
        <p>{d.remediation ? String(d.remediation) : <span class="muted">No remediation given.</span>}</p>
      </Section>
      <Section title="References">
        {d.references && d.references.length > 0 ? (
          <ul class="values">
            {d.references.map((reference) => (
              <li key={reference.uri}>
                {reference.type && <span class="muted">{reference.type}: </span>}
                <a href={reference.uri} target="_blank" rel="noopener noreferrer">
                  {reference.uri}
                </a>
              </li>
            ))}
          </ul>
        ) : (
          <p class="muted">No references.</p>
        )}
      </Section>
      <OtherDetails data={d} shown={[...ISSUE_SHOWN, ...Object.keys(proofFields)]} />
    </>
  );
}

/** "22/tcp ssh · OpenSSH 9.2p1": a port with the service and product it answered with, when known. */
function portLabel(port: { number: string; protocol: string }, service: ServiceRow | undefined): string {
  const base = `${toNumber(port.number)}/${port.protocol}`;
  if (!service?.service || service.service === "unknown") return base;
  const product = [service.product, service.version].filter(Boolean).join(" ");
  return `${base} ${service.service}${product ? ` · ${product}` : ""}${service.tls && service.service !== "https" ? " (TLS)" : ""}`;
}

export function HostDetails({ host, collection }: { host: Host; collection?: string }) {
  const prefix = host.ip.includes(":") ? `[${host.ip}]:` : `${host.ip}:`;
  const services = useApi<ServiceRow[]>(
    collection && (host.ports ?? []).length > 0
      ? collectionPath(collection, `/services?q=${encodeURIComponent(prefix)}`)
      : undefined,
  );
  const byPort = new Map(
    (services.data ?? [])
      .filter((service) => service.address === host.ip)
      .map((service) => [`${service.port}/${service.protocol}`, service]),
  );
  return (
    <>
      <Seen row={host} />
      <Section title="Open ports">
        <List
          items={(host.ports ?? []).map((port) =>
            portLabel(port, byPort.get(`${toNumber(port.number)}/${port.protocol}`)),
          )}
          empty="No open port found."
        />
      </Section>
      <Section title="Names that resolve to it">
        <List items={host.resolutions} empty="None recorded." />
      </Section>
      <Section title="Network and location">
        <Fields
          data={{
            net_name: host.net_name,
            os: host.os,
            ...(host.geolocation ?? {}),
            scoped: host.scoped,
            hidden: host.hidden,
          }}
        />
      </Section>
      <OtherDetails
        data={host}
        shown={["ip", "ports", "resolutions", "net_name", "os", "geolocation", "scoped", "hidden"]}
      />
    </>
  );
}

export function VulnerabilityDetails({ vulnerability: v }: { vulnerability: Vulnerability }) {
  return (
    <>
      <p>
        {v.cve && (
          <a
            href={`https://nvd.nist.gov/vuln/detail/${encodeURIComponent(v.cve)}`}
            target="_blank"
            rel="noopener noreferrer"
          >
            {v.cve} at NVD
          </a>
        )}
      </p>
      <Section title="Description">
        <p>{v.description || <span class="muted">No description.</span>}</p>
      </Section>
      {(v.exploits ?? []).map((exploit, index) => {
        const kev = exploit as { source?: string; date_added?: string; due_date?: string };
        return kev.source === "CISA KEV" ? (
          <p class="notice error" key={index}>
            Known exploited: listed in CISA's Known Exploited Vulnerabilities catalog
            {kev.date_added ? ` since ${kev.date_added}` : ""}
            {kev.due_date ? `; remediation due ${kev.due_date}` : ""}.
          </p>
        ) : null;
      })}
      <dl class="fields summary">
        <div class="field">
          <dt>CVSS v3</dt>
          <dd>{v.cvss_v3_score ?? "—"}</dd>
        </div>
        <div class="field">
          <dt>CVSS v2</dt>
          <dd>{v.cvss_v2_score ?? "—"}</dd>
        </div>
        <div class="field">
          <dt>CWE</dt>
          <dd>{v.cwe || "—"}</dd>
        </div>
        <div class="field">
          <dt>Known exploits</dt>
          <dd>{v.exploits?.length ?? 0}</dd>
        </div>
      </dl>
      <Section title={`Affected applications (${v.affected?.length ?? 0})`}>
        <List items={v.affected} empty="None listed." />
      </Section>
      <OtherDetails
        data={v}
        shown={["cve", "description", "cvss_v3_score", "cvss_v2_score", "cwe", "exploits", "affected"]}
      />
    </>
  );
}

const RECORD_TYPES = ["a", "aaaa", "cname", "mx", "ns", "txt", "soa", "caa", "srv"];

export function DomainDetails({ domain }: { domain: Domain }) {
  const records = Object.entries(domain.records ?? {})
    .filter(([, values]) => values.length > 0)
    .sort(([a], [b]) => RECORD_TYPES.indexOf(a) - RECORD_TYPES.indexOf(b));
  return (
    <>
      <p>
        <span class="badge">{kindOf(domain.type)}</span>{" "}
        {domain.resolves === false && <span class="badge">does not resolve</span>}{" "}
        {domain.name_server && <span class="badge">name server</span>}{" "}
        {domain.zone_transfer && <span class="badge severity-2">zone transfer allowed</span>}{" "}
        {domain.wildcard && <span class="badge">wildcard zone</span>}
      </p>
      <Seen row={domain} />
      <Section title="DNS records">
        <SimpleTable
          label="DNS records"
          headings={["Type", "Value"]}
          rows={records.flatMap(([type, values]) =>
            values.map((value) => [type.toUpperCase(), <code key={value}>{value}</code>]),
          )}
          empty="No records."
        />
      </Section>
      <Section title="Mail policy">
        <Fields data={{ spf: domain.spf || "none", dmarc: domain.dmarc || "none" }} />
      </Section>
      <Section title="Certificates naming it">
        <List items={domain.certificates} empty="None seen." />
      </Section>
      {domain.wildcard && (
        <Section title="Wildcard answers">
          <List items={domain.wildcard_addresses} empty="None recorded." />
        </Section>
      )}
      <HowReached entity={domain} />
      <OtherDetails data={domain} shown={["records", "spf", "dmarc", "certificates", "wildcard_addresses"]} />
    </>
  );
}

export function NetBlockDetails({ netblock }: { netblock: NetBlock }) {
  return (
    <>
      <Seen row={netblock} />
      <Section title={`Addresses of the collection in it (${netblock.hosts?.length ?? 0})`}>
        <List items={netblock.hosts} empty="None." />
      </Section>
      <Section title="Owner and location">
        <Fields
          data={{
            asn: netblock.asn,
            organization: netblock.organization,
            net_name: netblock.net_name,
            ...(netblock.geolocation ?? {}),
          }}
        />
      </Section>
      <HowReached entity={netblock} />
      <OtherDetails data={netblock} shown={["asn", "organization", "net_name", "geolocation", "hosts"]} />
    </>
  );
}

/** "name version" of an application's [name, version] product pairs, as the products result names them. */
function productNames(app: Application): string[] {
  return (app.details?.products ?? []).map((pair) =>
    Array.isArray(pair) ? pair.filter(Boolean).join(" ").trim() : String(pair),
  );
}

export function ProductDetails({ product, collection }: { product: Product; collection: string }) {
  const applications = useApi<Application[]>(collectionPath(collection, "/applications"));
  const running = (applications.data ?? [])
    .filter((app) => productNames(app).includes(product.product))
    .map((app) => app.name);
  return (
    <>
      <p>Seen on {toNumber(product.count)} of the collection's applications and services.</p>
      <Section title="Applications running it">
        {applications.error ? (
          <ErrorNote error={applications.error} />
        ) : applications.loading ? (
          <Loading what="applications" />
        ) : (
          <List
            items={running}
            empty="None of the applications; it was seen on network services (banners)."
          />
        )}
      </Section>
    </>
  );
}

const CONNECTION_KINDS: Record<string, string> = {
  script: "runs its scripts",
  stylesheet: "loads its stylesheets",
  frame: "shows its pages in frames",
  form: "posts forms to it",
  web_resource: "loads resources from it",
  redirect: "redirects to it",
  cname: "a name is an alias of its name (CNAME)",
  mail: "receives mail through it (MX)",
  spf: "lets it send the domain's mail (SPF)",
  dns: "serves DNS through it (NS)",
};

export function ConnectionDetails({ connection }: { connection: Connection }) {
  return (
    <>
      <Section title="How the surface depends on it">
        <List
          items={(connection.kinds ?? []).map((kind) => CONNECTION_KINDS[kind] ?? kind)}
          empty="Not recorded."
        />
      </Section>
      <Section title="Its hosts in use">
        <List items={connection.hosts} empty="None recorded." />
      </Section>
      <Section title={`Used by (${connection.used_by?.length ?? 0})`}>
        <List items={connection.used_by} empty="None recorded." />
      </Section>
      <OtherDetails data={connection} shown={["kinds", "hosts", "used_by", "count"]} />
    </>
  );
}

/** Any other result row: its fields, and its provenance when it has one. */
export function EntityDetails({ row }: { row: Record<string, unknown> }) {
  const entity = row as Entity;
  return (
    <>
      <Seen row={entity} />
      {typeof entity.name === "string" && typeof entity.type === "string" && <HowReached entity={entity} />}
      <Section title="Details">
        <Fields data={row} skip={["ancestors", "task_results", "first_seen", "last_seen"]} />
      </Section>
    </>
  );
}
