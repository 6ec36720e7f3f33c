/**
 * Cross-process notices (src/runtime/notices.ts), in process: sending is coalesced (a burst
 * of appends is one message, a burst of batches one message with the furthest position), the
 * primary routes each kind to the children that wait on it, the decorated event store
 * announces its appends and hands other processes' to its followers, and two channels on one
 * data directory hear each other. The process trees are in notices.process.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './support/app.js';
import { BaseChannel, NOTICE_MESSAGE, dataDirChannel, relayNotice, withNotices, type NoticeMessage } from '../src/runtime/notices.js';
import { SqliteEventStore } from '../src/adapters/sqlite-event-store.js';
import { waiter } from './support/wait.js';

class Recording extends BaseChannel {
  readonly sent: NoticeMessage[] = [];
  protected send(m: NoticeMessage) {
    this.sent.push(m);
  }
  hearAppended() {
    this.emitAppended();
  }
  close() {}
}

const turn = () => new Promise((r) => setImmediate(r));
const silent = { error() {}, warn() {}, info() {} };

const until = waiter(10_000, 10);

test('a burst is one message: 100 appends one appended, three batches one applied with the furthest position', async () => {
  const c = new Recording();
  for (let i = 0; i < 100; i++) c.appended();
  c.applied('005');
  c.applied('009');
  c.applied('007');
  assert.equal(c.sent, [], 'nothing sent before the turn ends');
  await turn();
  assert.equal(c.sent, [
    { type: NOTICE_MESSAGE, kind: 'appended' },
    { type: NOTICE_MESSAGE, kind: 'applied', position: '009' },
  ]);
  c.appended();
  await turn();
  assert.is(c.sent.length, 3, 'the next burst sends again');
});

test('the primary sends appended to the background process only and applied to the API processes only', () => {
  const got: string[] = [];
  const children = [
    { role: 'api' as const, send: (m: NoticeMessage) => got.push(`api1:${m.kind}`) },
    { role: 'worker' as const, send: (m: NoticeMessage) => got.push(`worker:${m.kind}`) },
    { role: 'api' as const, send: (m: NoticeMessage) => got.push(`api2:${m.kind}`) },
  ];
  relayNotice({ type: NOTICE_MESSAGE, kind: 'appended' }, children);
  relayNotice({ type: NOTICE_MESSAGE, kind: 'applied', position: '3' }, children);
  assert.equal(got, ['worker:appended', 'api1:applied', 'api2:applied']);
});

test('withNotices: an append is announced after it commits; heard appends reach onAppended listeners only when hearing', async () => {
  const dir = tempDir('collab-notices-unit-');
  const store = new SqliteEventStore(path.join(dir, 'events.db'));
  try {
    const hearing = new Recording();
    const events = withNotices(store, [hearing], true);
    let heard = 0;
    const off = events.onAppended(() => heard++);
    await events.append('s-1', [{ id: 'e1', type: 'T', data: {}, metadata: { requestId: 'r', actor: 'cli', time: 1 } }], 'no_stream');
    const ownNotifications = heard;
    assert.ok(ownNotifications >= 1, 'the store still tells its own listeners');
    await turn();
    assert.equal(hearing.sent, [{ type: NOTICE_MESSAGE, kind: 'appended' }]);
    hearing.hearAppended();
    assert.is(heard, ownNotifications + 1, 'another process\'s append reaches the listener');
    off();
    hearing.hearAppended();
    assert.is(heard, ownNotifications + 1, 'unsubscribed');

    const deaf = new Recording();
    let heardDeaf = 0;
    withNotices(store, [deaf], false).onAppended(() => heardDeaf++);
    deaf.hearAppended();
    assert.is(heardDeaf, 0);
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('two channels on one data directory: each hears what the other announces', async () => {
  const dir = tempDir('collab-notices-dir-unit-');
  const a = dataDirChannel(dir, silent)!;
  const b = dataDirChannel(dir, silent)!;
  try {
    let appended = 0;
    const applied: Array<string | null> = [];
    b.onAppended(() => appended++);
    b.onApplied((p) => applied.push(p));
    a.appended();
    await until('b hears appended', () => appended > 0);
    a.applied('0042');
    await until('b hears applied', () => applied.length > 0);
    assert.equal(applied, [null], 'no position crosses the directory: the listener re-reads');
  } finally {
    a.close();
    b.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
