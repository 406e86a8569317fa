/**
 * A collection's seeds and settings: list, add (typed, pasted or from a file), delete one or all, scan
 * rate and scan profile, and delete the collection itself (after its name is typed in a dialog).
 */
import { useState } from "preact/hooks";
import { collectionPath, del, pathSegment, post, sentence } from "../api.ts";
import { type Column, DataTable } from "../components/data-table.tsx";
import { Dialog } from "../components/dialog.tsx";
import { Empty } from "../components/notice.tsx";
import { ScanProfileForm } from "../components/scan-profile.tsx";
import { ScanRateSelect } from "../components/scan-rate-select.tsx";
import { SeedInput, submitSeeds, useSeedText } from "../components/seed-input.tsx";
import { plural } from "../format.ts";
import { type Collection, SCAN_RATE_LABELS } from "../model.ts";
import { navigate } from "../router.ts";

type Seed = Collection["seeds"][number];

const SEED_COLUMNS: Column<Seed>[] = [
  { id: "name", label: "Seed", value: (seed) => seed.name },
  { id: "type", label: "Type", value: (seed) => seed.type, filter: true },
];

/** Deleting a collection cannot be undone: the dialog asks for its name before the button works. */
function DeleteCollectionDialog({ collection, onClose }: { collection: Collection; onClose: () => void }) {
  const [typed, setTyped] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const confirmed = typed.trim() === collection.name;
  const submit = async (event: Event) => {
    event.preventDefault();
    if (!confirmed) return;
    setBusy(true);
    setError(undefined);
    try {
      const { runs_deleted } = await del<{ runs_deleted: number }>(collectionPath(collection.name));
      navigate(
        `/?deleted=${encodeURIComponent(collection.name)}&runs=${encodeURIComponent(String(runs_deleted))}`,
      );
    } catch (failure) {
      setBusy(false);
      setError(sentence(failure));
    }
  };
  return (
    <Dialog title={`Delete collection ${collection.name}`} onClose={onClose}>
      <form class="stack" onSubmit={submit}>
        <p>
          This deletes the collection, its {plural(collection.seed_count, "seed")}, every run and all results,
          and cannot be undone. A run in progress is cancelled.
        </p>
        <label for="confirm-name">Type the collection's name to confirm</label>
        <input
          id="confirm-name"
          value={typed}
          autocomplete="off"
          spellcheck={false}
          autocapitalize="off"
          onInput={(event) => setTyped((event.target as HTMLInputElement).value)}
        />
        {error && (
          <p class="notice error" role="alert">
            {error}
          </p>
        )}
        <div class="actions">
          <button type="submit" class="danger" disabled={!confirmed || busy}>
            {busy ? "Deleting…" : `Delete ${collection.name}`}
          </button>
          <button type="button" onClick={onClose}>
            Keep it
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function SeedsSection({ collection, onChanged }: { collection: Collection; onChanged: () => void }) {
  const path = collectionPath(collection.name);
  const seeds = useSeedText();
  const [addError, setAddError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [deleteError, setDeleteError] = useState<string>();
  const [rate, setRate] = useState(collection.scan_rate);
  const [rateMessage, setRateMessage] = useState<{ text: string; error: boolean }>();
  const [deletingCollection, setDeletingCollection] = useState(false);

  const deleteSeed = async (seed: Seed) => {
    setNotice(undefined);
    setDeleteError(undefined);
    try {
      const { seed_count } = await del<{ seed_count: number }>(
        `${path}/seeds/${pathSegment(seed.type)}/${pathSegment(seed.name)}`,
      );
      setNotice(`Deleted ${seed.type} ${seed.name}; the collection now has ${plural(seed_count, "seed")}.`);
      onChanged();
    } catch (error) {
      setDeleteError(sentence(error));
    }
  };
  const seedColumns: Column<Seed>[] = [
    ...SEED_COLUMNS,
    {
      id: "actions",
      label: "Actions",
      value: () => "",
      sortable: false,
      render: (seed) => (
        <button
          type="button"
          class="small"
          aria-label={`Delete seed ${seed.name}`}
          onClick={() => deleteSeed(seed)}
        >
          Delete
        </button>
      ),
    },
  ];

  const add = async (event: Event) => {
    event.preventDefault();
    setAddError(undefined);
    setNotice(undefined);
    if (seeds.lines.length === 0) {
      setAddError("Enter at least one seed to add.");
      return;
    }
    setBusy(true);
    const outcome = await submitSeeds("add-seeds", seeds, (list) =>
      post<{ seeds_added: number; seed_count: number }>(path, { name: collection.name, seeds: list }),
    );
    setBusy(false);
    if (outcome.result) {
      const { seeds_added, seed_count } = outcome.result;
      setNotice(
        `Added ${plural(seeds_added, "new seed")}; the collection now has ${plural(seed_count, "seed")}.`,
      );
      seeds.setText("");
      onChanged();
    } else {
      setAddError(
        [outcome.error, ...outcome.fieldErrors.map((d) => `${d.field} ${d.message}`)]
          .filter(Boolean)
          .join(" "),
      );
    }
  };

  const deleteAll = async () => {
    setDeleteError(undefined);
    try {
      const { seeds_deleted } = await del<{ seeds_deleted: number }>(`${path}/seeds`);
      setConfirming(false);
      setNotice(`Deleted ${plural(seeds_deleted, "seed")}. Results of earlier runs stay readable.`);
      onChanged();
    } catch (error) {
      setDeleteError(sentence(error));
    }
  };

  const saveRate = async (event: Event) => {
    event.preventDefault();
    setRateMessage(undefined);
    try {
      await post(path, { scan_rate: rate });
      setRateMessage({ text: `Scan rate set to “${SCAN_RATE_LABELS[rate] ?? rate}”.`, error: false });
      onChanged();
    } catch (error) {
      setRateMessage({ text: sentence(error), error: true });
    }
  };

  return (
    <>
      <section aria-labelledby="seeds-heading">
        <h2 id="seeds-heading">Seeds</h2>
        {notice && (
          <p class="notice success" role="status">
            {notice}
          </p>
        )}
        {collection.seeds.length === 0 ? (
          <Empty>
            <p>This collection has no seeds; runs have nothing to start from. Add some below.</p>
          </Empty>
        ) : (
          <DataTable
            noun="seeds"
            rows={collection.seeds}
            columns={seedColumns}
            rowKey={(seed) => `${seed.type}:${seed.name}`}
          />
        )}
        <form class="stack" onSubmit={add} noValidate>
          <SeedInput id="add-seeds" label="Add seeds" seeds={seeds} />
          {addError && (
            <p class="notice error" role="alert">
              {addError}
            </p>
          )}
          <div class="actions">
            <button type="submit" class="primary" disabled={busy}>
              {busy ? "Adding…" : "Add seeds"}
            </button>
          </div>
        </form>
      </section>

      <section aria-labelledby="settings-heading">
        <h2 id="settings-heading">Settings</h2>
        <form class="inline-form" onSubmit={saveRate}>
          <label for="scan-rate">Scan rate</label>
          <ScanRateSelect id="scan-rate" value={rate} onChange={setRate} />
          <button type="submit">Save scan rate</button>
        </form>
        {rateMessage && (
          <p
            class={`notice ${rateMessage.error ? "error" : "success"}`}
            role={rateMessage.error ? "alert" : "status"}
          >
            {rateMessage.text}
          </p>
        )}
        <p class="hint">
          The team ({collection.team_id}) is chosen when a collection is created and cannot change.
        </p>
        <ScanProfileForm path={path} profile={collection.scan_profile} onChanged={onChanged} />
      </section>

      <section aria-labelledby="danger-heading" class="danger-zone">
        <h2 id="danger-heading">Delete all seeds</h2>
        <p>
          Removes every seed of this collection. Results of earlier runs stay readable; the next run has
          nothing to start from.
        </p>
        {!confirming ? (
          <button
            type="button"
            class="danger"
            onClick={() => setConfirming(true)}
            disabled={collection.seed_count === 0}
          >
            Delete all seeds…
          </button>
        ) : (
          <div class="actions">
            <button type="button" class="danger" onClick={deleteAll}>
              Yes, delete all {plural(collection.seed_count, "seed")}
            </button>
            <button type="button" onClick={() => setConfirming(false)}>
              Keep them
            </button>
          </div>
        )}
        {deleteError && (
          <p class="notice error" role="alert">
            {deleteError}
          </p>
        )}
      </section>

      <section aria-labelledby="delete-collection-heading" class="danger-zone">
        <h2 id="delete-collection-heading">Delete this collection</h2>
        <p>Deletes the collection with its seeds, runs and results. It cannot be undone.</p>
        <button type="button" class="danger" onClick={() => setDeletingCollection(true)}>
          Delete collection…
        </button>
        {deletingCollection && (
          <DeleteCollectionDialog collection={collection} onClose={() => setDeletingCollection(false)} />
        )}
      </section>
    </>
  );
}
