/**
 * Drops the `count` oldest entries (insertion order) of a Map used as a bounded cache.
 *
 * Why in batches: V8 leaves a deleted Map entry as a hole until the table is rebuilt, and
 * every `keys()` walk starts at the front, so evicting one entry per insert with
 * `map.keys().next()` skips all the holes left by the previous evictions: with 50,000 entries
 * that was 25 us per insert instead of 0.5 (node bench/micro/evict.mjs). Found as
 * `decideAndAppend` taking 18% of the request thread once the command handler's cache was full.
 * One walk that drops an eighth of the entries pays for the holes once per many inserts.
 * Returns how many were dropped.
 */
export function evictOldest<K, V>(map: Map<K, V>, count: number): number {
  let dropped = 0;
  if (count <= 0) return 0;
  for (const key of map.keys()) {
    map.delete(key);
    if (++dropped >= count) break;
  }
  return dropped;
}
