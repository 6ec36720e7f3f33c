/**
 * Time of one `collab_append` call by batch size, on a fresh database and again after 50,000
 * events (docs/performance-history.md, "The append at a cost per event that stays flat"):
 *   node scripts/run.mjs dev bench/micro/pg-append.ts
 */
import pg from 'pg';
import { startPostgres } from '../../test/support/postgres.js';
import { PostgresEventStore } from '../../src/adapters/postgres-event-store.js';
const server = await startPostgres();
const url = await server.freshDatabase('ap');
const es = new PostgresEventStore(url);
await es.headPosition();
const c = new pg.Client({ connectionString: url });
await c.connect();
const meta = JSON.stringify({ time: 1795874430812, actor: 'apikey:IVJlOARmO2eKtW0eva5D', requestId: 'lC7orjCcxM8KGkVM', apiKey: 'IVJlOARmO2eKtW0eva5D', workspaceId: 'adbVo3DSVut0hjT9fZeV' });
let n = 0;
function batch(streams: number) {
  const keys: string[] = [], expected: string[] = [], counts: number[] = [], ids: string[] = [], types: string[] = [], data: string[] = [], metas: string[] = [];
  for (let i = 0; i < streams; i++) {
    const d = n++;
    keys.push(`document-["IVJlOARmO2eKtW0eva5D","adds","a${d}"]`); expected.push('no_stream'); counts.push(1);
    ids.push(`0199-${d}-${Math.random()}`); types.push('DocumentAdded');
    data.push(JSON.stringify({ organizationId: 'adds', documentId: `a${d}`, documentName: 'Added', folderId: null, accessType: null, disabled: false, createdAt: 1795874430812 }));
    metas.push(meta);
  }
  return [keys, expected, counts, ids, types, data, metas];
}
for (const size of [1, 10, 50, 100, 200, 100]) {
  const t0 = process.hrtime.bigint();
  const R = 20;
  for (let r = 0; r < R; r++) await c.query('SELECT * FROM collab_append($1::text[], $2::text[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::text[])', batch(size));
  const ms = Number(process.hrtime.bigint() - t0) / 1e6 / R;
  console.log(`append of ${size} streams: ${ms.toFixed(2)} ms (${((ms * 1000) / size).toFixed(0)} us per event)`);
}

await c.query(`INSERT INTO events (id, stream, revision, type, data, metadata) SELECT 'bulk' || g, 'document-' || g, 0, 'T', '{}', '{}' FROM generate_series(1, 50000) g`);
await c.query('ANALYZE events');
for (const size of [100]) {
  const t0 = process.hrtime.bigint();
  for (let r = 0; r < (process.env.ONE ? 1 : 20); r++) await c.query('SELECT * FROM collab_append($1::text[], $2::text[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::text[])', batch(size));
  console.log(`after 50k: append of ${size}: ${(Number(process.hrtime.bigint() - t0) / 1e6 / 20).toFixed(2)} ms`);
}
await c.end(); await es.close(); await server.close(); process.exit(0);
