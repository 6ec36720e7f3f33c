/**
 * The EventStoreDB adapter with the real client against a fake server on loopback
 * (test/support/fake-esdb.ts: the client's own gRPC definitions and messages), for what needs
 * no server semantics: calls left open, error classes, no read-back after an append,
 * notifications and resubscription, a cluster's seed list and recovery after a failed first
 * discovery, and the service over it. Connection strings: test/esdb.connection-string.test.ts. The semantics are the port contract's, run against
 * a real server whenever EVENTSTORE_URL is set (test/event-store.esdb.test.ts).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { EsdbEventStore } from '../src/adapters/esdb-event-store.js';
import { StoreUnavailableError } from '../src/adapters/unavailable.js';
import { ApiError } from '../src/shared/errors.js';
import { LOG_START, type NewEvent } from '../src/ports/event-store.js';
import { eventStoreContract } from './contract/event-store.contract.js';
import { FakeEventStoreDb, status, type Failure } from './support/fake-esdb.js';
import { harness, type Harness } from './support/app.js';
import { rejects } from './support/assert.js';

const meta = { requestId: 'r1', actor: 'test', time: 1_700_000_000_000 };
const ev = (type = 'Happened', data: Record<string, unknown> = {}): NewEvent => ({ id: randomUUID(), type, data, metadata: meta });

/** Polls `cond` until it holds; fails naming `what` after `ms` (a correctness deadline, not a speed one). */
async function until(cond: () => boolean, what: string, ms = 3000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.unreachable(`${what} (not within ${ms} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** `p`, or a failure naming `what` if it has not settled within `ms`. */
async function within<T>(p: Promise<T>, what: string, ms = 3000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

// --- calls left open ----------------------------------------------------------------------

/**
 * The client's own list of gRPC calls it has not seen end (`disposableStreams`, private to
 * it): a call left open stays there until `dispose()`.
 */
const clientCallsOpen = (store: EsdbEventStore) =>
  (store as unknown as { client: { disposableStreams: Set<unknown> } }).client.disposableStreams.size;

const noCallOpen = async (fake: FakeEventStoreDb, store: EsdbEventStore) => {
  await until(() => fake.openReads === 0, `every read call ended on the server (still open: ${fake.openReads})`);
  await until(() => clientCallsOpen(store) === 0, `every call ended in the client (still open: ${clientCallsOpen(store)})`);
  assert.ok(fake.peakOpenReads < 100, `never near the server's stream limit (peak ${fake.peakOpenReads})`);
};

const open = suite<{ fake: FakeEventStoreDb; store: EsdbEventStore }>('EventStoreDB adapter: no call left open');
open.before.each(async (ctx) => {
  // EventStoreDB's default: 100 concurrent HTTP/2 streams per connection.
  ctx.fake = await FakeEventStoreDb.start({ maxConcurrentStreams: 100 });
  // More than one HTTP/2 flow-control window (64 KiB) per read, as a real log has: a reader
  // that stops early leaves the server blocked mid-call, the call open.
  for (let i = 0; i < 300; i++) ctx.fake.appendExternal(`thing-${i % 7}`, 'ThingHappened', { i, pad: 'x'.repeat(1200) });
  ctx.store = new EsdbEventStore(ctx.fake.url);
});
open.after.each(async (ctx) => {
  await ctx.store.close();
  ctx.fake.stop();
});

open('200 headPosition calls (as /readyz makes) all answer, and leave no call open', async ({ fake, store }) => {
  // System events after the last of ours: headPosition skips them, reading on past them.
  fake.appendExternal('$stats-127.0.0.1:2113', '$statsCollected');
  fake.appendExternal('$settings', '$settings');
  const head = fake.log.filter((e) => !e.type.startsWith('$')).at(-1)!;
  for (let i = 1; i <= 200; i++) {
    const p = await within(store.headPosition(), `headPosition call ${i} (open calls on the server: ${fake.openReads})`);
    assert.is(p.split('/')[0], head.position.toString().padStart(20, '0'));
  }
  await noCallOpen(fake, store);
});

open('200 readAll calls that stop early (maxCount) all answer, and leave no call open', async ({ fake, store }) => {
  let after = LOG_START;
  for (let i = 1; i <= 200; i++) {
    const batch = await within(store.readAll({ after, maxCount: 1 }), `readAll call ${i} (open calls on the server: ${fake.openReads})`);
    assert.is(batch.length, 1);
    assert.is(batch[0]!.data.i, i - 1, 'in log order, after the position given');
    after = batch[0]!.position;
  }
  await noCallOpen(fake, store);
});

open('reads of streams that do not exist and reads to the end leave no call open either', async ({ fake, store }) => {
  for (let i = 0; i < 200; i++) assert.equal(await within(store.readStream(`nothing-${i}`), `readStream ${i}`), []);
  assert.is((await store.readStream('thing-3')).length, 43);
  assert.is((await store.readAll()).length, 300);
  await noCallOpen(fake, store);
});

// --- error classes ------------------------------------------------------------------------

const errors = suite<{ fake: FakeEventStoreDb; store: EsdbEventStore }>('EventStoreDB adapter: each error class maps to its ApiError');
errors.before.each(async (ctx) => {
  ctx.fake = await FakeEventStoreDb.start();
  ctx.store = new EsdbEventStore(ctx.fake.url);
  // Connected, and the server's features known, before the failures start.
  await ctx.store.append('warm-up', [ev()], 'any');
});
errors.after.each(async (ctx) => {
  await ctx.store.close();
  ctx.fake.stop();
});

const unavailable = (e: unknown, what: string) => {
  assert.instance(e, StoreUnavailableError, `${what}: ${String(e)}`);
  assert.instance(e, ApiError);
  assert.is((e as ApiError).status, 'UNAVAILABLE', what);
  assert.is((e as ApiError).httpStatus, 503, what);
};

errors('the server\'s statuses on reads: deadline, unavailable, not leader, cancelled, timeout are 503 UNAVAILABLE', async ({ fake, store }) => {
  const cases: Array<[string, Failure]> = [
    ['deadline exceeded', { status: status.DEADLINE_EXCEEDED }],
    ['unavailable', { status: status.UNAVAILABLE, details: 'Server is shutting down' }],
    // How EventStoreDB says it: NOT_FOUND with the exception and the leader's endpoint; the
    // client reconnects there (here: the same fake).
    [
      'not leader',
      { status: status.NOT_FOUND, details: 'Leader info available', metadata: { exception: 'not-leader', 'leader-endpoint-host': '127.0.0.1', 'leader-endpoint-port': String(fake.port) } },
    ],
    ['cancelled by the server', { status: status.CANCELLED, details: 'Call canceled by the server' }],
    ['server timeout (ABORTED)', { status: status.ABORTED, details: 'Operation timed out' }],
  ];
  const reads: Array<[string, () => Promise<unknown>]> = [
    ['headPosition', () => store.headPosition()],
    ['readAll', () => store.readAll({ maxCount: 10 })],
    ['readStream', () => store.readStream('warm-up')],
  ];
  for (const [kind, failure] of cases) {
    for (const [name, read] of reads) {
      fake.failNext('read', failure);
      unavailable(await rejects(within(read(), `${name} on ${kind}`)), `${name} on ${kind}`);
      // And the next call works: the client reconnected by itself.
      assert.is((await within(store.readStream('warm-up'), `readStream after ${kind}`)).length, 1, `answers again after ${kind}`);
    }
  }
});

errors('appends: a commit timeout, a lost connection, not leader, a failed server probe are 503; too large is 413', async ({ fake, store }) => {
  fake.failNext('append', { appendError: 'timeout' });
  unavailable(await rejects(store.append('a', [ev()], 'any')), 'append on the server\'s commit timeout');

  fake.failNext('append', { status: status.UNAVAILABLE, details: 'connection lost' });
  unavailable(await rejects(store.append('a', [ev()], 'any')), 'append on a lost connection');

  fake.failNext('append', {
    status: status.NOT_FOUND,
    details: 'Leader info available',
    metadata: { exception: 'not-leader', 'leader-endpoint-host': '127.0.0.1', 'leader-endpoint-port': String(fake.port) },
  });
  unavailable(await rejects(store.append('a', [ev()], 'any')), 'append on not leader');

  // After a reconnection the client asks the server's features again; that call failing
  // reaches the caller as the raw gRPC error.
  fake.failNext('features', { status: status.UNAVAILABLE, details: 'connection lost' });
  unavailable(await rejects(store.append('a', [ev()], 'any')), 'append when the server probe fails');

  fake.failNext('append', { appendError: 'max-append-size', maxAppendSize: 1_048_576 });
  const big = (await rejects(store.append('a', [ev()], 'any'))) as ApiError;
  assert.instance(big, ApiError);
  assert.is(big.status, 'INVALID_ARGUMENT');
  assert.is(big.httpStatus, 413);
  assert.match(big.message, /1048576 bytes/);

  const ok = await within(store.append('a', [ev()], 'any'), 'append after the failures');
  assert.ok(ok.nextRevision >= 0, 'appends again');
});

errors('what is not a store outage stays an internal error (500), not UNAVAILABLE', async ({ fake, store }) => {
  fake.failNext('read', { status: status.INTERNAL, details: 'something broke' });
  const e = await rejects(store.readAll());
  assert.not.instance(e, ApiError, 'INTERNAL: logged with its cause, answered 500');
});

// --- appends ------------------------------------------------------------------------------

const appends = suite<{ fake: FakeEventStoreDb; store: EsdbEventStore }>('EventStoreDB adapter: appends');
appends.before.each(async (ctx) => {
  ctx.fake = await FakeEventStoreDb.start();
  ctx.store = new EsdbEventStore(ctx.fake.url);
});
appends.after.each(async (ctx) => {
  await ctx.store.close();
  ctx.fake.stop();
});

appends('an append is one round trip: nothing is read back, revision and position come from the answer', async ({ fake, store }) => {
  const first = await store.append('doc-1', [ev('A'), ev('B')], 'no_stream');
  const second = await store.append('doc-1', [ev('C')], 1);
  assert.is(fake.calls.read, 0, 'no read after an append');
  assert.is(first.nextRevision, 1);
  assert.is(second.nextRevision, 2);
  const recorded = fake.log.filter((e) => e.stream === 'doc-1');
  assert.is(first.position, `${recorded[1]!.position.toString().padStart(20, '0')}/${recorded[1]!.position.toString().padStart(20, '0')}`);
  assert.ok(second.position > first.position);
  assert.equal((await store.readStream('doc-1')).map((e) => e.type), ['A', 'B', 'C']);
});

appends('a read failing right after a committed append does not report the append as failed', async ({ fake, store }) => {
  fake.failNext('read', { status: status.UNAVAILABLE });
  const r = await store.append('doc-2', [ev()], 'no_stream');
  assert.is(r.nextRevision, 0);
  assert.is(fake.log.filter((e) => e.stream === 'doc-2').length, 1);
});

appends('a wrong expected revision is the port\'s WrongExpectedRevisionError', async ({ store }) => {
  await store.append('doc-3', [ev()], 'no_stream');
  const e = (await rejects(store.append('doc-3', [ev()], 'no_stream'))) as { name: string; actual: number };
  assert.is(e.name, 'WrongExpectedRevisionError');
  assert.is(e.actual, 0);
});

// --- notifications ------------------------------------------------------------------------

const follow = suite<{ fake: FakeEventStoreDb; store: EsdbEventStore }>('EventStoreDB adapter: onAppended');
follow.before.each(async (ctx) => {
  ctx.fake = await FakeEventStoreDb.start();
  ctx.store = new EsdbEventStore(ctx.fake.url, { resubscribeDelayMs: 10 });
});
follow.after.each(async (ctx) => {
  await ctx.store.close();
  ctx.fake.stop();
});

follow('an append right after onAppended is announced, though the subscription is placed after it', async ({ fake, store }) => {
  // The server places a subscription "from the end" where it is when the request arrives:
  // held here until after the append, as a slow network would.
  fake.holdSubscriptions = true;
  const seen: string[] = [];
  const off = store.onAppended((p) => seen.push(p));
  const r = await store.append('doc-1', [ev()], 'no_stream');
  assert.ok(seen.includes(r.position), `announced at once with its position (seen ${JSON.stringify(seen)})`);
  fake.releaseSubscriptions();
  off();
});

follow('another writer\'s event committed before the subscription is placed still wakes the followers', async ({ fake, store }) => {
  fake.holdSubscriptions = true;
  let wakes = 0;
  const off = store.onAppended(() => wakes++);
  await until(() => fake.calls.subscribe === 1, 'the subscription request reached the server');
  fake.appendExternal('other-writer', 'Happened');
  assert.is(wakes, 0);
  fake.releaseSubscriptions();
  // The subscription starts after that event: only a wake on its confirmation makes the
  // followers read (from their checkpoints) and find it.
  await until(() => wakes > 0, 'the followers were woken once the subscription was placed');
  off();
});

follow('the subscription is re-established when the server ends it cleanly, and after an error, continuing after the last event', async ({ fake, store }) => {
  const seen: string[] = [];
  const off = store.onAppended((p) => seen.push(p));
  await until(() => fake.liveSubscriptions === 1, 'subscribed');
  const a = fake.appendExternal('other', 'A');
  const pos = (e: { position: bigint }) => `${e.position.toString().padStart(20, '0')}/${e.position.toString().padStart(20, '0')}`;
  await until(() => seen.includes(pos(a)), 'event A announced');

  // A clean end (status OK): the client's stream just ends and closes, no error.
  fake.endSubscriptions();
  await until(() => fake.calls.subscribe === 2 && fake.liveSubscriptions === 1, 'resubscribed after a clean end');
  assert.is(fake.subscriptionStarts[1], a.position, 'continues after the last event it saw');
  const b = fake.appendExternal('other', 'B');
  await until(() => seen.includes(pos(b)), 'event B announced on the new subscription');

  // An error: the same.
  fake.endSubscriptions({ status: status.UNAVAILABLE, details: 'server restarting' });
  const c = fake.appendExternal('other', 'C');
  await until(() => fake.calls.subscribe === 3 && fake.liveSubscriptions === 1, 'resubscribed after an error');
  await until(() => seen.includes(pos(c)), 'event C, committed while no subscription was open, announced after resubscribing');
  off();
});

follow('a subscription that fails to start is retried; after the last listener leaves nothing is re-established', async ({ fake, store }) => {
  fake.failNext('subscribe', { status: status.UNAVAILABLE });
  const off = store.onAppended(() => {});
  await until(() => fake.calls.subscribe === 2 && fake.liveSubscriptions === 1, 'subscribed on the second attempt');
  off();
  off();
  await until(() => fake.liveSubscriptions === 0, 'unsubscribed when the last listener left');
  fake.endSubscriptions();
  // A chance for a resubscription that must not happen (cannot fail spuriously: it checks for none).
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.is(fake.calls.subscribe, 2, 'no resubscription without listeners');
});

// --- the service over it ------------------------------------------------------------------

const api = suite<{ fake: FakeEventStoreDb; h: Harness }>('the service with EVENTSTORE_URL (fake server)');
api.before.each(async (ctx) => {
  ctx.fake = await FakeEventStoreDb.start({ maxConcurrentStreams: 100 });
  for (let i = 0; i < 300; i++) ctx.fake.appendExternal(`thing-${i % 7}`, 'ThingHappened', { i, pad: 'x'.repeat(1200) });
  ctx.h = await harness({ EVENTSTORE_URL: ctx.fake.url });
});
api.after.each(async (ctx) => {
  await ctx.h.close();
  ctx.fake.stop();
});

api('/readyz answers 200 probes in a row (each reads the log head)', async ({ fake, h }) => {
  await h.tenant();
  for (let i = 1; i <= 200; i++) {
    const res = await within(h.app.inject({ method: 'GET', url: '/readyz' }), `probe ${i} (open calls on the server: ${fake.openReads})`);
    assert.is(res.statusCode, 200, `probe ${i}: ${res.body}`);
  }
});

api('a write while the node is not the leader answers 503 UNAVAILABLE with the envelope, then works again', async ({ fake, h }) => {
  await h.tenant();
  fake.failNext('append', {
    status: status.NOT_FOUND,
    details: 'Leader info available',
    metadata: { exception: 'not-leader', 'leader-endpoint-host': '127.0.0.1', 'leader-endpoint-port': String(fake.port) },
  });
  const r = await h.post('/v2/workspace/create', { ownerEmail: 'owner@example.com' });
  assert.is(r.status, 503);
  assert.equal(r.body, { error: { status: 'UNAVAILABLE', message: 'The event store is unavailable right now; the service reconnects by itself, try again shortly.' } });
  assert.is((await h.post('/v2/workspace/create', { ownerEmail: 'owner@example.com' })).status, 200);
});

// --- a cluster's seed list --------------------------------------------------------------

const urls = suite('EventStoreDB adapter: a cluster\'s seed list');

urls('a cluster\'s seed list reaches the cluster: discovery through the seeds that answer', async () => {
  const fake = await FakeEventStoreDb.start();
  const dead = await freePort();
  const store = new EsdbEventStore(`esdb://127.0.0.1:${dead},127.0.0.1:${fake.port}?tls=false&discoveryInterval=10`);
  try {
    const r = await within(store.append('doc-1', [ev()], 'no_stream'), 'append through discovery');
    assert.is(r.nextRevision, 0);
    assert.is((await store.readStream('doc-1')).length, 1);
    assert.ok(fake.calls.gossip >= 1, 'the cluster was asked for its members');
  } finally {
    await store.close();
    fake.stop();
  }
});

urls('appends recover when the cluster was unreachable at the first append', async () => {
  const [a, b] = [await freePort(), await freePort()];
  const store = new EsdbEventStore(`esdb://127.0.0.1:${a},127.0.0.1:${b}?tls=false&maxDiscoverAttempts=2&discoveryInterval=10`);
  let fake: FakeEventStoreDb | undefined;
  try {
    unavailable(await rejects(store.append('doc-1', [ev()], 'any')), 'append with no seed answering');
    fake = await FakeEventStoreDb.start({ port: b });
    // The client keeps its failed server probe and fails every append with it; the adapter
    // replaces the client. A couple of attempts, as a caller retrying a 503 makes.
    let appended = false;
    for (let attempt = 0; attempt < 20 && !appended; attempt++) {
      try {
        await store.append('doc-1', [ev()], 'any');
        appended = true;
      } catch (e) {
        unavailable(e, `append attempt ${attempt} once the cluster is back`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    assert.ok(appended, 'appends work again once the cluster is reachable');
    assert.is(fake.log.filter((e) => e.stream === 'doc-1').length, 1);
  } finally {
    await store.close();
    fake?.stop();
  }
});

// The port contract through the adapter and the real client, over the fake: checks that the
// fake imitates what the contract needs, so the tests above exercise the adapter as a server
// would. Not evidence about EventStoreDB itself (test/event-store.esdb.test.ts is).
let contractFake: FakeEventStoreDb;
const overFake = eventStoreContract('EventStoreDB adapter over the fake server (not a real server)', async () => {
  contractFake ??= await FakeEventStoreDb.start();
  return new EsdbEventStore(contractFake.url);
});
overFake.after(() => contractFake?.stop());

overFake.run();
open.run();
errors.run();
appends.run();
follow.run();
api.run();
urls.run();
