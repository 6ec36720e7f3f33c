/**
 * The event store contract, written once and run against every adapter: the embedded one
 * always (event-store.sqlite.test.ts), EventStoreDB whenever EVENTSTORE_URL is set.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { rejects } from '../support/assert.js';
import { waiter } from '../support/wait.js';
import { randomUUID } from 'node:crypto';
import {
  LOG_START,
  WrongExpectedRevisionError,
  type EventStore,
  type NewEvent,
} from '../../src/ports/event-store.js';

const until = waiter(30_000, 5);

const meta = { requestId: 'r1', actor: 'test', time: 1_700_000_000_000, apiKey: 'k1' };
const ev = (type: string, data: Record<string, unknown> = {}, metadata: NewEvent['metadata'] = meta): NewEvent => ({ id: randomUUID(), type, data, metadata });

export function eventStoreContract(name: string, open: () => Promise<EventStore>) {
  const s = suite<{ store: EventStore; stream: (n: string) => string }>(`event store contract: ${name}`);
  s.before.each(async (ctx) => {
    ctx.store = await open();
    const run = randomUUID().slice(0, 8);
    ctx.stream = (n) => `test-${run}-${n}`;
  });
  s.after.each(async (ctx) => {
    await ctx.store.close();
  });

  s('appends to a new stream with no_stream and reads it back in order', async ({ store, stream }) => {
    const r = await store.append(stream('a'), [ev('One', { n: 1 }), ev('Two', { n: 2 })], 'no_stream');
    assert.is(r.nextRevision, 1);
    const events = await store.readStream(stream('a'));
    assert.equal(events.map((e) => [e.type, e.revision, e.data]), [['One', 0, { n: 1 }], ['Two', 1, { n: 2 }]]);
    assert.equal(events[0]!.metadata, meta);
    assert.is(events[1]!.position, r.position);
  });

  s('no_stream fails on an existing stream', async ({ store, stream }) => {
    await store.append(stream('b'), [ev('One')], 'no_stream');
    try {
      await store.append(stream('b'), [ev('Two')], 'no_stream');
      assert.unreachable('second no_stream append was accepted');
    } catch (e) {
      assert.instance(e, WrongExpectedRevisionError);
      assert.is((e as WrongExpectedRevisionError).actual, 0);
    }
    assert.is((await store.readStream(stream('b'))).length, 1);
  });

  s('exact revision: accepted when it matches, refused when stale, nothing written on refusal', async ({ store, stream }) => {
    await store.append(stream('c'), [ev('One')], 'no_stream');
    await store.append(stream('c'), [ev('Two'), ev('Three')], 0);
    try {
      await store.append(stream('c'), [ev('Stale')], 0);
      assert.unreachable('stale revision accepted');
    } catch (e) {
      assert.instance(e, WrongExpectedRevisionError);
      assert.is((e as WrongExpectedRevisionError).actual, 2);
    }
    const types = (await store.readStream(stream('c'))).map((e) => e.type);
    assert.equal(types, ['One', 'Two', 'Three']);
  });

  s('stream_exists and any', async ({ store, stream }) => {
    await rejects(store.append(stream('d'), [ev('X')], 'stream_exists'), /expected revision/);
    await store.append(stream('d'), [ev('One')], 'any');
    await store.append(stream('d'), [ev('Two')], 'stream_exists');
    await store.append(stream('d'), [ev('Three')], 'any');
    assert.is((await store.readStream(stream('d'))).length, 3);
  });

  s('a stream that does not exist reads as empty', async ({ store, stream }) => {
    assert.equal(await store.readStream(stream('nothing')), []);
  });

  s('readStream from a revision, with maxCount', async ({ store, stream }) => {
    await store.append(stream('e'), [0, 1, 2, 3, 4].map((n) => ev('N', { n })), 'no_stream');
    const tail = await store.readStream(stream('e'), { fromRevision: 2 });
    assert.equal(tail.map((e) => e.data.n), [2, 3, 4]);
    const two = await store.readStream(stream('e'), { fromRevision: 1, maxCount: 2 });
    assert.equal(two.map((e) => e.data.n), [1, 2]);
    // From the last revision, and from past the end (nothing there: the index alone answers).
    assert.equal((await store.readStream(stream('e'), { fromRevision: 4 })).map((e) => e.data.n), [4]);
    assert.equal(await store.readStream(stream('e'), { fromRevision: 5 }), []);
    assert.equal(await store.readStream(stream('e'), { fromRevision: 5, maxCount: 3 }), []);
  });

  s('readAll returns every stream in commit order, after a position, with maxCount', async ({ store, stream }) => {
    const start = await store.headPosition();
    await store.append(stream('f1'), [ev('A1')], 'no_stream');
    await store.append(stream('f2'), [ev('B1')], 'no_stream');
    await store.append(stream('f1'), [ev('A2')], 0);
    const all = await store.readAll({ after: start });
    const mine = all.filter((e) => e.stream.startsWith(stream('f')));
    assert.equal(mine.map((e) => e.type), ['A1', 'B1', 'A2']);
    for (let i = 1; i < all.length; i++) assert.ok(all[i]!.position > all[i - 1]!.position, 'positions increase');
    const afterFirst = await store.readAll({ after: mine[0]!.position, maxCount: 1 });
    assert.is(afterFirst.length, 1);
    assert.is(afterFirst[0]!.type, 'B1');
    assert.is(await store.headPosition(), mine[2]!.position);
  });

  s('positions order as strings and LOG_START sorts first', async ({ store, stream }) => {
    const r = await store.append(stream('g'), [ev('X')], 'no_stream');
    assert.ok(r.position > LOG_START);
    const all = await store.readAll({ after: LOG_START });
    assert.ok(all.length >= 1);
  });

  s('concurrent appends with the same expected revision: exactly one wins', async ({ store, stream }) => {
    await store.append(stream('h'), [ev('Start')], 'no_stream');
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => store.append(stream('h'), [ev('Racer', { i })], 0)),
    );
    assert.is(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results) if (r.status === 'rejected') assert.instance(r.reason, WrongExpectedRevisionError);
    assert.is((await store.readStream(stream('h'))).length, 2);
  });

  s('one failing append does not affect others submitted at the same time', async ({ store, stream }) => {
    const [bad, good] = await Promise.allSettled([
      store.append(stream('i1'), [ev('X')], 5),
      store.append(stream('i2'), [ev('Y')], 'no_stream'),
    ]);
    assert.is(bad.status, 'rejected');
    assert.is(good.status, 'fulfilled');
    assert.is((await store.readStream(stream('i2'))).length, 1);
    assert.is((await store.readStream(stream('i1'))).length, 0);
  });

  s('stream names with any characters stay separate', async ({ store, stream }) => {
    const odd = [stream('"quote'), stream("a'b; DROP TABLE events;--"), stream('ünï\u0000cödé'), stream('%_*')];
    for (const [i, n] of odd.entries()) await store.append(n, [ev('E', { i })], 'no_stream');
    for (const [i, n] of odd.entries()) assert.equal((await store.readStream(n)).map((e) => e.data.i), [i]);
  });

  s('data and metadata of any content come back as appended, each append with its own metadata', async ({ store, stream }) => {
    // Text that needs escaping in one encoding or another: quotes, backslashes, U+0000 and
    // U+0001, a lone surrogate, a braced array-literal lookalike, characters beyond the BMP.
    const odd = 'q"uo\\te \u0000 \u0001 \ud800 {"a",NULL} ünï 😀';
    const metaA = { ...meta, requestId: odd, nested: { list: [odd, null, 1.5] } };
    const metaB = { ...meta, requestId: 'other' };
    // Appended together, so that an adapter that batches concurrent appends carries both
    // metadata in one batch.
    await Promise.all([
      store.append(stream('m1'), [ev('A', { s: odd, n: 1 }, metaA), ev('B', { s: '', deep: { s: odd } }, metaA)], 'no_stream'),
      store.append(stream('m2'), [ev('C', { s: odd }, metaB)], 'no_stream'),
      store.append(stream('m3'), [ev('D', {}, metaA), ev('E', { t: 'x' }, metaB)], 'no_stream'),
    ]);
    const read = async (n: string) => (await store.readStream(stream(n))).map((e) => [e.type, e.data, e.metadata]);
    assert.equal(await read('m1'), [['A', { s: odd, n: 1 }, metaA], ['B', { s: '', deep: { s: odd } }, metaA]]);
    assert.equal(await read('m2'), [['C', { s: odd }, metaB]]);
    assert.equal(await read('m3'), [['D', {}, metaA], ['E', { t: 'x' }, metaB]]);
  });

  s('followers are notified after a commit', async ({ store, stream }) => {
    const seen: string[] = [];
    const off = store.onAppended((p) => seen.push(p));
    const r = await store.append(stream('j'), [ev('X')], 'no_stream');
    // Waits for the notice itself (a loaded machine may deliver it late), not for a fixed time.
    await until('the notice of the append', () => seen.length > 0).finally(off);
    assert.ok(seen.includes(r.position) || seen.some((p) => p >= r.position), 'notified with a position at or after the append');
  });

  return s;
}
