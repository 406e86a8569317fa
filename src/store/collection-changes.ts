/**
 * A counter that moves whenever what a collection's results are read against changes: the collection's
 * row (created, seeds changed) or its latest finished run. Readers that keep such a read for a moment
 * (src/api/cached-answers.ts) compare it, so a change shows at once. Changes made by this process move it
 * directly; those made by other processes reach it through `collectionsChangedElsewhere` when something
 * relays them (src/runs/collection-change-relay.ts, over Redis in BullMQ mode), and otherwise show when
 * the readers' moment is up. One counter for every store of the process: a write to any of them only
 * makes the others read again.
 */
let generation = 0;
const listeners = new Set<() => void>();

/** This process changed a collection or finished a run: readers read again, relays tell the others. */
export function collectionsChanged(): void {
  generation++;
  for (const listener of listeners) listener();
}

/** Another process did (told by a relay, which must not hear it as a change of its own). */
export function collectionsChangedElsewhere(): void {
  generation++;
}

export function collectionsGeneration(): number {
  return generation;
}

/** Calls `listener` after each change made by this process; answers a function that stops that. */
export function onCollectionsChanged(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Runs a write of collections and moves the counter once it is over (committed or not). */
export async function changingCollections<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } finally {
    collectionsChanged();
  }
}
