// `node scripts/run.mjs dev bench/micro/sqlite-upserts.ts`: what a read-model upsert costs in
// the embedded read store's schema (a JSON document per row, indexes on `json_extract`
// expressions, src/adapters/sqlite-read-store.ts), against the same rows without indexes and
// with the indexed fields as stored generated columns. The projections' upserts are most of
// a rebuild's CPU and bound documents/add (docs/performance.md, "What limits each target").
// Shaped like the documents collection: three indexes of two to four fields each.
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-sqlite-upserts-'));
const N = 20_000;
const ROUNDS = 3;
const indexes = [['apiKey', 'organizationId', 'seq'], ['apiKey', 'organizationId', 'folderId', 'seq'], ['apiKey', 'organizationId', 'documentName']];
const fields = [...new Set(indexes.flat())];
const doc = (i: number) =>
  JSON.stringify({ _id: `["k","o","d${i}"]`, apiKey: 'k', organizationId: 'o', documentId: `d${i}`, documentName: `Document ${i}`, folderId: `f${i % 100}`, accessType: null, disabled: false, seq: String(i).padStart(19, '0'), metadata: { title: `t${i}`, tags: ['a', 'b'] } });

function schema(db: Database.Database, kind: 'none' | 'expression' | 'generated') {
  if (kind === 'generated') {
    const cols = fields.map((f) => `, g_${f} ANY GENERATED ALWAYS AS (json_extract(doc, '$.${f}')) STORED`).join('');
    db.exec(`CREATE TABLE t (id TEXT PRIMARY KEY, doc TEXT NOT NULL${cols})`);
    indexes.forEach((ix, n) => db.exec(`CREATE INDEX ix${n} ON t (${ix.map((f) => `g_${f}`).join(', ')}, id)`));
    return;
  }
  db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, doc TEXT NOT NULL)');
  if (kind === 'expression') {
    indexes.forEach((ix, n) => db.exec(`CREATE INDEX ix${n} ON t (${ix.map((f) => `json_extract(doc, '$.${f}')`).join(', ')}, id)`));
  }
}

console.log(`µs per upsert, ${N} rows inserted then ${N} replaced, in transactions of 500; best of ${ROUNDS}`);
for (const kind of ['none', 'expression', 'generated'] as const) {
  let best = { insert: Infinity, replace: Infinity };
  for (let r = 0; r < ROUNDS; r++) {
    const file = path.join(dir, `${kind}-${r}.db`);
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    schema(db, kind);
    const up = db.prepare('INSERT INTO t (id, doc) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET doc = excluded.doc');
    const pass = () => {
      const t0 = performance.now();
      for (let i = 0; i < N; i += 500) db.transaction(() => { for (let j = i; j < i + 500; j++) up.run(`d${j}`, doc(j)); })();
      return ((performance.now() - t0) * 1000) / N;
    };
    const insert = pass();
    const replace = pass();
    best = { insert: Math.min(best.insert, insert), replace: Math.min(best.replace, replace) };
    db.close();
  }
  console.log(`${kind.padEnd(10)} insert ${best.insert.toFixed(1)}  replace ${best.replace.toFixed(1)}`);
}

// A rebuild's alternative: load the rows without indexes, then create the indexes once.
{
  let best = Infinity;
  for (let r = 0; r < ROUNDS; r++) {
    const db = new Database(path.join(dir, `later-${r}.db`));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    schema(db, 'none');
    const up = db.prepare('INSERT INTO t (id, doc) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET doc = excluded.doc');
    const t0 = performance.now();
    for (let i = 0; i < N; i += 500) db.transaction(() => { for (let j = i; j < i + 500; j++) up.run(`d${j}`, doc(j)); })();
    indexes.forEach((ix, n) => db.exec(`CREATE INDEX ix${n} ON t (${ix.map((f) => `json_extract(doc, '$.${f}')`).join(', ')}, id)`));
    best = Math.min(best, ((performance.now() - t0) * 1000) / N);
    db.close();
  }
  console.log(`indexes created after the load: ${best.toFixed(1)} per row, all included`);
}
fs.rmSync(dir, { recursive: true, force: true });
