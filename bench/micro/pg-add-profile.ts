/**
 * Where a documents/add of 100 spends its time on PostgreSQL: service CPU, server CPU and
 * pg_stat_statements' statements by total time, under N concurrent loops for S seconds.
 *   node scripts/run.mjs dev bench/micro/pg-add-profile.ts [seconds] [connections]
 * Runs the compiled service (npm run build first). PROF=<dir>: a V8 CPU profile of the
 * service's main thread there; PERF_MAP=1: the service writes /tmp/perf-<pid>.map, so that
 * `perf record -a -g` beside it names JavaScript frames (every thread, the server's too).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { startPostgres } from '../../test/support/postgres.js';
import { postgresCpuUs } from '../stage-budget.js';

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 10);
const server = await startPostgres();
const admin = new pg.Client({ connectionString: server.url() });
await admin.connect();
await admin.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);

if (process.env.PG_SHARED_BUFFERS) await admin.query(`ALTER SYSTEM SET shared_buffers = '${process.env.PG_SHARED_BUFFERS}'`);
await admin.end();
await server.stop('fast');
await server.start();
const tcpUrl = await server.freshDatabase('prof');
const url = process.env.UNIX ? `postgres://${new URL(tcpUrl).username}@/${new URL(tcpUrl).pathname.slice(1)}?host=${path.join(path.dirname(server.dataDir), 'sock')}&port=${server.port}` : tcpUrl;
console.log(url);
const c = new pg.Client({ connectionString: url });
await c.connect();
await c.query('CREATE EXTENSION pg_stat_statements');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgprof-'));
const port = 40000 + Math.floor(Math.random() * 5000);
const child = spawn(process.execPath, [...(process.env.PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROF}`] : []), ...(process.env.PERF_MAP ? ['--perf-basic-prof'] : []), 'dist/src/server.js'], {
  env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dir, LOG_LEVEL: 'error', RATE_LIMIT_PER_SECOND: '0', POSTGRES_URL: url, SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const base = `http://127.0.0.1:${port}`;
for (;;) {
  try { if ((await fetch(`${base}/healthz`)).ok) break; } catch { /* starting */ }
  await new Promise((r) => setTimeout(r, 50));
}
let headers: Record<string, string> = { 'content-type': 'application/json' };
const call = async (route: string, data: unknown) => {
  const r = await fetch(base + route, { method: 'POST', headers, body: JSON.stringify({ data }) });
  const b = (await r.json()) as any;
  if (r.status !== 200) throw new Error(`${route} ${r.status} ${JSON.stringify(b).slice(0, 300)}`);
  return b;
};
const ws = await call('/v2/workspace/create', { ownerEmail: 'p@example.com' });
const [apiKey, key] = Object.entries(ws.result.data.apiKeyList)[0] as [string, { authToken: string }];
headers = { ...headers, 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
await call('/v2/organizations/add', { organizations: [{ organizationId: 'adds' }] });
let n = 0;
const batch = () => ({ organizationId: 'adds', documents: Array.from({ length: 100 }, () => ({ documentId: `a${n++}`, documentName: 'Added' })) });
for (let i = 0; i < 20; i++) await call('/v2/organizations/documents/add', batch());
await c.query('SELECT pg_stat_statements_reset()');
const cpu = (pid: number) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10_000; };
const s0 = cpu(child.pid!), p0 = postgresCpuUs(server.dataDir), t0 = Date.now();
let done = 0;
const end = Date.now() + seconds * 1000;
await Promise.all(Array.from({ length: connections }, async () => { while (Date.now() < end) { await call('/v2/organizations/documents/add', batch()); done++; } }));
const wall = (Date.now() - t0) / 1000;
const svc = cpu(child.pid!) - s0, pgc = postgresCpuUs(server.dataDir) - p0;
const docs = done * 100;
console.log(`${docs} docs in ${wall.toFixed(1)} s: ${(docs / wall).toFixed(0)} docs/s; per doc: service ${(svc / docs).toFixed(1)} us, postgres ${(pgc / docs).toFixed(1)} us; load ${os.loadavg()[0].toFixed(2)}`);
const st = await c.query(`SELECT calls, round(total_exec_time::numeric,1) AS ms, round((total_exec_time/calls)::numeric*1000,1) AS us_per_call, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 150) AS q FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25`);
console.log(`requests ${done}; statements per request:`);
for (const r of st.rows) console.log(`${String(r.calls).padStart(7)} ${String(r.ms).padStart(9)} ms ${String(r.us_per_call).padStart(9)} us/call rows ${String(r.rows).padStart(7)}  ${r.q}`);
const tot = await c.query('SELECT sum(calls) AS calls, sum(total_exec_time) AS ms FROM pg_stat_statements');
console.log(`total statements ${tot.rows[0].calls} (${(tot.rows[0].calls / done).toFixed(1)} per request), exec ${Number(tot.rows[0].ms).toFixed(0)} ms`);
const sizes = await c.query(`SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) s FROM pg_class WHERE relkind='r' AND relnamespace='public'::regnamespace ORDER BY pg_total_relation_size(oid) DESC LIMIT 8`);
console.log(sizes.rows.map((r) => `${r.relname} ${r.s}`).join(', '));
if (process.env.SAMPLES) {
  const a = await c.query(`SELECT doc::text AS doc FROM rm_audit_events ORDER BY id DESC LIMIT 2000`);
  const d = await c.query(`SELECT doc::text AS doc FROM rm_documents ORDER BY id DESC LIMIT 2000`);
  fs.writeFileSync(process.env.SAMPLES, JSON.stringify({ audit: a.rows.map((r) => r.doc), documents: d.rows.map((r) => r.doc) }));
}
await c.end();
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
await server.close();
process.exit(0);
