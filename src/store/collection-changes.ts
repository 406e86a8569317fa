/**
 * A counter that moves whenever this process writes what a collection's results are read against: the
 * collection's row (created, seeds changed) or its latest finished run. Readers that keep such a read
 * for a moment (src/api/cached-answers.ts) compare it, so a change made here shows at once; a change
 * made by another process shows when their moment is up. One counter for every store of the process:
 * a write to any of them only makes the others read again.
 */
let generation = 0;

export function collectionsChanged(): void {
  generation++;
}

export function collectionsGeneration(): number {
  return generation;
}

/** Runs a write of collections and moves the counter once it is over (committed or not). */
export async function changingCollections<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } finally {
    collectionsChanged();
  }
}
