/**
 * A collection's runs with live progress: the list is polled while a run is queued or started. "Run
 * now" forces a run (the API answers the run already under way instead of starting a second one).
 */
import { useEffect, useState } from "preact/hooks";
import { collectionPath, post, sentence } from "../api.ts";
import { type Column, DataTable } from "../components/data-table.tsx";
import { Dialog } from "../components/dialog.tsx";
import { Fields } from "../components/fields.tsx";
import { Empty, ErrorNote, Loading } from "../components/notice.tsx";
import { plural } from "../format.ts";
import { ACTIVE_RUN, type Run } from "../model.ts";
import { navigate, useLocation } from "../router.ts";
import { useApi } from "../use-api.ts";

const POLL_MS = 2000;

export function RunStatus({ run }: { run: Run }) {
  return <span class={`badge status-${run.status}`}>{run.status}</span>;
}

/** One run as GET …/runs/{id} and …/notes answer it. */
interface RunNotes {
  total: number;
  kinds: Array<{ kind: string; count: number; examples: string[] }>;
}

/** One passive source in a run, as GET …/runs/{id} answers it (`sources.sources`). */
interface RunSource {
  source: string;
  queried: boolean;
  reason: string | null;
  status: string;
  requests: number;
  answered: number;
  names: number;
  in_scope: number;
  new: number;
  historical: number;
  rate_limited: number;
  failure: string | null;
}

interface RunSources {
  all_failed: boolean;
  sources: RunSource[];
}

/** Each passive source of the run: what it gave, or why it gave nothing (a failure is never "no names"). */
function SourcesTable({ sources }: { sources: RunSources }) {
  if (sources.sources.length === 0) return null;
  const asked = sources.sources.filter((source) => source.queried);
  const rows = [...asked, ...sources.sources.filter((source) => !source.queried)];
  return (
    <>
      <h3>Passive sources</h3>
      {sources.all_failed && (
        <p class="notice error" role="alert">
          Every passive source this run asked failed: its names come from DNS alone, and no names from the
          sources is not an answer.
        </p>
      )}
      <table class="sources" aria-label="Passive sources">
        <thead>
          <tr>
            <th scope="col">source</th>
            <th scope="col">status</th>
            <th scope="col">answered</th>
            <th scope="col">names</th>
            <th scope="col">in scope</th>
            <th scope="col">new</th>
            <th scope="col">no longer resolve</th>
            <th scope="col">rate-limited</th>
            <th scope="col">why</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((source) => (
            <tr key={source.source} class={`source-${source.status.replace(" ", "-")}`}>
              <th scope="row">{source.source}</th>
              <td>{source.status}</td>
              <td>{source.queried ? `${source.answered}/${source.requests}` : "—"}</td>
              <td>{source.names}</td>
              <td>{source.in_scope}</td>
              <td>{source.new}</td>
              <td>{source.historical}</td>
              <td>{source.rate_limited}</td>
              <td>{source.queried ? (source.failure ?? "") : source.reason}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

/** The run dialog: its state, its passive sources, the settings it uses, and its notes by kind with examples. */
function RunDetails({ name, run }: { name: string; run: Run }) {
  const id = encodeURIComponent(String(run.id));
  const detail = useApi<Run & { settings?: Record<string, unknown> | null }>(
    collectionPath(name, `/runs/${id}`),
  );
  const notes = useApi<RunNotes>(collectionPath(name, `/runs/${id}/notes?limit=1`));
  const shown = detail.data ?? run;
  const {
    settings,
    notes: _counts,
    sources,
    waiting,
    ...rest
  } = shown as Run & {
    settings?: Record<string, unknown> | null;
    notes?: unknown;
    sources?: RunSources;
  };
  return (
    <>
      {typeof waiting === "string" && (
        <p class="notice" role="status">
          {waiting}
        </p>
      )}
      <Fields data={rest} />
      {sources && <SourcesTable sources={sources} />}
      <h3>Notes</h3>
      {notes.loading && <Loading what="the run's notes" />}
      {notes.error && <ErrorNote error={notes.error} onRetry={() => notes.reload()} />}
      {notes.data && notes.data.total === 0 && <p class="muted">The run wrote no notes.</p>}
      {notes.data && notes.data.total > 0 && (
        <>
          <p>The run wrote {plural(notes.data.total, "note")}:</p>
          <ul class="note-kinds">
            {notes.data.kinds.map((kind) => (
              <li key={kind.kind}>
                <strong>{kind.kind}</strong>: {plural(kind.count, "note")}, for example
                <ul>
                  {kind.examples.map((example) => (
                    <li key={example}>{example}</li>
                  ))}
                </ul>
              </li>
            ))}
          </ul>
        </>
      )}
      {settings && (
        <>
          <h3>Settings it uses</h3>
          <Fields data={settings} />
        </>
      )}
    </>
  );
}

export function RunProgress({ run }: { run: Run }) {
  const total = Number(run.tasks_total ?? 0);
  const done = Number(run.tasks_done ?? 0);
  if (typeof run.waiting === "string") return <span class="muted">{run.waiting}</span>;
  if (run.status === "queued") return <span class="muted">waiting to start</span>;
  if (!Number.isFinite(total) || total <= 0) {
    return <span class="muted">{run.status === "started" ? "planning…" : "—"}</span>;
  }
  const label = `${done.toLocaleString("en")} of ${plural(total, "task")}`;
  return (
    <span class="progress">
      <progress max={total} value={done} aria-label={`Run ${run.id}: ${label}`} />
      <span>{label}</span>
    </span>
  );
}

export function RunsSection({ name, scanRate }: { name: string; scanRate?: string }) {
  const onDemand = scanRate === "on_demand";
  const runs = useApi<Run[]>(collectionPath(name, "/runs"));
  const { query } = useLocation();
  const created = query.get("created");
  const [notice, setNotice] = useState<string>();
  const [actionError, setActionError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [open, setOpen] = useState<Run>();
  const [watchUntil, setWatchUntil] = useState(0);

  const active = (runs.data ?? []).some((run) => ACTIVE_RUN.has(run.status));
  const { reload } = runs;
  // One poll after each answer while a run is live (or just after "Run now"); a hidden tab skips its turn.
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!active && Date.now() > watchUntil) return;
    const timer = setTimeout(() => {
      if (document.hidden) setTick((n) => n + 1);
      else reload(true);
    }, POLL_MS);
    return () => clearTimeout(timer);
  }, [runs.data, runs.error, active, watchUntil, reload, tick]);

  // The run started here: when it ends, say so where the user is looking.
  const [watched, setWatched] = useState<string>();
  const ended = (runs.data ?? []).find((run) => String(run.id) === watched && !ACTIVE_RUN.has(run.status));
  const base = `/collections/${encodeURIComponent(name)}`;

  const runNow = async () => {
    setBusy(true);
    setActionError(undefined);
    setNotice(undefined);
    try {
      const { id } = await post<{ id: string | number }>(collectionPath(name, "/schedule"));
      const existing = (runs.data ?? []).find(
        (run) => String(run.id) === String(id) && ACTIVE_RUN.has(run.status),
      );
      setNotice(
        existing ? `Run ${id} is already under way; it is shown below.` : `Run ${id} has been scheduled.`,
      );
      setWatched(String(id));
      setWatchUntil(Date.now() + 10_000);
      if (created !== null) navigate(`/collections/${encodeURIComponent(name)}/runs`, { replace: true });
      await reload(true);
    } catch (error) {
      setActionError(sentence(error));
    }
    setBusy(false);
  };

  const cancel = async (run: Run) => {
    setActionError(undefined);
    setWatched(undefined);
    try {
      await post(collectionPath(name, `/runs/${encodeURIComponent(String(run.id))}/cancel`));
      setNotice(`Run ${run.id} has been cancelled.`);
      await reload(true);
    } catch (error) {
      setActionError(sentence(error));
    }
  };

  const columns: Column<Run>[] = [
    {
      id: "id",
      label: "Run",
      value: (run) => Number(run.id),
      render: (run) => `Run ${run.id}`,
      numeric: true,
    },
    {
      id: "status",
      label: "Status",
      value: (run) => run.status,
      render: (run) => (
        <>
          <RunStatus run={run} />
          {run.error && <span class="run-error">{run.error}</span>}
        </>
      ),
      filter: true,
    },
    {
      id: "progress",
      label: "Progress",
      value: (run) => (Number(run.tasks_total) > 0 ? Number(run.tasks_done) / Number(run.tasks_total) : 0),
      render: (run) => <RunProgress run={run} />,
    },
    { id: "created_at", label: "Created", value: (run) => run.created_at },
    {
      id: "finished_at",
      label: "Ended",
      value: (run) => String(run.finished_at ?? ""),
      render: (run) => run.finished_at ?? <span class="muted">—</span>,
    },
    { id: "trigger", label: "Started by", value: (run) => String(run.trigger ?? ""), filter: true },
    {
      id: "priority",
      label: "Priority",
      value: (run) => Number(run.priority ?? Number.NaN),
      render: (run) => String(run.priority ?? "—"),
      numeric: true,
    },
    {
      id: "actions",
      label: "Actions",
      value: () => "",
      sortable: false,
      render: (run) =>
        ACTIVE_RUN.has(run.status) ? (
          <button type="button" class="danger small" onClick={() => cancel(run)}>
            Cancel run {run.id}
          </button>
        ) : null,
    },
  ];

  return (
    <section aria-labelledby="runs-heading">
      <h2 id="runs-heading">Runs</h2>
      {created !== null && (
        <p class="notice success" role="status">
          The collection was created with {plural(Number(created) || 0, "seed")}.{" "}
          {onDemand
            ? "It runs only when asked: run it now to discover what lies behind them."
            : "Its first automatic run starts within a minute; run it now to start at once."}
        </p>
      )}
      <div class="actions">
        <button type="button" class="primary" onClick={runNow} disabled={busy}>
          {busy ? "Scheduling…" : "Run now"}
        </button>
        {active && (
          <span class="muted" role="status">
            Updating every {POLL_MS / 1000} seconds while a run is in progress.
          </span>
        )}
      </div>
      {ended ? (
        <p class={`notice ${ended.status === "finished" ? "success" : "error"}`} role="status">
          Run {ended.id} {ended.status}
          {ended.error ? `: ${ended.error}` : "."}{" "}
          {ended.status === "finished" && (
            <>
              Its results are in the <a href={base}>overview</a> and the sections above.
            </>
          )}
        </p>
      ) : (
        notice && (
          <p class="notice" role="status">
            {notice}
          </p>
        )
      )}
      {actionError && (
        <p class="notice error" role="alert">
          {actionError}
        </p>
      )}
      {runs.loading && <Loading what="runs" />}
      {runs.error && <ErrorNote error={runs.error} onRetry={() => runs.reload()} />}
      {runs.data && runs.data.length === 0 && (
        <Empty>
          <p>
            {onDemand
              ? "No runs yet. This collection runs only when asked: start one now."
              : "No runs yet. The first automatic run starts within a minute, or start one now."}
          </p>
        </Empty>
      )}
      {runs.data && runs.data.length > 0 && (
        <DataTable
          noun="runs"
          rows={runs.data}
          columns={columns}
          rowKey={(run) => String(run.id)}
          onOpen={setOpen}
          initialSort={{ id: "id", descending: true }}
        />
      )}
      {open && (
        <Dialog title={`Run ${open.id}`} onClose={() => setOpen(undefined)}>
          <RunDetails name={name} run={open} />
        </Dialog>
      )}
    </section>
  );
}
