/**
 * Sets `key` in a map kept to at most `limit` entries, in the order they were last set: a key set again
 * moves to the end, and when the map is full the oldest goes. (Maps iterate in insertion order, so the
 * first key is the oldest.) For the per-process memories that must not grow with what clients send.
 */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, limit: number): void {
  map.delete(key);
  if (map.size >= limit) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
