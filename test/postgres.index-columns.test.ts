/**
 * Index columns of PostgreSQL read-model tables (src/adapters/postgres-columns.ts), on a real
 * server: a table `ensureIndexes` makes reads its indexed fields from columns the writer
 * fills, and answers every query as a table without them (expression indexes over the
 * document, as every table was made before) answers it. The differential properties write the
 * same documents into both kinds of table and compare sorts, cursors, filters, counts and
 * deletes, for values of every JSON type, strings PostgreSQL text cannot hold as they are
 * (U+0000, lone surrogates) included.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import pg from 'pg';
import { PostgresReadStore } from '../src/adapters/postgres-read-store.js';
import { columnText } from '../src/adapters/postgres-columns.js';
import { encodeJson } from '../src/adapters/postgres-common.js';
import type { Doc, ReadStore, Scalar } from '../src/ports/read-store.js';
import { freshDatabase } from './support/postgres.js';

let url = '';
let columns: PostgresReadStore;
let plain: PostgresReadStore;
let admin: pg.Client;

test.before(async () => {
  url = await freshDatabase('ixcols');
  columns = new PostgresReadStore(url);
  // Same database, tables made without columns: the other side of each comparison.
  plain = new PostgresReadStore(url, { indexColumns: false });
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
});

test.after(async () => {
  await columns.close();
  await plain.close();
  await admin.end();
});

const columnsOf = async (table: string) =>
  (await admin.query<{ name: string }>(`SELECT attname AS name FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, [table])).rows.map((r) => r.name);
const indexesOf = async (table: string) => (await admin.query<{ def: string }>('SELECT indexdef AS def FROM pg_indexes WHERE tablename = $1 ORDER BY indexname', [table])).rows.map((r) => r.def);

test('a table ensureIndexes makes has a column per indexed field, and its indexes read the columns', async () => {
  await columns.ensureIndexes([
    { collection: 'cx_shape', fields: ['tenant', 'seq'] },
    { collection: 'cx_shape', fields: ['tenant', 'data.org', 'seq'] },
  ]);
  assert.equal(await columnsOf('rm_cx_shape'), ['id', 'doc', 'k:tenant', 'k:seq', 'k:data.org']);
  const defs = (await indexesOf('rm_cx_shape')).filter((d) => !d.includes('_pkey'));
  assert.is(defs.length, 2);
  for (const d of defs) {
    assert.ok(d.includes('"k:tenant"') && d.includes('"k:seq"'), d);
    assert.not.ok(d.includes('doc ->'), d);
  }
  // The same specs without columns: expression indexes over the document.
  await plain.ensureIndexes([{ collection: 'cx_shape_plain', fields: ['tenant', 'seq'] }]);
  assert.equal(await columnsOf('rm_cx_shape_plain'), ['id', 'doc']);
  assert.ok((await indexesOf('rm_cx_shape_plain')).some((d) => d.includes("doc -> 'tenant'")));
});

test('the column set is fixed when the table is made: a later spec with another field indexes that field by expression', async () => {
  await columns.ensureIndexes([{ collection: 'cx_later', fields: ['a'] }]);
  await columns.ensureIndexes([{ collection: 'cx_later', fields: ['a', 'b'] }]);
  assert.equal(await columnsOf('rm_cx_later'), ['id', 'doc', 'k:a']);
  const def = (await indexesOf('rm_cx_later')).find((d) => d.includes("'b'"));
  assert.ok(def?.includes('"k:a"') && def.includes("doc -> 'b'"), def);
  await columns.transaction(async (tx) => {
    await tx.upsert('cx_later', { _id: '1', a: 'x', b: 2 });
    await tx.upsert('cx_later', { _id: '2', a: 'x', b: 1 });
  });
  assert.equal((await columns.find('cx_later', { a: 'x' }, { sort: 'b' })).map((d) => d._id), ['2', '1']);
  // A table a write made first has no columns, whatever ensureIndexes is given afterwards.
  await columns.transaction((tx) => tx.upsert('cx_written', { _id: '1', a: 'x' }));
  await columns.ensureIndexes([{ collection: 'cx_written', fields: ['a'] }]);
  assert.equal(await columnsOf('rm_cx_written'), ['id', 'doc']);
  assert.equal((await columns.find('cx_written', { a: 'x' })).map((d) => d._id), ['1']);
});

test('an upgrade: tables an earlier release made keep their indexes, and ensureIndexes builds none anew', async () => {
  const specs = [
    { collection: 'cx_old', fields: ['tenant', 'seq'] },
    { collection: 'cx_old', fields: ['tenant', 'kind', 'seq'] },
  ];
  await plain.ensureIndexes(specs);
  await plain.transaction(async (tx) => {
    for (let i = 0; i < 5; i++) await tx.upsert('cx_old', { _id: `o${i}`, tenant: 'T', kind: i % 2 ? 'odd' : 'even', seq: 10 - i });
  });
  const before = await indexesOf('rm_cx_old');
  await columns.ensureIndexes(specs);
  assert.equal(await indexesOf('rm_cx_old'), before);
  assert.equal(await columnsOf('rm_cx_old'), ['id', 'doc']);
  // This release writes and reads the old table as it is.
  await columns.transaction((tx) => tx.upsert('cx_old', { _id: 'o9', tenant: 'T', kind: 'odd', seq: 0 }));
  assert.equal(ids(await columns.find('cx_old', { tenant: 'T', kind: 'odd' }, { sort: 'seq' })), ['o9', 'o3', 'o1']);
});

test('a store that had not seen the table writes its columns too (made from the stored text)', async () => {
  await columns.ensureIndexes([{ collection: 'cx_peer', fields: ['k', 'n'] }]);
  const peer = new PostgresReadStore(url);
  try {
    await peer.transaction(async (tx) => {
      await tx.upsert('cx_peer', { _id: 'a', k: 'nul\u0000here', n: 2 });
      await tx.upsert('cx_peer', { _id: 'b', k: 'lone\ud800', n: 1 });
    });
  } finally {
    await peer.close();
  }
  const stored = await admin.query<{ id: string; k: string; n: string }>(`SELECT id, "k:k" AS k, "k:n" AS n FROM rm_cx_peer ORDER BY id`);
  assert.equal(stored.rows.map((r) => [r.id, r.k, r.n]), [
    ['a', columnText('nul\u0000here'), columnText(2)],
    ['b', columnText('lone\ud800'), columnText(1)],
  ]);
  assert.equal((await columns.find('cx_peer', { k: 'nul\u0000here' })).map((d) => d._id), ['a']);
  assert.equal((await columns.find('cx_peer', {}, { sort: 'n' })).map((d) => d._id), ['b', 'a']);
});

test('a transaction whose snapshot predates the table another process made writes its columns', async () => {
  // Processes starting together on one database (postgres.lease, postgres.hosts): one makes
  // a table while another's REPEATABLE READ transaction, begun before, is about to write it.
  const writer = new PostgresReadStore(url);
  let release!: () => void;
  const made = new Promise<void>((r) => (release = r));
  let begun!: () => void;
  const snapshot = new Promise<void>((r) => (begun = r));
  try {
    const writing = writer.transaction(async (tx) => {
      await tx.get('cx_race_other', 'x'); // the snapshot is taken here
      begun();
      await made;
      await tx.upsert('cx_race', { _id: 'r1', k: 'v' });
    });
    await snapshot;
    await columns.ensureIndexes([{ collection: 'cx_race', fields: ['k'] }]);
    release();
    await writing;
  } finally {
    await writer.close();
  }
  assert.equal(await columnsOf('rm_cx_race'), ['id', 'doc', 'k:k']);
  assert.equal((await admin.query('SELECT "k:k" AS k FROM rm_cx_race')).rows, [{ k: columnText('v') }]);
  assert.equal(ids(await columns.find('cx_race', { k: 'v' })), ['r1']);
});

test('a run of rows whose ids and columns hold array-literal syntax reads back as written', async () => {
  const awkward = ['"', '\\', 'a"b\\c', '{x,y}', 'NULL', '', ' spaced ', '\\"', 'end\\'];
  await columns.ensureIndexes([{ collection: 'cx_literal', fields: ['k'] }]);
  await columns.transaction(async (tx) => {
    for (const [i, s] of awkward.entries()) await tx.upsert('cx_literal', { _id: s, k: s, n: i });
  });
  for (const s of awkward) {
    assert.equal(await columns.get('cx_literal', s), { _id: s, k: s, n: awkward.indexOf(s) }, JSON.stringify(s));
    assert.equal(ids(await columns.find('cx_literal', { k: s })), [s], JSON.stringify(s));
  }
});

// Values of every JSON type a field may hold; undefined: the field is absent.
const scalar = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.boolean(),
  fc.oneof(fc.integer({ min: -5, max: 5 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(-0, 0.1, 1e21, -1e-7, 2 ** 53)),
  fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('', 'a', 'a\u0000', 'a\u0001', '\ud800', 'é', '😀', 'Z', 'a b')),
);

let round = 0;

/** Writes `values` as field `v` (and `w`, for a second sort key) of documents into a fresh table of `store`. */
async function fill(store: ReadStore, collection: string, values: unknown[]) {
  await store.ensureIndexes([
    { collection, fields: ['g', 'v'] },
    { collection, fields: ['w'] },
  ]);
  await store.transaction(async (tx) => {
    for (let i = 0; i < values.length; i++) {
      const doc: Doc = { _id: `d${String(i).padStart(3, '0')}`, g: i % 2 ? 'odd' : 'even' };
      if (values[i] !== undefined) doc.v = values[i];
      doc.w = i % 3;
      await tx.upsert(collection, doc);
    }
  });
}

const ids = (docs: Doc[]) => docs.map((d) => d._id);

test('property: sorts, cursors, filters and counts answer alike with and without index columns', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(scalar, { minLength: 1, maxLength: 25 }), fc.nat(30), async (values, cut) => {
      const n = round++;
      const [a, b] = [`cx_p${n}c`, `cx_p${n}p`];
      await fill(columns, a, values);
      await fill(plain, b, values);
      try {
        assert.equal(ids(await columns.find(a, {}, { sort: 'v' })), ids(await plain.find(b, {}, { sort: 'v' })), 'sort');
        assert.equal(ids(await columns.find(a, { g: 'odd' }, { sort: 'v', limit: 5 })), ids(await plain.find(b, { g: 'odd' }, { sort: 'v', limit: 5 })), 'filter, sort, limit');
        // A cursor taken from a document of the sorted list (a value that is a scalar).
        const sorted = await plain.find<Doc & { v?: Scalar }>(b, {}, { sort: 'v' });
        const from = sorted[cut % sorted.length]!;
        if (from.v !== undefined && (from.v === null || typeof from.v !== 'object')) {
          const after = { value: from.v, id: from._id };
          assert.equal(ids(await columns.find(a, {}, { sort: 'v', after })), ids(await plain.find(b, {}, { sort: 'v', after })), 'cursor');
        }
        for (const v of new Set(values)) {
          if (v !== null && typeof v === 'object') continue;
          const filter = { v: v as Scalar };
          assert.equal(ids(await columns.find(a, filter, { sort: 'w' })), ids(await plain.find(b, filter, { sort: 'w' })), `filter ${JSON.stringify(v)}`);
          assert.is(await columns.count(a, filter), await plain.count(b, filter), `count ${JSON.stringify(v)}`);
        }
        // Inside a transaction with a pending run: the run's rows carried through the read.
        const carried = async (store: ReadStore, c: string) =>
          store.transaction(async (tx) => {
            await tx.upsert(c, { _id: 'zz', g: 'odd', v: values[0] ?? null, w: 9 });
            return { found: ids(await tx.find(c, { g: 'odd' }, { sort: 'v' })), count: await tx.count(c, { g: 'odd' }) };
          });
        assert.equal(await carried(columns, a), await carried(plain, b), 'carried run');
        // deleteBefore: numbers below the bound only.
        const bound = values.find((v): v is number => typeof v === 'number') ?? 0;
        const deleted = [await columns.transaction((tx) => tx.deleteBefore(a, 'v', bound)), await plain.transaction((tx) => tx.deleteBefore(b, 'v', bound))];
        assert.is(deleted[0], deleted[1], 'deleteBefore');
        assert.equal(ids(await columns.find(a, {}, { sort: 'v' })), ids(await plain.find(b, {}, { sort: 'v' })), 'after deleteBefore');
      } finally {
        await columns.dropCollection(a);
        await plain.dropCollection(b);
      }
    }),
    { numRuns: 40 },
  );
});

test('property: column texts order as jsonb orders the same values on the server', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(scalar.filter((v) => v !== undefined), { minLength: 2, maxLength: 30 }), async (values) => {
      // The JSON as stored (encodeJson: U+0000 and lone surrogates encoded), and the column text in UTF-8.
      const rows = values.map((v, i) => ({ i, json: encodeJson(v), text: Buffer.from(columnText(v)!, 'utf8') }));
      // jsonb's order, then id order among equal values, as ORDER BY (expr, id) gives.
      const r = await admin.query<{ i: number }>(`SELECT i FROM unnest($1::int[], $2::text[]) AS u(i, j) ORDER BY j::jsonb, i`, [rows.map((x) => x.i), rows.map((x) => x.json)]);
      // COLLATE "C": byte order.
      const byText = [...rows].sort((x, y) => Buffer.compare(x.text, y.text) || x.i - y.i).map((x) => x.i);
      assert.equal(byText, r.rows.map((x) => x.i));
    }),
    { numRuns: 60 },
  );
});

test.run();
