/** One collection: its heading, settings line, and the section chosen from its navigation. */
import { collectionPath } from "../api.ts";
import { ErrorNote, Loading } from "../components/notice.tsx";
import { plural } from "../format.ts";
import { type Collection, SCAN_RATE_LABELS } from "../model.ts";
import { Page } from "../page.tsx";
import { useApi } from "../use-api.ts";
import { OverviewSection } from "./overview.tsx";
import { RESULT_VIEWS, ResultSection } from "./results.tsx";
import { RunsSection } from "./runs.tsx";
import { SeedsSection } from "./seeds.tsx";

const SECTIONS: Array<[string, string]> = [
  ["overview", "Overview"],
  ["runs", "Runs"],
  ["seeds", "Seeds & settings"],
  ...RESULT_VIEWS.map((view): [string, string] => [view.tab, view.title]),
];

export function CollectionPage({ name, tab }: { name: string; tab: string }) {
  const collection = useApi<Collection>(collectionPath(name));
  const section = SECTIONS.find(([id]) => id === tab);
  const base = `/collections/${encodeURIComponent(name)}`;
  const data = collection.data;

  return (
    <Page title={`${section?.[1] ?? "Not found"} · ${name}`} heading={name}>
      <p class="breadcrumbs">
        <a href="/">Collections</a> / {name}
      </p>
      {data && (
        <p class="meta">
          Team {data.team_id} · {SCAN_RATE_LABELS[data.scan_rate] ?? data.scan_rate} ·{" "}
          {plural(data.seed_count, "seed")} · created {data.created_at}
        </p>
      )}
      {collection.loading && <Loading what="the collection" />}
      {collection.error && <ErrorNote error={collection.error} onRetry={() => collection.reload()} />}
      {data && (
        <>
          <nav class="sections" aria-label={`Sections of ${name}`}>
            <ul>
              {SECTIONS.map(([id, label]) => (
                <li key={id}>
                  <a
                    href={id === "overview" ? base : `${base}/${id}`}
                    aria-current={id === tab ? "page" : undefined}
                  >
                    {label}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
          <div class="section-body">
            {tab === "overview" && <OverviewSection name={name} />}
            {tab === "runs" && <RunsSection name={name} scanRate={data.scan_rate} />}
            {tab === "seeds" && <SeedsSection collection={data} onChanged={() => collection.reload(true)} />}
            {RESULT_VIEWS.some((view) => view.tab === tab) && (
              <ResultSection key={tab} name={name} tab={tab} />
            )}
            {!section && (
              <p>
                This collection has no section called <code>{tab}</code>. <a href={base}>Open its overview</a>
                .
              </p>
            )}
          </div>
        </>
      )}
    </Page>
  );
}
