/**
 * The result lists of a collection, one view per result endpoint: how its answer becomes rows, which
 * columns the table shows, and what a row opens. Shapes the dashboard does not know get generic columns.
 */

import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { describePorts } from "../../../core/scan-profile.ts";
import { collectionPath } from "../api.ts";
import { type Column, DataTable } from "../components/data-table.tsx";
import { Dialog } from "../components/dialog.tsx";
import { Empty, ErrorNote, Loading } from "../components/notice.tsx";
import { cellText, fieldLabel, kindOf, severityName, toNumber } from "../format.ts";
import type {
  Application,
  Connection,
  Domain,
  Host,
  Issue,
  NetBlock,
  Product,
  Run,
  Vulnerability,
} from "../model.ts";
import { useApi } from "../use-api.ts";
import {
  ApplicationDetails,
  ConnectionDetails,
  DomainDetails,
  EntityDetails,
  HostDetails,
  IssueDetails,
  NetBlockDetails,
  ProductDetails,
  SeverityBadge,
  VulnerabilityDetails,
} from "./details.tsx";

type Row = Record<string, unknown>;

/** A host's open ports as a person reads them: "22/tcp, 443/tcp". */
const openPorts = (host: Host) =>
  (host.ports ?? []).map((port) => `${toNumber(port.number)}/${port.protocol}`).join(", ");

/** What a view's columns may say beyond its rows. */
interface ViewContext {
  /** The ports the latest finished run scanned, as a person reads them ("the top 100"). */
  portsTried?: string;
}

/** The ports the latest finished run scanned, read only for a view that shows them. */
function usePortsTried(name: string, wanted: boolean): string | undefined {
  const runs = useApi<Run[]>(wanted ? collectionPath(name, "/runs") : undefined);
  const finished = runs.data?.find((run) => run.status === "finished");
  const run = useApi<{ settings: { ports: string } | null }>(
    finished ? collectionPath(name, `/runs/${finished.id}`) : undefined,
  );
  const ports = run.data?.settings?.ports;
  return ports ? describePorts(ports) : undefined;
}

export interface ResultView {
  tab: string;
  title: string;
  /** Plural noun for counts ("issues"). */
  noun: string;
  description: string;
  /** Query parameters of the request, e.g. "group=finding". */
  query?: string;
  /** How the answer becomes rows; default: the list itself. */
  rows?: (result: unknown) => Row[];
  columns: (rows: Row[], context: ViewContext) => Column<Row>[];
  /** Whether the columns tell a host with no open port which ports the results' run tried. */
  showsPortsTried?: boolean;
  /** Default: the row's name. */
  rowKey?: (row: Row, index: number) => string;
  /** Default: the row's name. */
  detailTitle?: (row: Row) => string;
  /** What a row opens; `collection` lets it read more of the collection's results. */
  details?: (row: Row, collection: string) => ComponentChildren;
}

/** Arrays as they are; objects keyed by name (hosts) as rows with the key under `keyName`. */
function asRows(result: unknown, keyName = "key"): Row[] {
  if (Array.isArray(result))
    return result.map((item) => (item && typeof item === "object" ? (item as Row) : { value: item }));
  if (result && typeof result === "object") {
    return Object.entries(result as Row).map(([key, value]) =>
      value && typeof value === "object" && !Array.isArray(value)
        ? { [keyName]: key, ...(value as Row) }
        : { [keyName]: key, value },
    );
  }
  return [];
}

/** What an issue is on: its entity, or the service and how many names a grouped finding was seen through. */
function foundOn(issue: Issue): string {
  const count = issue.details?.entity_count ?? 1;
  const endpoint = issue.details?.endpoint;
  return count > 1 && endpoint ? `${endpoint} — ${count} names` : String(issue.entity_name ?? "");
}

/** A yes/no field as a filterable column. */
const flag = (field: string, label: string): Column<Row> => ({
  id: field,
  label,
  value: (row) => (row[field] === undefined ? "" : row[field] ? "yes" : "no"),
  filter: true,
});

/** Listed in CISA's Known Exploited Vulnerabilities catalog (the vulnerability's `exploits`). */
const knownExploited = (row: Row) =>
  Array.isArray(row.exploits) &&
  row.exploits.some((exploit) => (exploit as { source?: string })?.source === "CISA KEV");

const seen = (field: "first_seen" | "last_seen", label: string): Column<Row> => ({
  id: field,
  label,
  value: (row) => String(row[field] ?? ""),
});

const PREFERRED = [
  "name",
  "key",
  "domain",
  "netblock",
  "cidr",
  "type",
  "organization",
  "count",
  "first_seen",
  "last_seen",
  "scoped",
];

/** Columns for a shape the dashboard has no view for: its scalar fields, the usual ones first. */
function genericColumns(rows: Row[]): Column<Row>[] {
  const keys = new Set<string>();
  for (const row of rows.slice(0, 50)) {
    for (const [key, value] of Object.entries(row))
      if (value === null || typeof value !== "object") keys.add(key);
  }
  const ordered = [
    ...PREFERRED.filter((key) => keys.has(key)),
    ...[...keys].filter((key) => !PREFERRED.includes(key)),
  ].slice(0, 7);
  if (ordered.length === 0) return [{ id: "value", label: "Value", value: (row) => JSON.stringify(row) }];
  return ordered.map((key) => {
    const numeric = rows
      .slice(0, 50)
      .every((row) => row[key] === undefined || Number.isFinite(toNumber(row[key])));
    return {
      id: key,
      label: key === "key" ? "Name" : fieldLabel(key),
      value: (row: Row) =>
        numeric ? toNumber(row[key]) : key === "type" ? kindOf(row[key]) : cellText(row[key]),
      render: (row: Row) => (key === "type" ? kindOf(row[key]) : cellText(row[key])),
      numeric,
      filter: key === "type" || typeof rows[0]?.[key] === "boolean",
    };
  });
}

function genericView(tab: string, title: string, noun: string, description: string): ResultView {
  return {
    tab,
    title,
    noun,
    description,
    columns: genericColumns,
    rowKey: (row, index) => String(row.id ?? row.name ?? row.key ?? index),
    detailTitle: (row) => String(row.name ?? row.key ?? title),
    details: (row) => <EntityDetails row={row} />,
  };
}

export const RESULT_VIEWS: ResultView[] = [
  {
    tab: "hosts",
    title: "Hosts",
    noun: "hosts",
    description: "IP addresses found, with their open ports and where they are.",
    rows: (result) => asRows(result, "ip"),
    showsPortsTried: true,
    columns: (_rows, { portsTried }) => [
      { id: "ip", label: "IP address", value: (row) => String(row.ip) },
      {
        id: "ports",
        label: "Open ports",
        value: (row) => ((row as Host).ports ?? []).length,
        text: (row) => openPorts(row as Host),
        render: (row) => openPorts(row as Host) || (portsTried ? `none open among ${portsTried}` : "none"),
        filter: true,
        filterValues: (row) => [((row as Host).ports ?? []).length > 0 ? "with open ports" : "no open port"],
        numeric: true,
      },
      { id: "net_name", label: "Network", value: (row) => String(row.net_name ?? "") },
      {
        id: "country",
        label: "Country",
        value: (row) => String((row as Host).geolocation?.country ?? ""),
        filter: true,
      },
      { id: "os", label: "OS", value: (row) => String(row.os ?? "") },
      flag("scoped", "In scope"),
      seen("last_seen", "Last seen"),
    ],
    rowKey: (row) => String(row.ip),
    detailTitle: (row) => `Host ${row.ip}`,
    details: (row, collection) => <HostDetails host={row as Host} collection={collection} />,
  },
  {
    tab: "applications",
    title: "Applications",
    noun: "applications",
    description: "Web applications on every web port, with what they answer and run.",
    columns: () => [
      { id: "name", label: "Application", value: (row) => String(row.name) },
      {
        id: "code",
        label: "Status",
        value: (row) => toNumber((row as Application).details?.code),
        render: (row) => String((row as Application).details?.code ?? ""),
        numeric: true,
        filter: true,
      },
      { id: "title", label: "Title", value: (row) => String((row as Application).details?.title ?? "") },
      {
        id: "products",
        label: "Products",
        value: (row) =>
          ((row as Application).details?.products ?? [])
            .map((product) => (Array.isArray(product) ? product.filter(Boolean).join(" ") : String(product)))
            .join(", "),
      },
      {
        id: "ip",
        label: "IP address",
        value: (row) => String((row as Application).details?.ip_address ?? ""),
      },
      {
        // An application says whether it is in scope in its details (the spec's shape), not at the top.
        id: "scoped",
        label: "In scope",
        value: (row) => {
          const scoped = (row as Application).details?.scoped ?? row.scoped;
          return scoped === undefined ? "" : scoped ? "yes" : "no";
        },
        filter: true,
      },
      seen("last_seen", "Last seen"),
    ],
    details: (row, collection) => <ApplicationDetails app={row as Application} collection={collection} />,
  },
  {
    tab: "issues",
    title: "Issues",
    noun: "issues",
    description:
      "Misconfigurations and weaknesses, most severe first; one finding seen through several names of the same service is one row.",
    // One finding seen through several names of one service is one item of the API's grouped view.
    query: "group=finding",
    columns: () => [
      { id: "pretty_name", label: "Issue", value: (row) => String(row.pretty_name || row.name) },
      {
        id: "severity",
        label: "Severity",
        value: (row) => toNumber(row.severity),
        render: (row) => <SeverityBadge severity={row.severity} />,
        filter: true,
        filterLabel: (value) => severityName(value),
      },
      {
        id: "entity",
        label: "Found on",
        // The names a group covers are searchable; the cell says the service and how many.
        value: (row) =>
          [foundOn(row as Issue), ...((row as Issue).details?.entities ?? []).map((e) => e.entity_name)].join(
            " ",
          ),
        render: (row) => foundOn(row as Issue),
      },
      { id: "kind", label: "Kind", value: (row) => kindOf(row.entity_type), filter: true },
      { id: "confidence", label: "Confidence", value: (row) => String(row.confidence ?? ""), filter: true },
      {
        id: "category",
        label: "Category",
        value: (row) => String((row as Issue).details?.category ?? ""),
        filter: true,
      },
      seen("last_seen", "Last seen"),
    ],
    rowKey: (row, index) => String(row.id ?? index),
    detailTitle: (row) => String(row.pretty_name || row.name),
    details: (row) => <IssueDetails issue={row as Issue} />,
  },
  {
    tab: "vulnerabilities",
    title: "Vulnerabilities",
    noun: "vulnerabilities",
    description: "CVEs of the products found, with the applications they affect.",
    columns: () => [
      { id: "cve", label: "CVE", value: (row) => String(row.cve || row.name) },
      {
        id: "score",
        label: "Score",
        value: (row) => toNumber((row as Vulnerability).cvss_v3_score ?? row.score),
        render: (row) => cellText((row as Vulnerability).cvss_v3_score ?? row.score),
        numeric: true,
      },
      {
        id: "kev",
        label: "Known exploited",
        value: (row) => (knownExploited(row) ? "KEV" : ""),
        render: (row) =>
          knownExploited(row) ? (
            <span class="badge severity-1" title="Listed in CISA's Known Exploited Vulnerabilities catalog">
              KEV
            </span>
          ) : (
            ""
          ),
        filter: true,
      },
      // The CVE's title (CISA's name, else the CVE and its products), never the lower-case identifier.
      {
        id: "name",
        label: "Name",
        value: (row) => String(row.name ?? ""),
        render: (row) => <span title={String(row.description ?? "")}>{String(row.name ?? "")}</span>,
      },
      { id: "cwe", label: "CWE", value: (row) => String(row.cwe ?? ""), filter: true },
      { id: "count", label: "Affected", value: (row) => toNumber(row.count), numeric: true },
    ],
    rowKey: (row, index) => String(row.cve || row.name || index),
    detailTitle: (row) => String(row.cve || row.name),
    details: (row) => <VulnerabilityDetails vulnerability={row as Vulnerability} />,
  },
  {
    tab: "products",
    title: "Products",
    noun: "products",
    description: "Software and versions fingerprinted, with how often each was seen.",
    columns: () => [
      { id: "product", label: "Product", value: (row) => String((row as unknown as Product).product) },
      { id: "count", label: "Seen on", value: (row) => toNumber(row.count), numeric: true },
    ],
    rowKey: (row) => String(row.product),
    detailTitle: (row) => String(row.product),
    details: (row, collection) => (
      <ProductDetails product={row as unknown as Product} collection={collection} />
    ),
  },
  {
    tab: "domains",
    title: "Domains",
    noun: "domains",
    description: "Domains and DNS names found from the seeds, with their records and mail policy.",
    columns: () => [
      { id: "name", label: "Name", value: (row) => String(row.name) },
      { id: "type", label: "Kind", value: (row) => kindOf(row.type), filter: true },
      { id: "addresses", label: "Addresses", value: (row) => cellText((row as Domain).addresses ?? []) },
      flag("resolves", "Resolves"),
      flag("zone_transfer", "Zone transfer"),
      flag("wildcard", "Wildcard"),
      flag("scoped", "In scope"),
      seen("last_seen", "Last seen"),
    ],
    details: (row) => <DomainDetails domain={row as Domain} />,
  },
  {
    tab: "netblocks",
    title: "Netblocks",
    noun: "netblocks",
    description: "The network blocks that hold the collection's addresses, with owner and location.",
    columns: () => [
      { id: "name", label: "Block", value: (row) => String(row.name) },
      { id: "asn", label: "ASN", value: (row) => String(row.asn ?? ""), filter: true },
      { id: "organization", label: "Organisation", value: (row) => String(row.organization ?? "") },
      {
        id: "country",
        label: "Country",
        value: (row) => String((row as NetBlock).geolocation?.country ?? ""),
        filter: true,
      },
      { id: "hosts", label: "Hosts", value: (row) => ((row as NetBlock).hosts ?? []).length, numeric: true },
      flag("scoped", "In scope"),
      seen("last_seen", "Last seen"),
    ],
    detailTitle: (row) => `Netblock ${row.name}`,
    details: (row) => <NetBlockDetails netblock={row as NetBlock} />,
  },
  {
    tab: "connections",
    title: "Connections",
    noun: "third parties",
    description:
      "Third parties the surface depends on: script and resource hosts, redirects, mail and DNS providers.",
    columns: () => [
      { id: "name", label: "Third party", value: (row) => String(row.name) },
      {
        id: "kinds",
        label: "How",
        value: (row) => cellText((row as Connection).kinds ?? []),
        filterValues: (row) => (row as Connection).kinds ?? [],
        filter: true,
      },
      { id: "hosts", label: "Hosts", value: (row) => cellText((row as Connection).hosts ?? []) },
      { id: "count", label: "Used by", value: (row) => toNumber(row.count), numeric: true },
    ],
    details: (row) => <ConnectionDetails connection={row as Connection} />,
  },
  {
    ...genericView(
      "recent",
      "Recent",
      "new entities",
      "What the latest finished run saw for the first time.",
    ),
    columns: () => [
      { id: "name", label: "Entity", value: (row) => String(row.name) },
      { id: "type", label: "Kind", value: (row) => kindOf(row.type), filter: true },
      seen("first_seen", "First seen"),
      seen("last_seen", "Last seen"),
      flag("scoped", "In scope"),
    ],
  },
];

export function ResultSection({ name, tab }: { name: string; tab: string }) {
  const view = RESULT_VIEWS.find((v) => v.tab === tab)!;
  const resource = useApi<unknown>(collectionPath(name, `/${view.tab}${view.query ? `?${view.query}` : ""}`));
  const [open, setOpen] = useState<Row>();
  const portsTried = usePortsTried(name, view.showsPortsTried === true);
  const rows = resource.data === undefined ? [] : (view.rows ?? asRows)(resource.data);
  return (
    <section aria-labelledby="result-heading">
      <h2 id="result-heading">{view.title}</h2>
      <p class="lead">{view.description}</p>
      {resource.loading && <Loading what={view.noun} />}
      {resource.error && <ErrorNote error={resource.error} onRetry={() => resource.reload()} />}
      {resource.data !== undefined && rows.length === 0 && (
        <Empty>
          <p>
            No {view.noun} yet. Results come from the latest finished run;{" "}
            <a href={`/collections/${encodeURIComponent(name)}/runs`}>see the runs</a>.
          </p>
        </Empty>
      )}
      {rows.length > 0 && (
        <DataTable
          key={view.tab}
          noun={view.noun}
          rows={rows}
          columns={view.columns(rows, { portsTried })}
          inUrl
          rowKey={view.rowKey ?? ((row, index) => String(row.name ?? index))}
          onOpen={view.details ? setOpen : undefined}
          initialSort={view.tab === "issues" ? { id: "severity" } : undefined}
        />
      )}
      {open && view.details && (
        <Dialog
          title={view.detailTitle?.(open) ?? String(open.name ?? view.title)}
          onClose={() => setOpen(undefined)}
        >
          {view.details(open, name)}
        </Dialog>
      )}
    </section>
  );
}
