/**
 * The embedded read store's document cache (src/adapters/sqlite-read-store.ts): reads never
 * show less than this process committed, or than another connection committed before the
 * request began (ReadStore.beginRequest).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { tempDir } from './support/app.js';

const s = suite<{ a: SqliteReadStore; b: SqliteReadStore }>('read store cache (sqlite)');
s.before.each(async (ctx) => {
  const file = path.join(tempDir('collab-cache-'), 'read.db');
  ctx.a = new SqliteReadStore(file);
  ctx.b = new SqliteReadStore(file);
  await ctx.a.ensureIndexes([{ collection: 'things', fields: ['tenant', 'seq'] }]);
});
s.after.each(async ({ a, b }) => {
  await a.close();
  await b.close();
});

s('own commits show at once: get, getMany, find, absent documents included', async ({ a }) => {
  assert.is(await a.get('things', 'x'), null);
  assert.equal(await a.getMany('things', ['x', 'y']), []);
  assert.equal(await a.find('things', { tenant: 'T' }, { sort: 'seq' }), []);
  await a.transaction((tx) => tx.upsert('things', { _id: 'x', tenant: 'T', seq: 2, v: 1 }));
  assert.equal(await a.get('things', 'x'), { _id: 'x', tenant: 'T', seq: 2, v: 1 });
  await a.transaction((tx) => tx.upsert('things', { _id: 'y', tenant: 'T', seq: 1, v: 2 }));
  assert.equal((await a.getMany('things', ['x', 'y', 'z'])).map((d) => d._id), ['x', 'y']);
  assert.equal((await a.find('things', { tenant: 'T' }, { sort: 'seq' })).map((d) => d._id), ['y', 'x']);
  await a.transaction(async (tx) => {
    await tx.patch('things', 'x', { v: 3 });
    await tx.delete('things', 'y');
  });
  assert.is((await a.get<{ _id: string; v: number }>('things', 'x'))!.v, 3);
  assert.equal(await a.getMany('things', ['y']), []);
  assert.equal((await a.find('things', { tenant: 'T' }, { sort: 'seq' })).map((d) => d._id), ['x']);
});

s('a rolled-back transaction leaves nothing behind in the cache', async ({ a }) => {
  assert.is(await a.get('things', 'r'), null);
  await a
    .transaction(async (tx) => {
      await tx.upsert('things', { _id: 'r', tenant: 'T', seq: 1 });
      throw new Error('no');
    })
    .catch(() => undefined);
  assert.is(await a.get('things', 'r'), null);
});

s("another connection's commit is seen by the next request", async ({ a, b }) => {
  a.beginRequest();
  assert.is(await a.get('things', 'o'), null);
  assert.equal(await a.find('things', { tenant: 'T' }), []);
  await b.transaction((tx) => tx.upsert('things', { _id: 'o', tenant: 'T', seq: 1 }));
  a.beginRequest();
  assert.equal(await a.get('things', 'o'), { _id: 'o', tenant: 'T', seq: 1 });
  assert.equal((await a.find('things', { tenant: 'T' })).map((d) => d._id), ['o']);
  await b.transaction((tx) => tx.delete('things', 'o'));
  a.beginRequest();
  assert.is(await a.get('things', 'o'), null);
});

s('and, without a request, by the next turn of the event loop', async ({ a, b }) => {
  assert.is(await a.get('things', 'p'), null);
  await b.transaction((tx) => tx.upsert('things', { _id: 'p', tenant: 'T', seq: 1 }));
  await new Promise((r) => setImmediate(r));
  assert.ok(await a.get('things', 'p'));
});

s('a find is answered from the ids kept for it until a commit: pages, cursors and filters are told apart', async ({ a, b }) => {
  await a.transaction((tx) => tx.bulk([1, 2, 3, 4].map((seq) => ({ op: 'upsert' as const, collection: 'things', doc: { _id: `k${seq}`, tenant: 'K', seq } }))));
  a.beginRequest();
  const page = (opts: object) => a.find('things', { tenant: 'K' }, { sort: 'seq', limit: 2, ...opts }).then((r) => r.map((d) => d._id));
  assert.equal(await page({}), ['k1', 'k2']);
  assert.equal(await page({ after: { value: 2, id: 'k2' } }), ['k3', 'k4']);
  assert.equal(await a.find('things', { tenant: 'L' }), []);
  // Another connection's commit within the same request and turn is not looked for (the
  // documented contract): the kept ids answer, which shows they are used.
  await b.transaction((tx) => tx.upsert('things', { _id: 'k0', tenant: 'K', seq: 0 }));
  assert.equal(await page({}), ['k1', 'k2']);
  // The next request sees it, through a fresh index read.
  a.beginRequest();
  assert.equal(await page({}), ['k0', 'k1']);
  assert.equal(await page({ after: { value: 2, id: 'k2' } }), ['k3', 'k4']);
  // An own commit drops the kept ids at once.
  await a.transaction((tx) => tx.delete('things', 'k0'));
  assert.equal(await page({}), ['k1', 'k2']);
});

s('cached documents are frozen: a reader cannot change what the next one sees', async ({ a }) => {
  await a.transaction((tx) => tx.upsert('things', { _id: 'f', tenant: 'T', seq: 1, nested: { list: [1] } }));
  const doc = (await a.get<{ _id: string; nested: { list: number[] } }>('things', 'f'))!;
  assert.throws(() => doc.nested.list.push(2));
  assert.equal((await a.get<{ _id: string; nested: { list: number[] } }>('things', 'f'))!.nested.list, [1]);
});

s('a bounded cache keeps answering correctly past its size', async () => {
  const file = path.join(tempDir('collab-cache-'), 'small.db');
  const store = new SqliteReadStore(file, { cacheSize: 3 });
  await store.transaction(async (tx) => {
    for (let i = 0; i < 10; i++) await tx.upsert('things', { _id: `k${i}`, i });
  });
  for (let round = 0; round < 2; round++) {
    const docs = await store.getMany<{ _id: string; i: number }>('things', Array.from({ length: 12 }, (_, i) => `k${i}`));
    assert.equal(docs.map((d) => d.i), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (let i = 0; i < 10; i++) assert.is((await store.get<{ _id: string; i: number }>('things', `k${i}`))!.i, i);
  }
  await store.close();
});

s.run();
