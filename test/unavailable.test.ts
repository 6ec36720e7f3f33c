/**
 * A store that is down: the production adapters turn their clients' connection errors into
 * UNAVAILABLE (checked here against closed ports with the real clients: no server needed),
 * and every route answers 503 with the failure envelope and a clear message. Plus the
 * EventStoreDB adapter's position and stream-name encodings.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { MongoReadStore } from '../src/adapters/mongo-read-store.js';
import { EsdbEventStore, decodeEsdbPosition, decodeStreamName, encodeEsdbPosition, encodeStreamName } from '../src/adapters/esdb-event-store.js';
import { StoreUnavailableError } from '../src/adapters/unavailable.js';
import { harness } from './support/app.js';
import { rejects } from './support/assert.js';

test('MongoDB unreachable: reads and transactions fail with UNAVAILABLE', async () => {
  const m = new MongoReadStore('mongodb://127.0.0.1:1/collab?serverSelectionTimeoutMS=300');
  try {
    const e = (await rejects(m.get('documents', 'x'))) as StoreUnavailableError;
    assert.instance(e, StoreUnavailableError);
    assert.is(e.status, 'UNAVAILABLE');
    assert.is(e.httpStatus, 503);
    assert.instance(await rejects(m.transaction((tx) => tx.upsert('documents', { _id: 'x' }))), StoreUnavailableError);
  } finally {
    await m.close();
  }
});

test('EventStoreDB unreachable: append, reads and head fail with UNAVAILABLE', async () => {
  const es = new EsdbEventStore('esdb://127.0.0.1:1?tls=false');
  try {
    const meta = { requestId: 'r', actor: 'test', time: 0 };
    assert.instance(await rejects(es.append('s', [{ id: randomUUID(), type: 'T', data: {}, metadata: meta }], 'any')), StoreUnavailableError);
    assert.instance(await rejects(es.readStream('s')), StoreUnavailableError);
    assert.instance(await rejects(es.readAll({ maxCount: 1 })), StoreUnavailableError);
    assert.instance(await rejects(es.headPosition()), StoreUnavailableError);
  } finally {
    await es.close();
  }
});

test('while a store is down every request answers 503 UNAVAILABLE with the envelope', async () => {
  const h = await harness();
  try {
    const t = await h.tenant();
    const real = h.services.generations.get.bind(h.services.generations);
    h.services.generations.get = (() => Promise.reject(new StoreUnavailableError('read store', new Error('connection refused')))) as typeof real;
    const r = await h.post('/v2/organizations/get', {}, t.headers);
    assert.is(r.status, 503);
    assert.equal(r.body, { error: { status: 'UNAVAILABLE', message: 'The read store is unavailable right now; the service reconnects by itself, try again shortly.' } });
    h.services.generations.get = real;
    assert.is((await h.post('/v2/organizations/get', {}, t.headers)).status, 200, 'answers again once the store is back');
  } finally {
    await h.close();
  }
});

test('EventStoreDB positions order as strings; stream names escape reversibly', () => {
  const a = encodeEsdbPosition({ commit: 9n, prepare: 9n });
  const b = encodeEsdbPosition({ commit: 10n, prepare: 3n });
  assert.ok(a < b);
  assert.equal(decodeEsdbPosition(b), { commit: 10n, prepare: 3n });
  assert.is(decodeEsdbPosition(''), null);
  for (const s of ['document-["k","o","d"]', 'document-["k","ünï\u0000cödé"]', 'x-["100%","\n\t"]', '%41']) {
    const enc = encodeStreamName(s);
    assert.not.match(enc, /[\u0000-\u001f]/);
    assert.is(decodeStreamName(enc), s);
  }
  assert.is(encodeStreamName('document-["k","o"]'), 'document-["k","o"]', 'ordinary names unchanged');
});

test.run();
