/**
 * The dry run's read-model overlay (src/runtime/read-overlay.ts) against the store itself: for
 * random documents in a real store and random writes (upserts, patches, deletes, deleteMany),
 * every read of the overlay over the untouched store answers what the store answers once the
 * same writes are committed: get, getMany, count, and find with filters, sort, cursor and limit.
 * On SQLite, and with TEST_STORE=postgres on PostgreSQL (two fresh databases per run).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import fs from 'node:fs';
import path from 'node:path';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { PostgresReadStore } from '../src/adapters/postgres-read-store.js';
import type { Doc, Filter, FindOptions, ReadStore, WriteOp } from '../src/ports/read-store.js';
import { ReadOverlay } from '../src/runtime/read-overlay.js';
import { tempDir } from './support/app.js';

const C = 'things';
const dir = tempDir('collab-overlay-');
let n = 0;
/** A fresh store: SQLite, or with TEST_STORE=postgres a fresh database of the run's server. */
async function open(): Promise<ReadStore> {
  const s = process.env.TEST_STORE === 'postgres'
    ? new PostgresReadStore(await (await import('./support/postgres.js')).freshDatabase('overlay'))
    : new SqliteReadStore(path.join(dir, `r-${n++}.db`));
  await s.ensureIndexes([{ collection: C, fields: ['kind', 'seq'] }, { collection: C, fields: ['kind', 'name'] }]);
  return s;
}

const id = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'B', 'é');
const kind = fc.constantFrom('x', 'y', null);
const doc = fc.record({ _id: id, kind, seq: fc.integer({ min: 0, max: 5 }), name: fc.constantFrom('m', 'n', 'Z', 'ä'), nested: fc.record({ v: fc.integer({ min: 0, max: 2 }) }) }).map((d) => {
  const out: Doc = { _id: d._id, seq: d.seq, name: d.name, nested: d.nested };
  if (d.kind !== null) out.kind = d.kind;
  return out;
});
const op: fc.Arbitrary<WriteOp> = fc.oneof(
  doc.map((d) => ({ op: 'upsert' as const, collection: C, doc: d })),
  fc.record({ id, seq: fc.integer({ min: 0, max: 5 }), v: fc.integer({ min: 0, max: 2 }), drop: fc.boolean() }).map((p) => ({
    op: 'patch' as const,
    collection: C,
    id: p.id,
    set: { seq: p.seq, 'nested.v': p.v },
    ...(p.drop ? { unset: ['kind'] } : {}),
  })),
  id.map((i) => ({ op: 'delete' as const, collection: C, id: i })),
  kind.map((k) => ({ op: 'deleteMany' as const, collection: C, filter: { kind: k } })),
);
const filter = fc.constantFrom<Filter>({}, { kind: 'x' }, { kind: null }, { kind: 'y', seq: 2 }, { 'nested.v': 1 });
const find: fc.Arbitrary<FindOptions> = fc.record(
  {
    sort: fc.constantFrom('seq', 'name'),
    limit: fc.integer({ min: 0, max: 6 }),
    after: fc.record({ value: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constantFrom('m', 'n', 'Z')), id }),
  },
  { requiredKeys: [] },
);

test('the overlay over a store answers what the store answers after the same writes', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(doc, { maxLength: 8 }), fc.array(op, { maxLength: 8 }), fc.array(fc.tuple(filter, find), { minLength: 1, maxLength: 4 }), async (docs, ops, finds) => {
      const base = await open();
      const after = await open();
      try {
        await base.transaction((tx) => applyAll(tx, docs));
        await after.transaction((tx) => applyAll(tx, docs));
        const overlay = new ReadOverlay(base);
        await overlay.bulk(ops);
        await after.transaction((tx) => tx.bulk(ops));
        const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'B', 'é', 'zz'];
        for (const i of ids) assert.equal(await overlay.get(C, i), await after.get(C, i), `get ${i}`);
        assert.equal(await overlay.getMany(C, ids), await after.getMany(C, ids), 'getMany');
        for (const [f, o] of finds) {
          // A cursor pages by the sort field; without a sort it is by _id (value = id).
          const options = o.after && !o.sort ? { ...o, after: { value: o.after.id, id: o.after.id } } : o;
          if (options.sort === 'name' && options.after && typeof options.after.value !== 'string') continue;
          if (options.sort === 'seq' && options.after && typeof options.after.value !== 'number') continue;
          assert.equal(await overlay.find(C, f, options), await after.find(C, f, options), `find ${JSON.stringify([f, options])}`);
          assert.is(await overlay.count(C, f), await after.count(C, f), `count ${JSON.stringify(f)}`);
        }
      } finally {
        await base.close();
        await after.close();
      }
    }),
    { numRuns: Number(process.env.OVERLAY_RUNS ?? (process.env.TEST_STORE === 'postgres' ? 40 : 150)) },
  );
});

async function applyAll(tx: { upsert(c: string, d: Doc): Promise<void> }, docs: Doc[]) {
  for (const d of docs) await tx.upsert(C, d);
}

test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

test.run();
