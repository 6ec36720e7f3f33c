/**
 * A connection whose answer never comes (the host's link cut with a statement in flight: the
 * kernel retransmits it with backoff and the answer may come minutes later, or never) must not
 * hold the process: the statement fails after the statement timeout plus a slack, as the store
 * being unavailable, and its connection is discarded, never reused, so the next statement goes
 * on a new one and gets its own answer. Held deterministically with a TCP relay on loopback in
 * front of a real PostgreSQL server that stops relaying on demand (bytes kept, none lost, as
 * a link that is down), then relays what it kept (the late answer arrives).
 *
 * Before the fix (postgres-common.ts, ANSWER_SLACK_MS) both reads below waited for as long as
 * the relay was frozen: the several-hosts suite's "api1 to acknowledge writes again once its
 * link is back" failed that way.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PostgresReadStore } from '../src/adapters/postgres-read-store.js';
import { StoreUnavailableError } from '../src/adapters/unavailable.js';
import type { LogPosition } from '../src/ports/event-store.js';
import { freshDatabase } from './support/postgres.js';
import { relay } from './support/relay.js';

/** `p`'s outcome, or a failure naming what it waited for after `ms` (the bug this guards is a wait forever). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`still waiting after ${ms} ms: ${what}`)), ms)));
  return Promise.race([p, guard]).finally(() => clearTimeout(timer));
}

/** A new database on the shared server, and its URL through a relay of its own. */
async function relayedDatabase(prefix: string) {
  const url = new URL(await freshDatabase(prefix));
  const r = await relay(url.hostname, Number(url.port || 5432));
  const through = new URL(url);
  through.hostname = '127.0.0.1';
  through.port = String(r.port);
  return { r, through };
}

test('a statement whose answer never comes fails as unavailable, and its connection is never reused', async () => {
  const { r, through } = await relayedDatabase('stall');
  // A statement timeout of 300 ms: the client gives an answer up 5.3 s after its statement.
  const store = new PostgresReadStore(through.toString(), { statementTimeoutMs: 300, poolSize: 2 });
  try {
    const [a, b] = ['1', '2'] as LogPosition[];
    await store.transaction(async (tx) => tx.setCheckpoint('p', a!, null));
    assert.is(await store.getCheckpoint('p'), a);

    // A read outside a transaction (a pooled statement).
    r.freeze();
    const before = r.counts();
    const outcome = await within(store.getCheckpoint('p').then(() => 'answered', (e: unknown) => e), 60_000, 'a read through a frozen link');
    assert.instance(outcome, StoreUnavailableError, String(outcome));
    // The relay has not passed a byte since: the process gave the connection up itself.
    await within(
      (async () => {
        while (r.counts().closed === before.closed) await new Promise((res) => setTimeout(res, 20));
      })(),
      10_000,
      'the stalled connection to be closed by the process',
    );

    // A transaction's statement (a connection taken for several: rolled back on, it would wait again).
    const tx = store.transaction(async (t) => t.get('things', 'x')).then(() => 'answered', (e: unknown) => e);
    assert.instance(await within(tx, 60_000, 'a transaction through a frozen link'), StoreUnavailableError);

    // The link comes back with every late answer: new statements get their own answers on new connections.
    r.thaw();
    await within(store.transaction(async (t) => t.setCheckpoint('p', b!, a!)), 30_000, 'a write once the link is back');
    assert.is(await within(store.getCheckpoint('p'), 30_000, 'a read once the link is back'), b);
    assert.ok(r.counts().opened > before.opened, `new connections were opened (${JSON.stringify(r.counts())})`);
  } finally {
    r.thaw();
    await store.close();
    await r.close();
  }
});

test('the statements every wait hangs on (the change signal, the follower\'s checkpoints) give up within seconds, whatever the statement timeout', async () => {
  const { r, through } = await relayedDatabase('stall_quick');
  // A statement timeout of two minutes: with only the general bound, each read below would
  // wait two minutes and five seconds (past this test's guard).
  const store = new PostgresReadStore(through.toString(), { statementTimeoutMs: 120_000, poolSize: 4 });
  try {
    const a = '1' as LogPosition;
    await store.transaction(async (tx) => tx.setCheckpoint('p', a, null));
    assert.is(await store.getCheckpoint('p'), a);
    const signal = await store.readEpoch();
    assert.type(signal, 'number');
    r.freeze();
    const checkpoint = store.getCheckpoint('p').then(() => 'answered', (e: unknown) => e);
    assert.instance(await within(checkpoint, 60_000, 'a checkpoint read through a frozen link'), StoreUnavailableError);
    const epoch = Promise.resolve(store.readEpoch()).then(() => 'answered', (e: unknown) => e);
    const got = await within(epoch, 60_000, 'the change signal through a frozen link');
    assert.instance(got, StoreUnavailableError, String(got));
    r.thaw();
    assert.is(await within(store.getCheckpoint('p'), 30_000, 'a checkpoint read once the link is back'), a);
  } finally {
    r.thaw();
    await store.close();
    await r.close();
  }
});

test.run();
