/**
 * The rebuild's lanes replayed side by side (replayLanes, src/ops/rebuild.ts): each lane goes at
 * its own pace, no further than LANE_AHEAD batches past the slowest; the first lane's batches are
 * the ones counted; a lane that fails stops the others and fails the whole.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LANE_AHEAD, replayLanes } from '../src/ops/rebuild.js';

/** A lane of `batches` batches of `size` events; each batch settles when `gate` lets it. */
function lane(batches: number, size: number, gate: () => Promise<void>, onBatch: () => void) {
  let left = batches;
  return {
    calls: 0,
    async applyNext() {
      this.calls++;
      await gate();
      if (left === 0) return 0;
      left--;
      onBatch();
      return size;
    },
  };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

test('a fast lane runs at most LANE_AHEAD batches past a slow one, and both reach the end', async () => {
  const done = [0, 0];
  let widest = 0;
  const note = () => (widest = Math.max(widest, done[0]! - done[1]!));
  // The fast lane's batches settle at once; the slow lane's one turn of the event loop after
  // each of ten others.
  const fast = lane(20, 5, async () => undefined, () => (done[0]!++, note()));
  const slow = lane(20, 5, async () => {
    for (let i = 0; i < 10; i++) await tick();
  }, () => (done[1]!++, note()));
  let counted = 0;
  await replayLanes([fast, slow], (n) => (counted += n));
  assert.equal(done, [20, 20]);
  assert.ok(widest >= LANE_AHEAD, `the fast lane went ahead (${widest})`);
  assert.ok(widest <= LANE_AHEAD + 1, `never more than ${LANE_AHEAD} batches past the slowest, then one in flight: ${widest}`);
  assert.is(counted, 100, 'the first lane counted, once per event');
});

test('a lane that finishes first does not hold the others back', async () => {
  const short = lane(1, 3, async () => undefined, () => undefined);
  const long = lane(30, 3, tick, () => undefined);
  await replayLanes([long, short], () => undefined);
  assert.is(long.calls, 31, 'the long lane ran to its end');
});

test('a lane that fails stops the others at their next batch and fails the replay with its error', async () => {
  const boom = new Error('store fault in the audit lane');
  let failing = 0;
  const bad = {
    async applyNext() {
      await tick();
      if (++failing === 3) throw boom;
      return 2;
    },
  };
  const good = lane(1000, 2, tick, () => undefined);
  let caught: unknown = null;
  await replayLanes([good, bad], () => undefined).catch((e: unknown) => (caught = e));
  assert.is(caught, boom);
  // Let the good lane see the failure at its next batch.
  for (let i = 0; i < 5; i++) await tick();
  const after = good.calls;
  for (let i = 0; i < 20; i++) await tick();
  assert.is(good.calls, after, 'the other lane stopped');
  assert.ok(after < 20, `it stopped early (${after} batches)`);
});

test.run();
