/** The collections of all the user's teams, each with its team, scan rate, seeds and latest run. */
import { useEffect, useState } from "preact/hooks";
import { collectionPath, get, pathSegment, sentence } from "../api.ts";
import { type Column, DataTable } from "../components/data-table.tsx";
import { Empty, ErrorNote, Loading } from "../components/notice.tsx";
import { plural } from "../format.ts";
import { type Collection, type Run, SCAN_RATE_LABELS } from "../model.ts";
import { Page } from "../page.tsx";
import { useLocation } from "../router.ts";
import { useApi } from "../use-api.ts";
import { RunStatus } from "./runs.tsx";

interface Row {
  name: string;
  collection?: Collection;
  latest?: Run;
  /** Why the collection or its runs could not be read. */
  problem?: string;
}

/** Runs `work` over `items`, a few at a time, so a long list does not flood the server. */
async function eachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function latestRun(runs: Run[]): Run | undefined {
  return [...runs].sort((a, b) => Number(b.id) - Number(a.id))[0];
}

export function CollectionsPage() {
  const names = useApi<string[]>("/api/collections");
  const { query } = useLocation();
  const deleted = query.get("deleted");
  const [rows, setRows] = useState<Row[]>([]);

  useEffect(() => {
    if (!names.data) return;
    let live = true;
    const found = new Map<string, Row>(names.data.map((name) => [name, { name }]));
    setRows([...found.values()]);
    eachLimited(names.data, 4, async (name) => {
      const row: Row = { name };
      try {
        row.collection = await get<Collection>(collectionPath(name));
      } catch (error) {
        row.problem = sentence(error);
      }
      try {
        row.latest = latestRun(await get<Run[]>(collectionPath(name, "/runs")));
      } catch {
        // Runs not readable (not offered yet by this server): the column says "—".
      }
      found.set(name, row);
      if (live) setRows([...found.values()]);
    });
    return () => {
      live = false;
    };
  }, [names.data]);

  const columns: Column<Row>[] = [
    {
      id: "name",
      label: "Name",
      value: (row) => row.name,
      render: (row) => <a href={`/collections/${pathSegment(row.name)}`}>{row.name}</a>,
    },
    { id: "team", label: "Team", value: (row) => row.collection?.team_id ?? "", filter: true, numeric: true },
    {
      id: "scan_rate",
      label: "Scan rate",
      value: (row) => row.collection?.scan_rate ?? "",
      render: (row) =>
        row.collection
          ? (SCAN_RATE_LABELS[row.collection.scan_rate] ?? row.collection.scan_rate)
          : (row.problem ?? "…"),
      filter: true,
    },
    {
      id: "seeds",
      label: "Seeds",
      value: (row) => row.collection?.seed_count ?? Number.NaN,
      render: (row) => (row.collection ? String(row.collection.seed_count) : "…"),
      numeric: true,
    },
    {
      id: "latest",
      label: "Latest run",
      value: (row) => row.latest?.created_at ?? "",
      render: (row) =>
        row.latest ? (
          <>
            <RunStatus run={row.latest} /> <span class="muted">{row.latest.created_at}</span>
          </>
        ) : (
          <span class="muted">—</span>
        ),
    },
  ];

  return (
    <Page title="Collections">
      <p class="lead">The collections of all your teams. Open one to see its runs and what was found.</p>
      {deleted !== null && (
        <p class="notice success" role="status">
          Collection {deleted} was deleted with its seeds, {plural(Number(query.get("runs")) || 0, "run")} and
          results.
        </p>
      )}
      <p>
        <a class="button primary" href="/collections/new">
          New collection
        </a>
      </p>
      {names.loading && <Loading what="your collections" />}
      {names.error && <ErrorNote error={names.error} onRetry={() => names.reload()} />}
      {names.data && names.data.length === 0 && (
        <Empty>
          <p>
            You have no collections yet. A collection holds the seeds — your domains, addresses and name
            servers — that Sightline discovers from.
          </p>
          <p>
            <a href="/collections/new">Create your first collection</a>.
          </p>
        </Empty>
      )}
      {names.data && names.data.length > 0 && (
        <DataTable noun="collections" rows={rows} columns={columns} rowKey={(row) => row.name} />
      )}
    </Page>
  );
}
