/**
 * src/runtime/shared-log-reads.ts: two followers reading through it see exactly what they
 * would read from the store (a prefix of the events after their position), and the second
 * costs no store read while the first one's batch covers it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { SqliteEventStore } from '../src/adapters/sqlite-event-store.js';
import { LOG_START, type EventStore, type ReadAllOptions, type RecordedEvent } from '../src/ports/event-store.js';
import { shareLogReads } from '../src/runtime/shared-log-reads.js';
import { tempDir } from './support/app.js';

async function withStore(fn: (store: SqliteEventStore, reads: () => number) => Promise<void>) {
  const dir = tempDir('collab-shared-');
  const store = new SqliteEventStore(path.join(dir, 'events.db'));
  let n = 0;
  const original = store.readAll.bind(store);
  store.readAll = (options?: ReadAllOptions) => {
    n++;
    return original(options);
  };
  try {
    await fn(store, () => n);
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const append = (store: EventStore, stream: string, count: number) =>
  store.append(stream, Array.from({ length: count }, (_, i) => ({ id: `${stream}-${i}`, type: 'T', data: { i }, metadata: { requestId: 'r', actor: 'a', time: 1 } })), 'any');

/** Follows the log to its end in batches of `size`, checking each batch is a prefix of the truth. */
async function follow(shared: EventStore, store: EventStore, from: string, size: number): Promise<RecordedEvent[]> {
  const seen: RecordedEvent[] = [];
  let at = from;
  for (;;) {
    const batch = await shared.readAll({ after: at, maxCount: size });
    if (batch.length === 0) return seen;
    const truth = await store.readAll({ after: at, maxCount: batch.length });
    assert.equal(batch.map((e) => e.id), truth.map((e) => e.id), `batch after ${at}`);
    assert.ok(batch.length <= size);
    seen.push(...batch);
    at = batch[batch.length - 1]!.position;
  }
}

test('followers with different batch sizes see the whole log in order; the second reads it from the first one\'s batches', async () => {
  await withStore(async (store, reads) => {
    await append(store, 's1', 700);
    const shared = shareLogReads(store);
    const all = await store.readAll();
    const before = reads();
    const a = await follow(shared, store, LOG_START, 500);
    const afterA = reads();
    const b = await follow(shared, store, LOG_START, 250);
    assert.equal(a.map((e) => e.id), all.map((e) => e.id));
    assert.equal(b.map((e) => e.id), all.map((e) => e.id));
    // follow() itself reads the store to check each batch; count only the shared reads:
    // A: 2 batches + the empty read at the end (3); B: 3 batches and its end from A's batches
    // (the empty end is read again, never kept), each checked once against the store.
    assert.is(afterA - before, 3 + 2, 'A read its batches and checks from the store');
    assert.is(reads() - afterA, 3 + 1, 'B read only its checks and its final empty read');
  });
});

test('an empty answer is never kept: events appended later are seen', async () => {
  await withStore(async (store) => {
    const shared = shareLogReads(store);
    assert.equal(await shared.readAll({ after: LOG_START, maxCount: 10 }), []);
    await append(store, 's2', 3);
    assert.is((await shared.readAll({ after: LOG_START, maxCount: 10 })).length, 3);
    // A kept batch is a prefix: with more events appended, a reader still gets all of them in time.
    await append(store, 's3', 2);
    const seen = await follow(shared, store, LOG_START, 10);
    assert.is(seen.length, 5);
  });
});

test.run();
