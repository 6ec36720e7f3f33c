/**
 * Server cost per row of audit and documents inserts (batches of 200, one commit each) by table
 * layout: json with expression indexes (as tables made before index columns), jsonb, a small
 * jsonb of the indexed fields (`keys`), the indexed fields in text columns COLLATE "C" (`cols`,
 * what src/adapters/postgres-columns.ts builds, with plain strings here) or in jsonb columns
 * (`bcols`), no index, indexes built after the fill. Reads sample rows written by pg-add-profile.ts
 * (SAMPLES=/tmp/samples.json):
 *   LAYOUTS=json,after,jsonb node scripts/run.mjs dev bench/micro/pg-row-cost.ts
 */
import fs from 'node:fs';
import pg from 'pg';
import { startPostgres } from '../../test/support/postgres.js';

const s = JSON.parse(fs.readFileSync('/tmp/samples.json', 'utf8')) as { audit: string[]; documents: string[] };
const server = await startPostgres();
const c = new pg.Client({ connectionString: await server.freshDatabase('rows') });
await c.connect();
const e = (f: string) => `((doc${f.split('.').map((p) => `->'${p}'`).join('')})::jsonb)`;
const auditIdx = [['apiKey', 'position'], ['apiKey', 'data.organizationId', 'position'], ['target', 'position'], ['apiKey', 'family', 'position']];
const docIdx = [['apiKey', 'organizationId', 'seq'], ['apiKey', 'organizationId', 'folderId', 'seq']];
const ROUNDS = Number(process.env.ROUNDS ?? 100);
const BATCH = 200;
function rows(kind: 'audit' | 'documents', round: number) {
  const src = s[kind];
  return Array.from({ length: BATCH }, (_, i) => {
    const d = JSON.parse(src[(round * BATCH + i) % src.length]!);
    const uniq = `${round}-${i}`;
    d._id = `${d._id}-${uniq}`;
    if (d.position) d.position = `${d.position}-${uniq}`;
    if (d.seq) d.seq = `${d.seq}-${uniq}`;
    return d;
  });
}
const layouts: Record<string, { create(t: string, idx: string[][]): string[]; insert(t: string, idx: string[][], docs: any[]): [string, unknown[]] }> = {
  json: {
    create: (t, idx) => [`CREATE TABLE ${t} (id text COLLATE "C" PRIMARY KEY, doc json NOT NULL)`, ...idx.map((f, i) => `CREATE INDEX ${t}_${i} ON ${t} (${f.map(e).join(', ')}, id)`)],
    insert: (t, _i, docs) => [`INSERT INTO ${t} (id, doc) SELECT id, doc::json FROM unnest($1::text[], $2::text[]) AS u(id, doc) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`, [docs.map((d) => d._id), docs.map((d) => JSON.stringify(d))]],
  },
  jsonb: {
    create: (t, idx) => [`CREATE TABLE ${t} (id text COLLATE "C" PRIMARY KEY, doc jsonb NOT NULL)`, ...idx.map((f, i) => `CREATE INDEX ${t}_${i} ON ${t} (${f.map(e).join(', ')}, id)`)],
    insert: (t, _i, docs) => [`INSERT INTO ${t} (id, doc) SELECT id, doc::jsonb FROM unnest($1::text[], $2::text[]) AS u(id, doc) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`, [docs.map((d) => d._id), docs.map((d) => JSON.stringify(d))]],
  },
  keys: {
    // doc json as written, plus a small jsonb of the indexed fields that the indexes read.
    create: (t, idx) => [`CREATE TABLE ${t} (id text COLLATE "C" PRIMARY KEY, doc json NOT NULL, k jsonb NOT NULL)`, ...idx.map((f, i) => `CREATE INDEX ${t}_${i} ON ${t} (${f.map((x) => `(k->'${x}')`).join(', ')}, id)`)],
    insert: (t, idx, docs) => {
      const fields = [...new Set(idx.flat())];
      const get = (d: any, f: string) => f.split('.').reduce((o, p) => (o == null ? undefined : o[p]), d) ?? null;
      return [`INSERT INTO ${t} (id, doc, k) SELECT id, doc::json, k::jsonb FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, doc, k) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc, k = excluded.k`,
        [docs.map((d) => d._id), docs.map((d) => JSON.stringify(d)), docs.map((d) => JSON.stringify(Object.fromEntries(fields.map((f) => [f, get(d, f)]))))]];
    },
  },
  cols: {
    create: (t, idx) => { const fields = [...new Set(idx.flat())]; const c = (f: string) => 'c_' + f.replace('.', '_'); return [`CREATE TABLE ${t} (id text COLLATE "C" PRIMARY KEY, doc json NOT NULL, ${fields.map((f) => `${c(f)} text COLLATE "C"`).join(', ')})`, ...idx.map((f, i) => `CREATE INDEX ${t}_${i} ON ${t} (${f.map(c).join(', ')}, id)`)]; },
    insert: (t, idx, docs) => {
      const fields = [...new Set(idx.flat())]; const c = (f: string) => 'c_' + f.replace('.', '_');
      const get = (d: any, f: string) => f.split('.').reduce((o, p) => (o == null ? undefined : o[p]), d) ?? null;
      return [`INSERT INTO ${t} (id, doc, ${fields.map(c).join(', ')}) SELECT * FROM unnest($1::text[], $2::json[], ${fields.map((_, i) => `$${i + 3}::text[]`).join(', ')}) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`,
        [docs.map((d) => d._id), docs.map((d) => JSON.stringify(d)), ...fields.map((f) => docs.map((d) => get(d, f)))]];
    },
  },
  bcols: {
    create: (t, idx) => { const fields = [...new Set(idx.flat())]; const c = (f: string) => 'c_' + f.replace('.', '_'); return [`CREATE TABLE ${t} (id text COLLATE "C" PRIMARY KEY, doc json NOT NULL, ${fields.map((f) => `${c(f)} jsonb`).join(', ')})`, ...idx.map((f, i) => `CREATE INDEX ${t}_${i} ON ${t} (${f.map(c).join(', ')}, id)`)]; },
    insert: (t, idx, docs) => {
      const fields = [...new Set(idx.flat())]; const c = (f: string) => 'c_' + f.replace('.', '_');
      const get = (d: any, f: string) => f.split('.').reduce((o, p) => (o == null ? undefined : o[p]), d);
      return [`INSERT INTO ${t} (id, doc, ${fields.map(c).join(', ')}) SELECT * FROM unnest($1::text[], $2::json[], ${fields.map((_, i) => `$${i + 3}::jsonb[]`).join(', ')}) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`,
        [docs.map((d) => d._id), docs.map((d) => JSON.stringify(d)), ...fields.map((f) => docs.map((d) => { const v = get(d, f); return v === undefined ? null : JSON.stringify(v); }))]];
    },
  },
  after: {
    create: (t) => [`CREATE TABLE ${t} (id text COLLATE "C" PRIMARY KEY, doc json NOT NULL)`],
    insert: (t, _i, docs) => [`INSERT INTO ${t} (id, doc) SELECT id, doc::json FROM unnest($1::text[], $2::text[]) AS u(id, doc) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`, [docs.map((d) => d._id), docs.map((d) => JSON.stringify(d))]],
  },
  afterb: {
    create: (t) => [`CREATE TABLE ${t} (id text COLLATE "C" PRIMARY KEY, doc jsonb NOT NULL)`],
    insert: (t, _i, docs) => [`INSERT INTO ${t} (id, doc) SELECT id, doc::jsonb FROM unnest($1::text[], $2::text[]) AS u(id, doc) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`, [docs.map((d) => d._id), docs.map((d) => JSON.stringify(d))]],
  },
  noindex: {
    create: (t) => [`CREATE TABLE ${t} (id text COLLATE "C" PRIMARY KEY, doc json NOT NULL)`],
    insert: (t, _i, docs) => [`INSERT INTO ${t} (id, doc) SELECT id, doc::json FROM unnest($1::text[], $2::text[]) AS u(id, doc) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`, [docs.map((d) => d._id), docs.map((d) => JSON.stringify(d))]],
  },
};
const order = (process.env.LAYOUTS ?? 'json,jsonb,keys,noindex,json,jsonb,keys').split(',');
let n = 0;
for (const name of order) {
  const L = layouts[name]!;
  for (const kind of ['audit', 'documents'] as const) {
    const t = `t_${kind}_${name}_${n++}`;
    const idx = kind === 'audit' ? auditIdx : docIdx;
    for (const q of L.create(t, idx)) await c.query(q);
    const batches = Array.from({ length: ROUNDS }, (_, r) => L.insert(t, idx, rows(kind, r)));
    const t0 = process.hrtime.bigint();
    for (const [q, p] of batches) {
      await c.query('BEGIN');
      await c.query(q, p);
      await c.query('COMMIT');
    }
    const tIns = Number(process.hrtime.bigint() - t0) / 1000 / (ROUNDS * BATCH);
    if (name === 'after' || name === 'afterb') for (const [i, f] of idx.entries()) await c.query(`CREATE INDEX ${t}_${i} ON ${t} (${f.map(e).join(', ')}, id)`);
    const us = Number(process.hrtime.bigint() - t0) / 1000 / (ROUNDS * BATCH);
    if (name.startsWith('after')) console.log(`  (inserts alone ${tIns.toFixed(1)} us/row)`);
    const size = (await c.query(`SELECT pg_total_relation_size('${t}') AS s`)).rows[0].s;
    console.log(`${name.padEnd(8)} ${kind.padEnd(10)} ${us.toFixed(1)} us/row (wall), ${(size / ROUNDS / BATCH).toFixed(0)} bytes/row`);
  }
}
await c.end();
await server.close();
process.exit(0);
