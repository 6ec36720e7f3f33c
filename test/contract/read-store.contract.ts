/**
 * The read store contract, written once and run against every adapter: the embedded one
 * always (read-store.sqlite.test.ts), MongoDB whenever MONGODB_URL is set.
 *
 * `openPeer`, where given, opens a second store on the same data, as another process would:
 * the cases that need two transactions interleaved across processes run only then. (The
 * embedded store cannot interleave them in one process: its writer takes SQLite's write lock
 * at BEGIN and a second connection waits for it synchronously, which is also why the write
 * skew those cases look for cannot happen there.)
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { rejects } from '../support/assert.js';
import { CheckpointConflictError, type Doc, type ReadStore } from '../../src/ports/read-store.js';

export interface ReadStoreContractOptions {
  /** A second store on the same data as the last `open()` (another process's view). */
  openPeer?: () => Promise<ReadStore>;
}

/** Settles `p`, or fails once `ms` have passed (a correctness deadline: "ends promptly", not a speed check). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer!: NodeJS.Timeout;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms`)), ms);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

const cpName = () => `cp-${Math.random().toString(36).slice(2)}`;

export function readStoreContract(name: string, open: () => Promise<ReadStore>, options: ReadStoreContractOptions = {}) {
  const s = suite<{ store: ReadStore }>(`read store contract: ${name}`);
  s.before.each(async (ctx) => {
    ctx.store = await open();
    await ctx.store.ensureIndexes([{ collection: 'things', fields: ['tenant', 'kind', 'seq'] }]);
  });
  s.after.each(async (ctx) => {
    await ctx.store.dropCollection('things');
    await ctx.store.close();
  });

  const seed = (store: ReadStore) =>
    store.transaction(async (tx) => {
      for (let i = 0; i < 10; i++) {
        await tx.upsert('things', { _id: `t${i}`, tenant: i < 7 ? 'A' : 'B', kind: i % 2 ? 'odd' : 'even', seq: 100 - i, flag: i === 3, nested: { v: i } });
      }
    });

  s('upsert then get; upsert replaces the whole document', async ({ store }) => {
    await store.transaction(async (tx) => {
      await tx.upsert('things', { _id: 'x', a: 1, b: 2 });
      await tx.upsert('things', { _id: 'x', a: 3 });
    });
    assert.equal(await store.get('things', 'x'), { _id: 'x', a: 3 });
    assert.is(await store.get('things', 'missing'), null);
  });

  s('a collection never written reads as empty', async ({ store }) => {
    assert.is(await store.get('never_written', 'x'), null);
    assert.equal(await store.find('never_written', {}), []);
    assert.is(await store.count('never_written', {}), 0);
  });

  s('getMany returns the existing documents in the order asked', async ({ store }) => {
    await seed(store);
    const docs = await store.getMany('things', ['t5', 'nope', 't1', 't5']);
    assert.equal(docs.map((d) => d._id), ['t5', 't1', 't5']);
    assert.equal(await store.getMany('things', []), []);
  });

  s('find by equality, sorted, with a keyset cursor', async ({ store }) => {
    await seed(store);
    const page1 = await store.find('things', { tenant: 'A', kind: 'even' }, { sort: 'seq', limit: 2 });
    assert.equal(page1.map((d) => d._id), ['t6', 't4']);
    const last = page1[1]!;
    const page2 = await store.find('things', { tenant: 'A', kind: 'even' }, { sort: 'seq', after: { value: last.seq as number, id: last._id }, limit: 2 });
    assert.equal(page2.map((d) => d._id), ['t2', 't0']);
    const page3 = await store.find('things', { tenant: 'A', kind: 'even' }, { sort: 'seq', after: { value: 100, id: 't0' }, limit: 2 });
    assert.equal(page3, []);
    assert.is(await store.count('things', { tenant: 'A' }), 7);
  });

  s('find on booleans, nested paths and null (missing)', async ({ store }) => {
    await seed(store);
    await store.transaction((tx) => tx.upsert('things', { _id: 'nulls', tenant: 'C', kind: null }));
    assert.equal((await store.find('things', { flag: true })).map((d) => d._id), ['t3']);
    assert.equal((await store.find('things', { 'nested.v': 8 })).map((d) => d._id), ['t8']);
    assert.equal((await store.find('things', { tenant: 'C', kind: null })).map((d) => d._id), ['nulls']);
    assert.equal((await store.find('things', { tenant: 'A', missingField: null })).length, 7);
  });

  s('ties on the sort field are broken by _id', async ({ store }) => {
    await store.transaction(async (tx) => {
      for (const id of ['b', 'a', 'c']) await tx.upsert('things', { _id: id, tenant: 'T', kind: 'k', seq: 1 });
    });
    const p1 = await store.find('things', { tenant: 'T' }, { sort: 'seq', limit: 2 });
    assert.equal(p1.map((d) => d._id), ['a', 'b']);
    const p2 = await store.find('things', { tenant: 'T' }, { sort: 'seq', after: { value: 1, id: 'b' } });
    assert.equal(p2.map((d) => d._id), ['c']);
  });

  s('patch sets and unsets fields, dotted paths included; false for a missing document', async ({ store }) => {
    await seed(store);
    await store.transaction(async (tx) => {
      assert.ok(await tx.patch('things', 't1', { kind: 'changed', 'nested.w': 5 }, ['flag']));
      assert.not.ok(await tx.patch('things', 'nope', { kind: 'x' }));
    });
    assert.equal(await store.get('things', 't1'), { _id: 't1', tenant: 'A', kind: 'changed', seq: 99, nested: { v: 1, w: 5 } });
    assert.is(await store.get('things', 'nope'), null);
  });

  s('delete and deleteMany', async ({ store }) => {
    await seed(store);
    await store.transaction(async (tx) => {
      assert.ok(await tx.delete('things', 't0'));
      assert.not.ok(await tx.delete('things', 't0'));
      assert.is(await tx.deleteMany('things', { tenant: 'B' }), 3);
    });
    assert.is(await store.count('things', {}), 6);
  });

  s('deleteBefore removes documents whose field is below the value', async ({ store }) => {
    await seed(store); // seq 100 - i
    const n = await store.transaction((tx) => tx.deleteBefore('things', 'seq', 95));
    assert.is(n, 4);
    assert.equal((await store.find('things', {}, { sort: 'seq' })).map((d) => d.seq), [95, 96, 97, 98, 99, 100]);
  });

  s('bulk applies every op in order', async ({ store }) => {
    await store.transaction((tx) =>
      tx.bulk([
        { op: 'upsert', collection: 'things', doc: { _id: 'a', tenant: 'Z', n: 1 } },
        { op: 'upsert', collection: 'things', doc: { _id: 'b', tenant: 'Z', n: 2 } },
        { op: 'patch', collection: 'things', id: 'a', set: { n: 10 } },
        { op: 'delete', collection: 'things', id: 'b' },
        { op: 'upsert', collection: 'things', doc: { _id: 'c', tenant: 'Y' } },
        { op: 'deleteMany', collection: 'things', filter: { tenant: 'Y' } },
      ]),
    );
    assert.equal(await store.find('things', {}), [{ _id: 'a', tenant: 'Z', n: 10 }]);
  });

  // Adapters may buffer a run of upserts (SQLite and PostgreSQL write it as multi-row
  // statements): every call must still see the calls before it, in order.
  s('long runs of upserts: later calls see them, a repeated id keeps its last document, order across collections holds', async ({ store }) => {
    await store.transaction(async (tx) => {
      for (let i = 0; i < 250; i++) await tx.upsert('things', { _id: `r${String(i).padStart(3, '0')}`, tenant: 'R', kind: 'k', seq: i });
      assert.is(await tx.count('things', { tenant: 'R' }), 250, 'a read after a run sees all of it');
      for (let i = 0; i < 3; i++) await tx.upsert('things', { _id: 'dup', tenant: 'D', seq: i });
      assert.equal(await tx.get('things', 'dup'), { _id: 'dup', tenant: 'D', seq: 2 });
      await tx.upsert('things', { _id: 'gone', tenant: 'G' });
      assert.ok(await tx.delete('things', 'gone'), 'a delete after an upsert finds the row');
      await tx.upsert('things', { _id: 'p', tenant: 'P', seq: 1 });
      assert.ok(await tx.patch('things', 'p', { seq: 2 }));
      await tx.upsert('things', { _id: 'p', tenant: 'P', seq: 3 });
      await tx.upsert('other_things', { _id: 'o1', n: 1 });
      await tx.upsert('things', { _id: 'x1', tenant: 'X' });
      await tx.upsert('other_things', { _id: 'o1', n: 2 });
      // Written by the commit, not by a read.
      for (let i = 0; i < 70; i++) await tx.upsert('things', { _id: `z${String(i).padStart(2, '0')}`, tenant: 'Z', kind: 'k', seq: i });
      await tx.upsert('things', { _id: 'dup', tenant: 'D', seq: 9 });
    });
    assert.is(await store.count('things', { tenant: 'R' }), 250);
    assert.equal((await store.find('things', { tenant: 'R', kind: 'k' }, { sort: 'seq', limit: 3 })).map((d) => d.seq), [0, 1, 2]);
    assert.is(await store.count('things', { tenant: 'Z' }), 70);
    assert.equal(await store.get('things', 'dup'), { _id: 'dup', tenant: 'D', seq: 9 });
    assert.is(await store.get('things', 'gone'), null);
    assert.equal(await store.get('things', 'p'), { _id: 'p', tenant: 'P', seq: 3 });
    assert.equal(await store.get('other_things', 'o1'), { _id: 'o1', n: 2 });
    assert.equal(await store.get('things', 'x1'), { _id: 'x1', tenant: 'X' });
    // A run pending when the transaction fails is not written, nor by the next transaction.
    await store
      .transaction(async (tx) => {
        for (let i = 0; i < 5; i++) await tx.upsert('things', { _id: `f${i}`, tenant: 'F' });
        throw new Error('boom');
      })
      .catch(() => undefined);
    await store.transaction((tx) => tx.upsert('other_things', { _id: 'o2' }));
    assert.is(await store.count('things', { tenant: 'F' }), 0);
    await store.dropCollection('other_things');
  });

  s('reads inside a transaction see pending upserts that replace, add to or leave a filter: find (sort, cursor, limit), count, get, getMany', async ({ store }) => {
    // The seed: t0..t9, tenant A for t0..t6, B after; seq 100 - i.
    await seed(store);
    await store.transaction(async (tx) => {
      await tx.upsert('things', { _id: 't1', tenant: 'B', kind: 'odd', seq: 1 }); // leaves A
      await tx.upsert('things', { _id: 't8', tenant: 'A', kind: 'even', seq: 99 }); // joins A
      await tx.upsert('things', { _id: 'n1', tenant: 'A', kind: 'odd', seq: 50 }); // new
      assert.is(await tx.count('things', { tenant: 'A' }), 8);
      assert.is(await tx.count('things', { tenant: 'A', kind: 'odd' }), 3);
      const a = await tx.find<{ _id: string; seq: number }>('things', { tenant: 'A' }, { sort: 'seq' });
      assert.equal(a.map((d) => d._id), ['n1', 't6', 't5', 't4', 't3', 't2', 't8', 't0']);
      await tx.upsert('things', { _id: 't5', tenant: 'A', kind: 'odd', seq: 10 }); // moves in the order
      const page = await tx.find<{ _id: string; seq: number }>('things', { tenant: 'A' }, { sort: 'seq', after: { value: 10, id: 't5' }, limit: 3 });
      assert.equal(page.map((d) => d._id), ['n1', 't6', 't4']);
      assert.equal((await tx.find('things', { tenant: 'B' }, { limit: 2 })).map((d) => d._id), ['t1', 't7']);
      await tx.upsert('things', { _id: 't9', tenant: 'C' });
      assert.equal(await tx.get('things', 't9'), { _id: 't9', tenant: 'C' });
      assert.equal((await tx.getMany('things', ['t9', 'nope', 't0'])).map((d) => d._id), ['t9', 't0']);
      await tx.upsert('other_things', { _id: 'o', n: 1 });
      assert.is(await tx.count('things', { tenant: 'C' }), 1, 'a read of another collection than the pending run');
      assert.is(await tx.count('other_things', {}), 1);
      // Patches and deletes beside a pending run: of a pending id, of a stored one, of another collection's.
      await tx.upsert('other_things', { _id: 'o2', n: 2 });
      assert.ok(await tx.patch('things', 't0', { kind: 'patched' }));
      assert.ok(await tx.patch('other_things', 'o2', { n: 3 }));
      await tx.upsert('things', { _id: 'n2', tenant: 'E' });
      assert.ok(await tx.patch('things', 'n2', { kind: 'x' }));
      assert.ok(await tx.patch('things', 't2', { kind: 'y' }));
      assert.not.ok(await tx.patch('things', 'nope', { kind: 'z' }));
      assert.ok(await tx.delete('things', 'n2'), 'a pending id');
      assert.not.ok(await tx.delete('things', 'n2'));
      await tx.upsert('things', { _id: 'n3', tenant: 'E' });
      assert.ok(await tx.delete('things', 't3'), 'a stored id beside a pending run');
      assert.ok(await tx.delete('things', 'n3'));
      assert.equal((await tx.find('things', { tenant: 'A', kind: 'patched' })).map((d) => d._id), ['t0']);
      assert.equal(await tx.get('other_things', 'o2'), { _id: 'o2', n: 3 });
    });
    assert.is(await store.count('things', { tenant: 'A' }), 7);
    assert.is(await store.count('things', { tenant: 'E' }), 0);
    assert.equal(await store.get('things', 't2'), { _id: 't2', tenant: 'A', kind: 'y', seq: 98, flag: false, nested: { v: 2 } });
    assert.equal(await store.get('other_things', 'o2'), { _id: 'o2', n: 3 });
    assert.equal(await store.get('things', 't9'), { _id: 't9', tenant: 'C' });
    assert.equal(await store.get('other_things', 'o'), { _id: 'o', n: 1 });
    await store.dropCollection('other_things');
  });

  s('a failing transaction leaves nothing behind', async ({ store }) => {
    await rejects(
      store.transaction(async (tx) => {
        await tx.upsert('things', { _id: 'ghost', tenant: 'G' });
        await tx.upsert('other_things', { _id: 'ghost' });
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.is(await store.get('things', 'ghost'), null);
    assert.is(await store.get('other_things', 'ghost'), null);
    // The store is still usable, including the collection created and rolled back.
    await store.transaction((tx) => tx.upsert('other_things', { _id: 'real' }));
    assert.ok(await store.get('other_things', 'real'));
    await store.dropCollection('other_things');
  });

  s('a sensitive transaction (key material) commits, deletes and rolls back like any other; the store goes on as before', async ({ store }) => {
    await store.transaction((tx) => tx.upsert('things', { _id: 'key', wrapped: 'material' }), { sensitive: true });
    assert.equal(await store.get('things', 'key'), { _id: 'key', wrapped: 'material' });
    await rejects(
      store.transaction(async (tx) => {
        await tx.delete('things', 'key');
        throw new Error('boom');
      }, { sensitive: true }),
      /boom/,
    );
    assert.ok(await store.get('things', 'key'), 'rolled back');
    await store.transaction((tx) => tx.upsert('things', { _id: 'key', shredded: true }), { sensitive: true });
    assert.equal(await store.get('things', 'key'), { _id: 'key', shredded: true });
    await store.transaction((tx) => tx.upsert('things', { _id: 'after', n: 1 }));
    assert.ok(await store.get('things', 'after'));
  });

  s('reads outside a transaction never see its uncommitted writes', async ({ store }) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inside!: () => void;
    const started = new Promise<void>((r) => (inside = r));
    const tx = store.transaction(async (t) => {
      await t.upsert('things', { _id: 'pending', tenant: 'P' });
      inside();
      await gate;
    });
    await started;
    assert.is(await store.get('things', 'pending'), null);
    release();
    await tx;
    assert.ok(await store.get('things', 'pending'));
  });

  s('checkpoints: compare-and-set, committed with the documents', async ({ store }) => {
    const name = `cp-${Math.random().toString(36).slice(2)}`;
    assert.is(await store.getCheckpoint(name), null);
    await store.transaction(async (tx) => {
      await tx.upsert('things', { _id: 'with-cp', tenant: 'C' });
      await tx.setCheckpoint(name, '0005', null);
    });
    assert.is(await store.getCheckpoint(name), '0005');
    try {
      await store.transaction(async (tx) => {
        await tx.upsert('things', { _id: 'lost', tenant: 'C' });
        await tx.setCheckpoint(name, '0009', '0004');
      });
      assert.unreachable('stale checkpoint accepted');
    } catch (e) {
      assert.instance(e, CheckpointConflictError);
    }
    assert.is(await store.getCheckpoint(name), '0005');
    assert.is(await store.get('things', 'lost'), null);
  });

  s('creating a checkpoint that exists is a conflict at once: nothing written, the store goes on', async ({ store }) => {
    const name = cpName();
    await store.transaction((tx) => tx.setCheckpoint(name, '0005', null));
    let calls = 0;
    const e = await within(
      rejects(
        store.transaction(async (tx) => {
          calls++;
          await tx.upsert('things', { _id: 'dup-cp', tenant: 'D' });
          await tx.setCheckpoint(name, '0009', null);
        }),
      ),
      10_000,
      'creating an existing checkpoint',
    );
    assert.instance(e, CheckpointConflictError);
    assert.is((e as CheckpointConflictError).actual, '0005');
    assert.is(calls, 1, 'a conflict is not retried');
    assert.is(await store.get('things', 'dup-cp'), null);
    assert.is(await store.getCheckpoint(name), '0005');
    await store.transaction((tx) => tx.setCheckpoint(name, '0009', '0005'));
    assert.is(await store.getCheckpoint(name), '0009');
  });

  s('getCheckpoints, where the adapter has it, answers each name as getCheckpoint does', async ({ store }) => {
    if (!store.getCheckpoints) return assert.is(store.getCheckpoints, undefined);
    const [a, b, never] = [cpName(), cpName(), cpName()];
    await store.transaction(async (tx) => {
      await tx.setCheckpoint(a, '0003', null);
      await tx.setCheckpoint(b, '0007', null);
    });
    const got = await store.getCheckpoints([b, never, a]);
    assert.equal([...got], [[b, '0007'], [never, null], [a, '0003']]);
    for (const n of [a, b, never]) assert.is(got.get(n), await store.getCheckpoint(n));
  });

  s('a compare-and-set to the current value succeeds and keeps it', async ({ store }) => {
    const name = cpName();
    await store.transaction((tx) => tx.setCheckpoint(name, '0005', null));
    await store.transaction((tx) => tx.setCheckpoint(name, '0005', '0005'));
    assert.is(await store.getCheckpoint(name), '0005');
    assert.instance(await rejects(store.transaction((tx) => tx.setCheckpoint(name, '0005', '0004'))), CheckpointConflictError);
  });

  /** The store's change signal as a request starting now sees it. */
  const epochOf = async (store: ReadStore) => {
    store.beginRequest();
    return store.readEpoch?.();
  };

  s('the change signal (readEpoch), where there is one, moves with a commit that writes and with a drop', async ({ store }) => {
    const e0 = await epochOf(store);
    if (e0 === undefined) {
      assert.is(await epochOf(store), undefined, 'a store without the signal never has one');
      return;
    }
    assert.is(await epochOf(store), e0, 'nothing committed');
    await store.transaction((tx) => tx.upsert('things', { _id: 'e', tenant: 'A' }));
    const e1 = (await epochOf(store))!;
    assert.ok(e1 > e0, `${e1} > ${e0}`);
    await store.dropCollection('things');
    assert.ok((await epochOf(store))! > e1);
  });

  if (options.openPeer) {
    const openPeer = options.openPeer;

    s("the change signal, where there is one, moves with another process's commit by the next request", async ({ store }) => {
      const peer = await openPeer();
      try {
        const e0 = await epochOf(store);
        if (e0 === undefined) return assert.is(await epochOf(peer), undefined);
        await peer.transaction((tx) => tx.upsert('things', { _id: 'p', tenant: 'A' }));
        assert.ok((await epochOf(store))! > e0);
      } finally {
        await peer.close();
      }
    });

    s("another process's commit is seen by the next request, and by a read in a later turn, after the same reads were answered before it", async ({ store }) => {
      const peer = await openPeer();
      try {
        const reads = async () => {
          const one = await store.get<Doc & { n: number }>('cached', 'c1');
          const many = await store.getMany<Doc & { n: number }>('cached', ['c2', 'c1', 'c3']);
          const found = await store.find<Doc & { n: number }>('cached', { tenant: 'C' }, { sort: 'n' });
          return { one: one?.n ?? null, many: many.map((d) => `${d._id}:${d.n}`), found: found.map((d) => `${d._id}:${d.n}`) };
        };
        await store.transaction((tx) => tx.upsert('cached', { _id: 'c1', tenant: 'C', n: 1 }));
        // Answered twice in one request: a store that caches holds them now.
        store.beginRequest();
        assert.equal(await reads(), { one: 1, many: ['c1:1'], found: ['c1:1'] });
        assert.equal(await reads(), { one: 1, many: ['c1:1'], found: ['c1:1'] });

        await peer.transaction(async (tx) => {
          await tx.upsert('cached', { _id: 'c1', tenant: 'C', n: 5 });
          await tx.upsert('cached', { _id: 'c2', tenant: 'C', n: 2 });
        });
        store.beginRequest();
        assert.equal(await reads(), { one: 5, many: ['c2:2', 'c1:5'], found: ['c2:2', 'c1:5'] }, 'the next request');

        // A reader outside requests (a background job) sees it by its next turn of the event loop.
        await peer.transaction((tx) => tx.delete('cached', 'c2'));
        await new Promise((r) => setImmediate(r));
        assert.equal(await reads(), { one: 5, many: ['c1:5'], found: ['c1:5'] }, 'a later turn');

        // This process's own commit is seen at once, request or not.
        await store.transaction((tx) => tx.upsert('cached', { _id: 'c3', tenant: 'C', n: 0 }));
        assert.equal(await reads(), { one: 5, many: ['c1:5', 'c3:0'], found: ['c3:0', 'c1:5'] }, 'its own commit');
      } finally {
        await peer.close();
      }
    });

    s('two processes creating the same checkpoint: one wins, the other gets a conflict promptly', async ({ store }) => {
      const peer = await openPeer();
      try {
        const name = cpName();
        const create = (s: ReadStore, at: string) => s.transaction((tx) => tx.setCheckpoint(name, at, null));
        const results = await within(Promise.allSettled([create(store, '0001'), create(peer, '0002')]), 20_000, 'two creations');
        const won = results.filter((r) => r.status === 'fulfilled');
        const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        assert.is(won.length, 1, JSON.stringify(results.map((r) => r.status)));
        assert.instance(lost[0]!.reason, CheckpointConflictError);
        assert.ok(['0001', '0002'].includes((await store.getCheckpoint(name))!));
      } finally {
        await peer.close();
      }
    });

    s('a compare-and-set to the same value conflicts with a move committed meanwhile (the rebuild switch)', async ({ store }) => {
      // A is the rebuild switch: it reads, then sets the live checkpoint to its own value so
      // that a batch committing meanwhile conflicts with it. B is such a batch, in another
      // process, committing between A's first read and A's compare-and-set. Serializable
      // outcomes: A before B (B sees the switch) or A fails. Not allowed: both commit while B
      // did not see the switch (the switch went live behind an acknowledged batch).
      const peer = await openPeer();
      try {
        const name = cpName();
        await store.transaction((tx) => tx.setCheckpoint(name, '0005', null));
        let attempts = 0;
        let aStarted!: () => void;
        const started = new Promise<void>((r) => (aStarted = r));
        let bDone!: () => void;
        const moved = new Promise<void>((r) => (bDone = r));
        const a = store.transaction(async (tx) => {
          attempts++;
          await tx.get('things', 'switch');
          if (attempts === 1) {
            aStarted();
            await moved;
          }
          await tx.setCheckpoint(name, '0005', '0005');
          await tx.upsert('things', { _id: 'switch', tenant: 'S' });
        });
        await started;
        let bSawSwitch: boolean | null = null;
        await peer.transaction(async (tx) => {
          bSawSwitch = (await tx.get('things', 'switch')) !== null;
          await tx.upsert('things', { _id: 'batch', tenant: 'S' });
          await tx.setCheckpoint(name, '0009', '0005');
        });
        bDone();
        const outcome = await within(a.then(() => 'committed', (e: unknown) => e), 20_000, 'the switch');
        assert.is(bSawSwitch, false);
        assert.instance(outcome, CheckpointConflictError, 'the switch must not commit behind a batch it did not see');
        assert.is(await store.getCheckpoint(name), '0009');
        assert.is(await store.get('things', 'switch'), null);
        assert.ok(await store.get('things', 'batch'));
      } finally {
        await peer.close();
      }
    });
  }

  s('listCollections names the collections that exist; a dropped one is gone', async ({ store }) => {
    await store.transaction((tx) => tx.upsert('listed_things', { _id: 'x' }));
    const names = await store.listCollections();
    assert.ok(names.includes('listed_things') && names.includes('things'), JSON.stringify(names));
    assert.equal(names, [...names].sort());
    await store.dropCollection('listed_things');
    assert.not.ok((await store.listCollections()).includes('listed_things'));
  });

  s('ids with any characters are stored and found as given', async ({ store }) => {
    const ids = ['["a","b"]', "'; DROP TABLE rm_things; --", 'ünïcödé \u0000 nul', '$gt'];
    await store.transaction(async (tx) => {
      for (const id of ids) await tx.upsert('things', { _id: id, tenant: id });
    });
    for (const id of ids) {
      assert.equal(await store.get('things', id), { _id: id, tenant: id });
      assert.equal((await store.find('things', { tenant: id })).map((d) => d._id), [id]);
    }
  });

  return s;
}
