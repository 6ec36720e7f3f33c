/**
 * src/shared/evict.ts and the bounded caches that use it: the oldest entries go first (a
 * re-inserted key counts as new), in batches, and every cache stays within its bound.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { evictOldest } from '../src/shared/evict.js';
import { RateLimiter } from '../src/http/rate-limit.js';

test('drops the oldest entries in insertion order; a re-inserted key counts as new', () => {
  const m = new Map<string, number>();
  for (const k of ['a', 'b', 'c', 'd', 'e']) m.set(k, 0);
  m.delete('a');
  m.set('a', 1); // now the newest
  assert.is(evictOldest(m, 2), 2);
  assert.equal([...m.keys()], ['d', 'e', 'a']);
  assert.is(evictOldest(m, 0), 0);
  assert.is(evictOldest(m, 10), 3, 'never more than there is');
  assert.is(m.size, 0);
});

test('the rate limiter keeps at most its number of callers, dropping the least recently seen', () => {
  let now = 0;
  const l = new RateLimiter(100, 100, () => now, 16);
  for (let i = 0; i < 100; i++) {
    now += 1;
    l.take(`caller-${i}`);
    l.take('steady'); // seen every time: never the oldest
  }
  const buckets = (l as unknown as { buckets: Map<string, unknown> }).buckets;
  assert.ok(buckets.size <= 16, `size ${buckets.size}`);
  assert.ok(buckets.has('steady'));
  assert.ok(buckets.has('caller-99'));
  assert.not.ok(buckets.has('caller-0'));
});

test.run();
