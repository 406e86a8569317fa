/** Creating a collection: its name, team, scan rate and first seeds. Nothing is saved unless all is valid. */
import { useState } from "preact/hooks";
import { post } from "../api.ts";
import { ScanRateSelect } from "../components/scan-rate-select.tsx";
import { SeedInput, submitSeeds, useSeedText } from "../components/seed-input.tsx";
import type { Collection, Team } from "../model.ts";
import { Page } from "../page.tsx";
import { navigate } from "../router.ts";
import { useApi } from "../use-api.ts";

const NAME = /^[a-z0-9_.-]{1,64}$/;

/** "red — team 3, your default": a team as the team choice lists it. */
function teamLabel(team: Team): string {
  return `${team.name} — team ${team.id}${team.default ? ", your default" : ""}`;
}

export function NewCollectionPage() {
  const [name, setName] = useState("");
  const [team, setTeam] = useState("");
  const [scanRate, setScanRate] = useState<string>("auto");
  const seeds = useSeedText();
  const [error, setError] = useState<string>();
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const teams = useApi<Team[]>("/api/teams");
  const defaultTeam = teams.data?.find((entry) => entry.default);

  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setFieldErrors({});
    if (!NAME.test(name)) {
      setFieldErrors({ name: "Use 1–64 characters of a-z, 0-9, _, - and ." });
      setError("The name is not valid; nothing was saved.");
      document.getElementById("collection-name")?.focus();
      return;
    }
    setBusy(true);
    const outcome = await submitSeeds("new-seeds", seeds, (list) =>
      post<Collection>("/api/collections", {
        name,
        seeds: list,
        scan_rate: scanRate,
        // Left on the default, team_id is not sent: the API picks the default team itself.
        ...(team === "" ? {} : { team_id: Number(team) }),
      }),
    );
    setBusy(false);
    if (outcome.result) {
      navigate(
        `/collections/${encodeURIComponent(outcome.result.name)}/runs?created=${outcome.result.seed_count}`,
      );
      return;
    }
    setError(outcome.error);
    setFieldErrors(Object.fromEntries(outcome.fieldErrors.map((detail) => [detail.field, detail.message])));
  };

  return (
    <Page title="New collection">
      <p class="breadcrumbs">
        <a href="/">Collections</a> / New
      </p>
      <form class="stack" onSubmit={submit} noValidate>
        <div class="form-row">
          <label for="collection-name">Name</label>
          <input
            id="collection-name"
            value={name}
            required
            maxLength={64}
            spellcheck={false}
            autocapitalize="off"
            aria-describedby="collection-name-hint collection-name-error"
            aria-invalid={fieldErrors.name ? "true" : undefined}
            onInput={(event) => setName((event.target as HTMLInputElement).value)}
          />
          <p class="hint" id="collection-name-hint">
            1–64 characters of a-z, 0-9, _, - and . — unique in your account.
          </p>
          {fieldErrors.name && (
            <p class="field-error" id="collection-name-error">
              {fieldErrors.name}
            </p>
          )}
        </div>
        <div class="form-grid">
          <div class="form-row">
            <label for="collection-team">Team</label>
            <select
              id="collection-team"
              value={team === "" ? String(defaultTeam?.id ?? "") : team}
              disabled={teams.loading}
              aria-describedby="collection-team-hint collection-team-error"
              aria-invalid={fieldErrors.team_id ? "true" : undefined}
              onChange={(event) => {
                const chosen = (event.target as HTMLSelectElement).value;
                setTeam(chosen === String(defaultTeam?.id) ? "" : chosen);
              }}
            >
              {!defaultTeam && (
                <option value="">{teams.loading ? "Loading your teams…" : "Your default team"}</option>
              )}
              {teams.data?.map((entry) => (
                <option key={entry.id} value={String(entry.id)}>
                  {teamLabel(entry)}
                </option>
              ))}
            </select>
            <p class="hint" id="collection-team-hint">
              {teams.error
                ? `Your teams could not be listed: ${teams.error.message} The collection goes to your default team.`
                : "The team whose members will see the collection; it cannot change later."}
            </p>
            {fieldErrors.team_id && (
              <p class="field-error" id="collection-team-error">
                {fieldErrors.team_id}
              </p>
            )}
          </div>
          <div class="form-row">
            <label for="collection-rate">Scan rate</label>
            <ScanRateSelect id="collection-rate" value={scanRate} onChange={setScanRate} />
            <p class="hint">
              Automatic runs follow your account (daily when active, weekly on trial); a collection may choose
              a slower rate.
            </p>
          </div>
        </div>
        <SeedInput id="new-seeds" label="First seeds" seeds={seeds} />
        {error && (
          <p class="notice error" role="alert" id="form-error">
            {error}
          </p>
        )}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {busy ? "Creating…" : "Create collection"}
          </button>
          <a href="/">Cancel</a>
        </div>
      </form>
    </Page>
  );
}
