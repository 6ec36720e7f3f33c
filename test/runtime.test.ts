/**
 * The generic command handler (load, decide, append, retry, cache) and the projection
 * runner (checkpoints, read-your-writes, two runners on one store), on the embedded stores.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { SqliteEventStore } from '../src/adapters/sqlite-event-store.js';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { CommandHandler } from '../src/runtime/command-handler.js';
import { ProjectionRunner } from '../src/runtime/projection-runner.js';
import { defineProjection } from '../src/runtime/projection.js';
import type { Command, Decider, DomainEvent, PlanningDecider } from '../src/runtime/decider.js';
import type { EventMetadata, EventStore } from '../src/ports/event-store.js';
import { ApiError, invalidArgument } from '../src/shared/errors.js';
import { tempDir } from './support/app.js';
import { rejects } from './support/assert.js';

// A counter aggregate: Increment adds, refusing to pass a limit.
type CounterEvent = DomainEvent<'Incremented', { by: number }>;
type CounterCommand = Command<'Increment', { by: number; limit: number }>;
const counter: Decider<{ total: number }, CounterCommand, CounterEvent> = {
  name: 'counter',
  initialState: () => ({ total: 0 }),
  evolve: (s, e) => (e.type === 'Incremented' ? { total: s.total + e.data.by } : s),
  decide: (c, s) => {
    if (s.total + c.data.by > c.data.limit) throw invalidArgument('limit reached');
    return c.data.by === 0 ? [] : [{ type: 'Incremented', data: { by: c.data.by } }];
  },
};
// The counter with an outcome per command: the total its decision saw, and whether it added.
const planningCounter: PlanningDecider<{ total: number }, CounterCommand, CounterEvent, string> = {
  ...counter,
  name: 'counter',
  plan: (c, s) => ({ events: counter.decide(c, s), outcomes: new Map([['seen', `${s.total}${c.data.by === 0 ? ' unchanged' : ''}`]]) }),
};
const inc = (by: number, limit = 1_000_000): CounterCommand => ({ type: 'Increment', data: { by, limit }, metadata: { now: 1 } });
const meta: EventMetadata = { requestId: 'req-1', actor: 'test', time: 1, apiKey: 'k' };

const H = suite<{ dir: string; store: SqliteEventStore }>('command handler');
H.before.each((ctx) => {
  ctx.dir = tempDir('collab-rt-');
  ctx.store = new SqliteEventStore(path.join(ctx.dir, 'events.db'));
});
H.after.each(async (ctx) => {
  await ctx.store.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

H('decides against the folded state and appends with metadata', async ({ store }) => {
  const h = new CommandHandler(store);
  await h.handle(counter, 'counter-a', inc(2), meta);
  const r = await h.handle(counter, 'counter-a', inc(3), meta);
  assert.equal(r.state, { total: 5 });
  const events = await store.readStream('counter-a');
  assert.equal(events.map((e) => e.data.by), [2, 3]);
  assert.equal(events[1]!.metadata, meta);
  assert.ok(r.position);
});

H('a refusal appends nothing; an empty decision appends nothing and has no position', async ({ store }) => {
  const h = new CommandHandler(store);
  await h.handle(counter, 'counter-b', inc(5, 5), meta);
  await rejects(h.handle(counter, 'counter-b', inc(1, 5), meta), /limit reached/);
  const r = await h.handle(counter, 'counter-b', inc(0), meta);
  assert.is(r.position, undefined);
  assert.is((await store.readStream('counter-b')).length, 1);
});

H('a fresh handler (cold cache) sees what another handler wrote', async ({ store }) => {
  const a = new CommandHandler(store);
  const b = new CommandHandler(store);
  await a.handle(counter, 'counter-c', inc(1), meta);
  await b.handle(counter, 'counter-c', inc(1), meta);
  // a's cache says total 1 at revision 0; the load must read b's event before deciding.
  const r = await a.handle(counter, 'counter-c', inc(1), meta);
  assert.equal(r.state, { total: 3 });
});

H('concurrent commands on one stream in one process are queued: all succeed, none conflicts', async ({ store }) => {
  const h = new CommandHandler(store, { maxRetries: 0 });
  await Promise.all(Array.from({ length: 20 }, () => h.handle(counter, 'counter-q', inc(1), meta)));
  assert.is((await store.readStream('counter-q')).length, 20);
  assert.is((h as unknown as { queues: Map<string, unknown> }).queues.size, 0, 'queues are cleaned up');
});

H('concurrent commands from several processes are retried with fresh state: no lost update, invariant kept', async ({ store }) => {
  const handlers = [new CommandHandler(store), new CommandHandler(store), new CommandHandler(store)];
  const results = await Promise.allSettled(
    Array.from({ length: 9 }, (_, i) => handlers[i % 3]!.handle(counter, 'counter-d', inc(1, 6), meta)),
  );
  const ok = results.filter((r) => r.status === 'fulfilled').length;
  const events = await store.readStream('counter-d');
  assert.is(events.length, ok, 'every success appended exactly one event');
  assert.ok(ok <= 6, 'the limit held under concurrency');
  const total = events.reduce((n, e) => n + (e.data.by as number), 0);
  assert.ok(total <= 6);
});

H('a planned command answers the outcomes of the decision appended: a conflict plans again on fresh state', async ({ store }) => {
  const a = new CommandHandler(store);
  await a.handle(counter, 'counter-p', inc(1), meta);
  // Another process appends: a's cached state (total 1) is stale, its first plan's append conflicts.
  await new CommandHandler(store).handle(counter, 'counter-p', inc(1), meta);
  const r = await a.handlePlan(planningCounter, 'counter-p', inc(1), meta);
  assert.equal([...r.outcomes], [['seen', '2']], 'the outcome of the plan that landed, not of the stale one');
  assert.equal(r.state, { total: 3 });
  assert.is(r.events.length, 1);
  assert.ok(r.position);
  const none = await a.handlePlan(planningCounter, 'counter-p', inc(0), meta);
  assert.equal([...none.outcomes], [['seen', '3 unchanged']], 'a decision that appends nothing still answers its outcomes');
  assert.is(none.position, undefined);
});

H('after the retry budget a conflict answers ABORTED', async ({ store }) => {
  // A store whose every append conflicts, as if another writer always got there first.
  const conflicting: EventStore = Object.create(store);
  conflicting.append = async (stream, _events, expected) => {
    const { WrongExpectedRevisionError } = await import('../src/ports/event-store.js');
    throw new WrongExpectedRevisionError(stream, expected, 99);
  };
  const h = new CommandHandler(conflicting, { maxRetries: 3 });
  const err = await rejects(h.handle(counter, 'counter-e', inc(1), meta));
  assert.instance(err, ApiError);
  assert.is((err as ApiError).status, 'ABORTED');
});

H('a stream this handler never saw: a create reads nothing; a guess that the stream is new is caught by the append', async ({ store }) => {
  let reads = 0;
  const counting: EventStore = Object.create(store);
  counting.readStream = (stream, options) => {
    reads++;
    return store.readStream(stream, options);
  };
  const a = new CommandHandler(counting);
  await a.handle(counter, 'counter-n', inc(1), meta);
  assert.is(reads, 0, 'deciding a create on the initial state needs no read');
  // Another process wrote counter-m; this handler guesses it is new, the append refuses the
  // guess (no_stream), and the retry loads and decides on the real state.
  await new CommandHandler(store).handle(counter, 'counter-m', inc(5), meta);
  const r = await a.handle(counter, 'counter-m', inc(2, 6), meta).catch((e: Error) => e);
  assert.instance(r, ApiError, 'the limit is checked against the stored total 5, not the guessed 0');
  assert.is((r as ApiError).message, 'limit reached');
  const ok = await a.handle(counter, 'counter-m', inc(1, 6), meta);
  assert.equal(ok.state, { total: 6 });
  assert.equal((await store.readStream('counter-m')).map((e) => e.data.by), [5, 1]);
});

H('the state cache is bounded', async ({ store }) => {
  const h = new CommandHandler(store, { cacheSize: 2 });
  for (const s of ['x1', 'x2', 'x3']) await h.handle(counter, `counter-${s}`, inc(1), meta);
  const cache = (h as unknown as { cache: Map<string, unknown> }).cache;
  assert.is(cache.size, 2);
  assert.not.ok(cache.has('counter-x1'));
});

H.run();

// ---- projection runner ----

const totals = defineProjection({
  name: 'totals',
  handlers: {
    async Incremented(e, tx) {
      const doc = await tx.get<{ _id: string; total: number; seen: string[] }>('totals', e.stream);
      await tx.upsert('totals', { _id: e.stream, total: (doc?.total ?? 0) + (e.data.by as number), seen: [...(doc?.seen ?? []), e.id] });
    },
  },
});

const P = suite<{ dir: string; events: SqliteEventStore; read: SqliteReadStore }>('projection runner');
P.before.each((ctx) => {
  ctx.dir = tempDir('collab-pr-');
  ctx.events = new SqliteEventStore(path.join(ctx.dir, 'events.db'));
  ctx.read = new SqliteReadStore(path.join(ctx.dir, 'read.db'));
});
P.after.each(async (ctx) => {
  await ctx.events.close();
  await ctx.read.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

P('waitFor resolves once the write is in the read model (read-your-writes)', async ({ events, read }) => {
  const runner = new ProjectionRunner(events, read, [totals], { pollMs: 10_000 });
  await runner.init();
  runner.start();
  const h = new CommandHandler(events);
  const r = await h.handle(counter, 'counter-p', inc(4), meta);
  assert.ok(await runner.waitFor(r.position!, 2000));
  assert.equal((await read.get<{ _id: string; total: number }>('totals', 'counter-p'))?.total, 4);
  await runner.stop();
});

P('onAdvanced: listeners hear every move of the position (a batch applied, a notice of another process\'s), until they unsubscribe', async ({ events, read }) => {
  const runner = new ProjectionRunner(events, read, [totals]);
  await runner.init();
  let heard = 0;
  const off = runner.onAdvanced(() => heard++);
  const r = await new CommandHandler(events).handle(counter, 'counter-adv', inc(1), meta);
  await runner.catchUp();
  assert.ok(heard >= 1, 'after the batch it applied');
  assert.ok(runner.position >= r.position!);
  const before = heard;
  runner.observed(r.position!);
  assert.is(heard, before + 1, 'after a notice of an applied position');
  off();
  runner.observed(r.position!);
  assert.is(heard, before + 1, 'not once unsubscribed');
});

P('waitFor answers false after its timeout when projections cannot keep up', async ({ events, read }) => {
  const runner = new ProjectionRunner(events, read, [totals]);
  await runner.init(); // not started: nothing applies events
  const r = await new CommandHandler(events).handle(counter, 'counter-q', inc(1), meta);
  const t0 = Date.now();
  assert.is(await runner.waitFor(r.position!, 50), false);
  assert.ok(Date.now() - t0 < 1000);
});

P('checkpoint survives a restart: events are applied exactly once', async ({ events, read }) => {
  const h = new CommandHandler(events);
  for (let i = 0; i < 5; i++) await h.handle(counter, 'counter-r', inc(1), meta);
  const r1 = new ProjectionRunner(events, read, [totals]);
  await r1.init();
  assert.is(await r1.catchUp(), 5);
  await h.handle(counter, 'counter-r', inc(10), meta);
  const r2 = new ProjectionRunner(events, read, [totals]);
  await r2.init();
  assert.is(await r2.catchUp(), 1, 'a new runner starts from the stored checkpoint');
  const doc = await read.get<{ _id: string; total: number; seen: string[] }>('totals', 'counter-r');
  assert.is(doc?.total, 15);
  assert.is(new Set(doc?.seen).size, 6);
});

P('two runners on one store never apply a batch twice', async ({ events, read }) => {
  const h = new CommandHandler(events);
  await Promise.all(Array.from({ length: 50 }, (_, i) => h.handle(counter, `counter-s${i % 5}`, inc(1), meta)));
  // Each runner keeps its own idea of the checkpoints; only the stored compare-and-set
  // keeps them from applying the same batch twice.
  const a = new ProjectionRunner(events, read, [totals], { batchSize: 7 });
  const b = new ProjectionRunner(events, read, [totals], { batchSize: 7 });
  await a.init();
  await b.init();
  await Promise.all([a.catchUp(), b.catchUp()]);
  let sum = 0;
  for (let i = 0; i < 5; i++) {
    const doc = await read.get<{ _id: string; total: number; seen: string[] }>('totals', `counter-s${i}`);
    assert.is(doc?.seen.length, new Set(doc?.seen).size, 'no event applied twice');
    sum += doc?.total ?? 0;
  }
  assert.is(sum, 50);
});

P('a projection added later catches up from the start without re-applying the others', async ({ events, read }) => {
  const h = new CommandHandler(events);
  await h.handle(counter, 'counter-t', inc(2), meta);
  const first = new ProjectionRunner(events, read, [totals]);
  await first.init();
  await first.catchUp();
  const copy = defineProjection({
    name: 'copy',
    handlers: { async Incremented(e, tx) { await tx.upsert('copies', { _id: e.id, by: e.data.by as number }); } },
  });
  const both = new ProjectionRunner(events, read, [totals, copy]);
  await both.init();
  await both.catchUp();
  assert.is((await read.get<{ _id: string; total: number }>('totals', 'counter-t'))?.total, 2);
  assert.is(await read.count('copies', {}), 1);
});

P('a failing projection does not skip events: the batch is retried', async ({ events, read }) => {
  let failures = 1;
  const flaky = defineProjection({
    name: 'flaky',
    handlers: {
      async Incremented(e, tx) {
        if (failures-- > 0) throw new Error('transient');
        await tx.upsert('flaky', { _id: e.id });
      },
    },
  });
  const runner = new ProjectionRunner(events, read, [flaky], { pollMs: 20 });
  await runner.init();
  runner.start();
  const r = await new CommandHandler(events).handle(counter, 'counter-u', inc(1), meta);
  assert.ok(await runner.waitFor(r.position!, 3000));
  assert.is(await read.count('flaky', {}), 1);
  await runner.stop();
});

P.run();
