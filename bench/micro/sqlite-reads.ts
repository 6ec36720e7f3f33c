// `node scripts/run.mjs dev bench/micro/sqlite-reads.ts`: what one append and one stream read
// cost on the embedded event store's schema, per way of asking SQLite (better-sqlite3), on a log
// of 100k one-event streams. The append path asks each new document's stream twice (the
// command reads it, the append checks its revision), so these lookups were half of
// documents/add's CPU (docs/performance.md, "What limits each target"). Then the store itself:
// appends of 100 new streams per tick, with and without fsync.
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteEventStore } from '../../src/adapters/sqlite-event-store.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-sqlite-reads-'));
const db = new Database(path.join(dir, 'e.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = OFF');
db.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, stream TEXT NOT NULL,
  revision INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, UNIQUE (stream, revision))`);
const insert = db.prepare('INSERT INTO events (id, stream, revision, type, data, metadata) VALUES (?, ?, ?, ?, ?, ?)');
const N = 100_000;
db.transaction(() => {
  for (let i = 0; i < N; i++) insert.run(`e${i}`, `document-k-o-d${i}`, 0, 'DocumentAdded', JSON.stringify({ documentId: `d${i}` }), '{}');
})();

const RUNS = 20_000;
const time = (f: (i: number) => unknown) => {
  const t0 = performance.now();
  for (let i = 0; i < RUNS; i++) f(i);
  return ((performance.now() - t0) * 1000) / RUNS;
};
const existing = (i: number) => `document-k-o-d${(i * 7919) % N}`;
const fresh = (i: number) => `document-k-o-new${i}`;
const cases: Array<[string, string, 'object' | 'pluck' | 'raw', 'get' | 'all']> = [
  ['MAX(revision), a row object', 'SELECT MAX(revision) AS r FROM events WHERE stream = ?', 'object', 'get'],
  ['MAX(revision), plucked', 'SELECT MAX(revision) FROM events WHERE stream = ?', 'pluck', 'get'],
  ['revision 0 exists, plucked', 'SELECT 1 FROM events WHERE stream = ? AND revision = 0', 'pluck', 'get'],
  ['the stream\'s rows (SELECT *), row objects', 'SELECT * FROM events WHERE stream = ? AND revision >= 0 ORDER BY revision', 'object', 'all'],
  ['the stream\'s rows (SELECT *), raw arrays', 'SELECT * FROM events WHERE stream = ? AND revision >= 0 ORDER BY revision', 'raw', 'all'],
  ['any row from revision 0, index only, plucked', 'SELECT 1 FROM events WHERE stream = ? AND revision >= 0 LIMIT 1', 'pluck', 'get'],
];
console.log(`microseconds per call, ${RUNS} calls, ${N} streams of one event`);
console.log('query | existing stream | new stream');
for (const [name, sql, mode, call] of cases) {
  let s = db.prepare(sql);
  if (mode === 'pluck') s = s.pluck();
  if (mode === 'raw') s = s.raw();
  const run = (k: string) => (call === 'get' ? s.get(k) : s.all(k));
  time((i) => run(existing(i)));
  console.log(`${name} | ${time((i) => run(existing(i))).toFixed(2)} | ${time((i) => run(fresh(i))).toFixed(2)}`);
}

// The store as documents/add uses it: 100 appends to new streams in one tick (one commit).
for (const fsync of [true, false]) {
  const store = new SqliteEventStore(path.join(dir, `store-${fsync}.db`));
  // synchronous = OFF only to show what is the commit's fsync and what is the rest.
  if (!fsync) (store as unknown as { db: Database.Database }).db.pragma('synchronous = OFF');
  let n = 0;
  const tick = () =>
    Promise.all(Array.from({ length: 100 }, () => {
      const id = `d${n++}`;
      return store.append(`document-k-o-${id}`, [{ id: `e-${id}`, type: 'DocumentAdded', data: { documentId: id }, metadata: { time: 1, requestId: 'r', actor: 'bench' } }], 'no_stream');
    }));
  for (let i = 0; i < 200; i++) await tick();
  const t0 = performance.now();
  for (let i = 0; i < 200; i++) await tick();
  const us = ((performance.now() - t0) * 1000) / 20_000;
  console.log(`append to a new stream, 100 per tick, ${fsync ? 'synchronous = FULL (as served)' : 'synchronous = OFF'}: ${us.toFixed(1)} us per event`);
  await store.close();
}
fs.rmSync(dir, { recursive: true, force: true });
