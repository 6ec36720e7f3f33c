/**
 * `npm run bench [-- --quick | --full] [--scenario=a,b]`: builds the service (npm run build)
 * and starts it from dist/, the compiled JavaScript production runs, on a fresh embedded
 * store; seeds data through the API, and measures each scenario against two ceilings in one
 * run: a raw node:http server that parses the same body and answers the same envelope
 * (bench/raw-server.mjs, the ceiling of this machine) and a bare Fastify server doing the same
 * with Fastify's defaults (bench/fastify-server.mjs, the ceiling of the framework). The
 * service/raw ratio is the one the targets name; fastify/raw and service/fastify say how much
 * of the gap is the framework's and how much ours.
 * Prints a table and writes it as JSON under bench/results/; the last line counts the targets
 * met.
 *
 * Scenarios (--scenario=): perm1, perm1asof (perm1 with asOf, beside the live one), perm1rate, perm10, docs, size, add, move, memory, access,
 * rebuild, workers. --store=postgres also measures permissions/get (perm1), documents/add (add)
 * and the rebuild on PostgreSQL, beside the same scenarios on SQLite in the same run: a
 * throwaway server (test/support/postgres.ts, Debian's binaries) and a service on it, seeded the
 * same way; each row gives PostgreSQL's figure against SQLite's and their ratio. workers measures a one-document write's latency with one process and with
 * `serve --workers 2`, each on a fresh store of its own, in alternating rounds. perm1rate is perm1's request at a fixed 1,000 requests/s: its latency at a steady
 * load rather than at saturation, from bench/steady-load.ts (evenly spaced requests), beside
 * the raw ceiling at the same rate. rebuild replays the log in this process, importing the
 * projections from the TypeScript sources (through tsx), not from dist/.
 *
 * The service and the ceilings run as child processes; the load generator (autocannon) runs
 * here. Each gets the same connections, duration and request bodies, so the ratios compare
 * like with like on whatever machine runs it.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import autocannon from 'autocannon';
import { steadyLoad } from './steady-load.js';
import { SqliteEventStore } from '../src/adapters/sqlite-event-store.js';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { ProjectionRunner } from '../src/runtime/projection-runner.js';
import { allProjections } from '../projections/index.js';
import { PostgresEventStore } from '../src/adapters/postgres-event-store.js';
import { PostgresReadStore } from '../src/adapters/postgres-read-store.js';
import type { EventStore } from '../src/ports/event-store.js';
import type { ReadStore } from '../src/ports/read-store.js';
// The bench's PostgreSQL is the suites' throwaway server: one starter to keep working (both
// are dev-only; neither the bench nor the tests are part of the build).
import { startPostgres } from '../test/support/postgres.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// ---- scale ----

const args = new Set(process.argv.slice(2));
const scale = args.has('--full') ? 'full' : args.has('--quick') ? 'quick' : 'standard';
// --scenario=perm1,docs: measure only these (perm1, perm1rate, perm10, docs, size, add, move,
// memory, rebuild, access, workers); the seeding is the same. Without it, every scenario runs.
const only = process.argv.find((a) => a.startsWith('--scenario='))?.slice('--scenario='.length).split(',');
const want = (name: string) => !only || only.includes(name);
// --store=postgres: perm1, add and rebuild measured on PostgreSQL too, beside SQLite.
const storeArg = process.argv.find((a) => a.startsWith('--store='))?.slice('--store='.length) ?? 'sqlite';
if (storeArg !== 'sqlite' && storeArg !== 'postgres') {
  console.error(`--store=${storeArg}: unknown store; --store=postgres measures PostgreSQL beside SQLite (the default, --store=sqlite, SQLite alone)`);
  process.exit(2);
}
const withPostgres = storeArg === 'postgres';
const S = {
  quick: { bigDocs: 20_000, smallDocs: 1_000, subtree: 1_000, seconds: 3 },
  standard: { bigDocs: 100_000, smallDocs: 1_000, subtree: 10_000, seconds: 8 },
  full: { bigDocs: 1_000_000, smallDocs: 1_000, subtree: 10_000, seconds: 10 },
}[scale];
const CONNECTIONS = 50;
// perm1rate: the fixed request rate, and the keep-alive connections available to carry it
// (BENCH_RATE_CONNECTIONS). Requests are spaced evenly (bench/steady-load.ts), so at this rate
// one or two are in flight at a time; the others are there for a stall.
const RATE = 1000;
const RATE_CONNECTIONS = Number(process.env.BENCH_RATE_CONNECTIONS ?? 10);
// The access queries' organization: BENCH_ACCESS_DOCS documents (default: the scale's big
// organization's size), all restricted, one in BENCH_ACCESS_EVERY granted to one user.
const ACCESS_DOCS = Number(process.env.BENCH_ACCESS_DOCS ?? S.bigDocs);
const ACCESS_EVERY = Number(process.env.BENCH_ACCESS_EVERY ?? 1000);

// ---- processes ----

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** The paths the ceilings answer like the service (the bare Fastify one needs them up front). */
const MEASURED_ROUTES = ['/v2/auth/permissions/get', '/v2/organizations/documents/get', '/v2/organizations/documents/add'];

/** A ceiling server (bench/*.mjs), forked; it says `ready` through process.send once listening. */
async function startCeiling(file: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = fork(path.join(ROOT, 'bench', file), [], { env: { ...process.env, PORT: String(port), ROUTES: MEASURED_ROUTES.join(',') }, stdio: 'inherit' });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`bench/${file} exited with code ${code} before it was ready`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

/** The compiled service, as production runs it: `npm run build`, then node dist/src/server.js. */
const SERVER_ENTRY = path.join(ROOT, 'dist', 'src', 'server.js');
function buildService() {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0 || !fs.existsSync(SERVER_ENTRY)) throw new Error(`npm run build failed (exit ${r.status}); the bench measures the compiled service`);
  console.log(`built dist/ in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

async function startService(dataDir: string, serveArgs: string[] = [], env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  // BENCH_PROFILE_DIR=dir: the service writes a V8 CPU profile there when it exits.
  const prof = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...prof, SERVER_ENTRY, ...serveArgs], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'error', RATE_LIMIT_PER_SECOND: '0', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 400; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { url, child };
    } catch {
      /* starting */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('service did not start');
}

/**
 * The rebuild scenario: the whole log of `events` replayed into the fresh `read` by a runner in
 * this process, timed from the first batch to the last; closes both stores.
 */
async function timedRebuild(events: EventStore, read: ReadStore): Promise<{ replayed: number; seconds: number }> {
  const runner = new ProjectionRunner(events, read, allProjections, { batchSize: 2000 });
  await runner.init();
  const t0 = Date.now();
  const replayed = await runner.catchUp();
  const seconds = (Date.now() - t0) / 1000;
  await events.close();
  await read.close();
  return { replayed, seconds };
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

function rssMiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

// ---- HTTP helpers ----

let headers: Record<string, string> = {};

async function call(url: string, route: string, data: unknown): Promise<any> {
  const r = await fetch(`${url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ data }) });
  const body = (await r.json()) as any;
  if (r.status !== 200) throw new Error(`${route} -> ${r.status} ${JSON.stringify(body).slice(0, 500)}`);
  return body;
}

async function inBatches<T>(items: T[], size: number, parallel: number, fn: (batch: T[]) => Promise<unknown>) {
  const batches: T[][] = [];
  for (let i = 0; i < items.length; i += size) batches.push(items.slice(i, i + size));
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < batches.length) await fn(batches[next++]!);
    }),
  );
}

// ---- load ----

interface Load {
  reqPerSec: number;
  p50: number;
  p99: number;
  /** Mean latency, ms (autocannon's percentiles are whole milliseconds). */
  mean: number;
  errors: number;
  non2xx: number;
}

async function load(url: string, route: string, opts: { body?: string; setupBody?: () => string; connections?: number; seconds?: number; warmup?: boolean }): Promise<Load> {
  // A short warm-up first (JIT, caches, connection set-up), not counted: every measurement
  // then starts from the same warm state, whichever scenario ran before it.
  if (opts.warmup !== false) await load(url, route, { ...opts, seconds: 1, warmup: false });
  const result = await autocannon({
    url: `${url}${route}`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    connections: opts.connections ?? CONNECTIONS,
    duration: opts.seconds ?? S.seconds,
    ...(opts.setupBody
      ? { requests: [{ setupRequest: (req: any) => ({ ...req, body: opts.setupBody!() }) }] }
      : { body: opts.body }),
  });
  return { reqPerSec: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, mean: result.latency.average, errors: result.errors, non2xx: result.non2xx };
}

interface RateLoad {
  /** Completed requests per second over the run. */
  achieved: number;
  p50: number;
  p99: number;
  max: number;
  /** How late requests went out (ms, 99th percentile): stalls, and the timer's own lateness. */
  lateP99: number;
  errors: number;
  non2xx: number;
}

/**
 * `steadyLoad` (bench/steady-load.ts) at `rate`, after a one-second warm-up at the same rate:
 * requests spaced evenly, where autocannon's rate limit sends each second's share in a burst.
 */
async function loadAtRate(url: string, route: string, body: string, rate: number, connections: number, seconds: number): Promise<RateLoad> {
  const opts = { url, path: route, body, headers, rate, connections };
  await steadyLoad({ ...opts, seconds: 1 });
  const r = await steadyLoad({ ...opts, seconds });
  return { achieved: r.achievedRate, p50: r.p50, p99: r.p99, max: r.max, lateP99: r.lateP99, errors: r.errors, non2xx: r.non2xx };
}

/**
 * Measures the service, the bare Fastify ceiling and the raw one with the same request, one
 * after the other, both ceilings answering the service's own envelope for it.
 */
async function versus(svc: string, fw: string, raw: string, route: string, data: unknown, connections = CONNECTIONS) {
  const body = JSON.stringify({ data });
  const sample = await call(svc, route, data);
  for (const ceiling of [fw, raw]) {
    const r = await fetch(`${ceiling}/__canned`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ path: route, body: sample }) });
    if (!r.ok) throw new Error(`${ceiling}/__canned -> ${r.status}`);
  }
  const measured = await load(svc, route, { body, connections });
  const framework = await load(fw, route, { body, connections });
  const ceiling = await load(raw, route, { body, connections });
  return { measured, framework, ceiling, sample };
}

/** The ceiling columns of a row measured by versus(). */
function ceilings(v: Awaited<ReturnType<typeof versus>>) {
  const svc = v.measured.reqPerSec;
  const fw = v.framework.reqPerSec;
  const raw = v.ceiling.reqPerSec;
  return {
    fastify: `${fmt(fw)} req/s`,
    ceiling: `${fmt(raw)} req/s`,
    ratio: (svc / raw).toFixed(2),
    fastifyRaw: (fw / raw).toFixed(2),
    svcFastify: (svc / fw).toFixed(2),
  };
}

// ---- results ----

interface Row {
  scenario: string;
  measured: string;
  /** The bare Fastify ceiling, where measured. */
  fastify: string;
  /** The raw node:http ceiling. */
  ceiling: string;
  /** service / raw: the ratio the targets name. */
  ratio: string;
  fastifyRaw: string;
  svcFastify: string;
  target: string;
  met: boolean | null;
  raw: Record<string, unknown>;
}
const NO_CEILING = { fastify: '-', ceiling: '-', ratio: '-', fastifyRaw: '-', svcFastify: '-' };
const rows: Row[] = [];
const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));

function printTable() {
  const cols: Array<[keyof Row, string]> = [
    ['scenario', 'scenario'],
    ['measured', 'service'],
    ['fastify', 'bare fastify'],
    ['ceiling', 'raw'],
    ['ratio', 'svc/raw'],
    ['fastifyRaw', 'fastify/raw'],
    ['svcFastify', 'svc/fastify'],
    ['target', 'target'],
    ['met', 'met'],
  ];
  const cell = (r: Row, c: keyof Row) => (c === 'met' ? (r.met === null ? 'report' : r.met ? 'yes' : 'NO') : String(r[c]));
  const widths = cols.map(([c, h]) => Math.max(h.length, ...rows.map((r) => cell(r, c).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i]!)).join(' | ');
  console.log('\n' + line(cols.map(([, h]) => h)));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const r of rows) console.log(line(cols.map(([c]) => cell(r, c))));
}

/**
 * Rows whose target is a figure count; a `report` row has none, and only fails when its
 * requests did, which is then said apart.
 */
function targetsSummary(): string {
  const targets = rows.filter((r) => !r.target.startsWith('report'));
  const met = targets.filter((r) => r.met === true).length;
  const failedReports = rows.filter((r) => r.target.startsWith('report') && r.met === false).length;
  return `targets met: ${met} of ${targets.length}${failedReports ? ` (and ${failedReports} report row(s) had failed requests)` : ''}`;
}

// ---- seeding ----

const ids = (prefix: string, n: number, from = 0) => Array.from({ length: n }, (_, i) => `${prefix}${from + i}`);

async function seedOrg(url: string, org: string, docs: number) {
  await call(url, '/v2/organizations/add', { organizations: [{ organizationId: org, organizationName: org }] });
  // A chain of folders 10 deep: f1 > f2 > ... > f10.
  for (let d = 1; d <= 10; d++) {
    await call(url, '/v2/organizations/folders/add', {
      organizationId: org,
      folders: [{ folderId: `f${d}`, folderName: `Level ${d}`, ...(d > 1 ? { parentFolderId: `f${d - 1}` } : {}), ...(d === 4 ? { accessType: 'organizationPrivate' } : {}) }],
    });
  }
  // Documents spread over the ten levels; the ones the queries ask for sit at the deepest.
  await inBatches(ids('d', docs), 1000, 4, (batch) =>
    call(url, '/v2/organizations/documents/add', {
      organizationId: org,
      // Large orgs: batch b goes to level (b mod 10) + 1; small ones all sit at the deepest.
      folderId: docs < 10_000 ? 'f10' : `f${((Number(batch[0]!.slice(1)) / 1000) % 10) + 1}`,
      documents: batch.map((documentId) => ({ documentId, documentName: `Doc ${documentId}` })),
    }),
  );
  // Users: u0 is an organization member, u1..u9 have grants on folders of the chain.
  await call(url, '/v2/users/add', { organizationId: org, users: [{ userId: 'u0', name: 'User Zero', email: 'u0@example.com', accessRole: 'editor' }] });
  for (let u = 1; u < 10; u++) {
    await call(url, '/v2/users/add', { organizationId: org, folderId: `f${u}`, users: [{ userId: `u${u}`, name: `User ${u}`, email: `u${u}@example.com`, accessRole: u % 2 ? 'viewer' : 'editor' }] });
  }
}

/**
 * The access queries' organization: `docs` documents in a restricted folder at the root, in
 * creation order; the user `scattered` holds a viewer grant on one in `every`, spread evenly.
 */
async function seedAccessOrg(url: string, org: string, docs: number, every: number) {
  await call(url, '/v2/organizations/folders/add', { organizationId: org, createOrganization: true, folders: [{ folderId: 'vault', accessType: 'restricted' }] });
  await inBatches(ids('v', docs), 1000, 4, (batch) =>
    call(url, '/v2/organizations/documents/add', { organizationId: org, folderId: 'vault', documents: batch.map((documentId) => ({ documentId })) }));
  const granted = ids('v', docs).filter((_, i) => i % every === every - 1);
  for (let i = 0; i < granted.length; i += 1000) {
    await call(url, '/v2/auth/permissions/add', {
      userId: 'scattered',
      permissions: { resources: granted.slice(i, i + 1000).map((id) => ({ type: 'document', id, organizationId: org, accessRole: 'viewer' })) },
    });
  }
}

/** The ids of documents in f10 (the deepest folder) of an org seeded by seedOrg. */
function deepDocs(docs: number, n: number): string[] {
  if (docs < 10_000) return ids('d', n);
  const out: string[] = [];
  for (let b = 9000; b < docs && out.length < n; b += 10_000) for (let i = 0; i < 1000 && out.length < n; i++) out.push(`d${b + i}`);
  return out;
}

// ---- workers ----

const ONE_DOC_CONNECTIONS = 10;

/** A service started with `serveArgs` on a fresh store, with a workspace and an organization to add to. */
async function oneDocService(serveArgs: string[], env: Record<string, string> = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-bench-workers-'));
  const svc = await startService(dir, serveArgs, env);
  const saved = headers;
  headers = {};
  const ws = await call(svc.url, '/v2/workspace/create', { ownerEmail: 'workers@example.com' });
  const [apiKey, key] = Object.entries(ws.result.data.apiKeyList)[0] as [string, { authToken: string }];
  const own = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
  headers = own;
  await call(svc.url, '/v2/organizations/add', { organizations: [{ organizationId: 'ones' }] });
  headers = saved;
  let n = 0;
  const body = () => JSON.stringify({ data: { organizationId: 'ones', documents: [{ documentId: `o${n++}`, documentName: 'One' }] } });
  return {
    async measure(): Promise<Load> {
      const before = headers;
      headers = own;
      try {
        return await load(svc.url, '/v2/organizations/documents/add', { setupBody: body, connections: ONE_DOC_CONNECTIONS });
      } finally {
        headers = before;
      }
    },
    async stop() {
      await stop(svc.child);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Both services run at once and are measured in turns (one, cluster, one, ...): on a machine
 * shared with other work, a load that comes and goes then weighs on both sides alike. The
 * median round of each side is reported.
 */
async function oneDocAdds(rounds: number, env: () => Promise<Record<string, string>> = async () => ({})): Promise<{ single: Load; cluster: Load }> {
  const single = await oneDocService([], await env());
  const cluster = await oneDocService(['--workers', '2'], await env());
  try {
    const a: Load[] = [];
    const b: Load[] = [];
    for (let i = 0; i < rounds; i++) {
      a.push(await single.measure());
      b.push(await cluster.measure());
    }
    const median = (xs: Load[]) => [...xs].sort((x, y) => x.mean - y.mean)[Math.floor(xs.length / 2)]!;
    return { single: median(a), cluster: median(b) };
  } finally {
    await single.stop();
    await cluster.stop();
  }
}

// ---- PostgreSQL beside SQLite (--store=postgres) ----

interface SqliteFigures {
  seedSeconds?: number;
  perm1?: Load;
  adds?: Load;
  rebuild?: { replayed: number; seconds: number };
}

/**
 * The same seeding and the same perm1, add and rebuild scenarios as on SQLite above, on a
 * service whose both ports are in a throwaway PostgreSQL server on this machine (POSTGRES_URL),
 * each row PostgreSQL's figure against SQLite's of this run, the ratio PostgreSQL / SQLite
 * (above 1: PostgreSQL does more per second). Rows are reports: no target names PostgreSQL.
 */
async function postgresBeside(sqlite: SqliteFigures) {
  const t0 = Date.now();
  const server = await startPostgres();
  console.log(`started a throwaway PostgreSQL server on port ${server.port} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-bench-pg-'));
  const saved = headers;
  try {
    const url = await server.freshDatabase('bench');
    // Both ports external: every process must share one master key (SECRETS_KEY).
    const svc = await startService(dir, [], { POSTGRES_URL: url, SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') });
    try {
      headers = {};
      const ws = await call(svc.url, '/v2/workspace/create', { ownerEmail: 'bench-pg@example.com' });
      const [apiKey, key] = Object.entries(ws.result.data.apiKeyList)[0] as [string, { authToken: string }];
      headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
      const t1 = Date.now();
      await seedOrg(svc.url, 'big', S.bigDocs);
      await seedOrg(svc.url, 'small', S.smallDocs);
      const seedSeconds = (Date.now() - t1) / 1000;
      console.log(`seeded ${S.bigDocs + S.smallDocs} documents on PostgreSQL in ${seedSeconds.toFixed(1)} s`);
      const seeded = S.bigDocs + S.smallDocs;
      if (sqlite.seedSeconds !== undefined) {
        const pgRate = seeded / seedSeconds;
        const sqRate = seeded / sqlite.seedSeconds;
        rows.push({
          scenario: `seeding ${fmt(seeded)} docs (documents/add of 1,000, 4 at once): PostgreSQL vs SQLite`,
          measured: `${fmt(pgRate)} vs ${fmt(sqRate)} docs/s`,
          ...NO_CEILING,
          ratio: (pgRate / sqRate).toFixed(2),
          target: 'report',
          met: null,
          raw: { seeded, postgresSeconds: seedSeconds, sqliteSeconds: sqlite.seedSeconds },
        });
      }

      if (want('perm1') && sqlite.perm1) {
        console.log('measuring permissions/get on PostgreSQL');
        const perm1 = { organizationId: 'big', userIds: ['u3'], documentIds: deepDocs(S.bigDocs, 10) };
        await call(svc.url, '/v2/auth/permissions/get', perm1);
        const pg1 = await load(svc.url, '/v2/auth/permissions/get', { body: JSON.stringify({ data: perm1 }) });
        const sq = sqlite.perm1;
        rows.push({
          scenario: `permissions/get 1 user x 10 docs (org ${S.bigDocs} docs): PostgreSQL vs SQLite`,
          measured: `${fmt(pg1.reqPerSec)} vs ${fmt(sq.reqPerSec)} req/s, p99 ${pg1.p99} vs ${sq.p99} ms`,
          ...NO_CEILING,
          ratio: (pg1.reqPerSec / sq.reqPerSec).toFixed(2),
          target: 'report',
          met: pg1.non2xx === 0 && pg1.errors === 0 ? null : false,
          raw: { postgres: pg1, sqlite: sq },
        });
      }

      if (want('add') && sqlite.adds) {
        console.log('measuring documents/add on PostgreSQL');
        let n = 0;
        const addBody = () =>
          JSON.stringify({
            data: { organizationId: 'adds', createOrganization: true, documents: Array.from({ length: 100 }, () => ({ documentId: `a${n++}`, documentName: 'Added' })) },
          });
        await call(svc.url, '/v2/organizations/add', { organizations: [{ organizationId: 'adds' }] });
        const adds = await load(svc.url, '/v2/organizations/documents/add', { setupBody: addBody, connections: 10 });
        const sq = sqlite.adds;
        rows.push({
          scenario: 'documents/add batches of 100 (read-your-writes): PostgreSQL vs SQLite',
          measured: `${fmt(adds.reqPerSec * 100)} vs ${fmt(sq.reqPerSec * 100)} docs/s, p99 ${adds.p99} vs ${sq.p99} ms`,
          ...NO_CEILING,
          ratio: (adds.reqPerSec / sq.reqPerSec).toFixed(2),
          target: 'report',
          met: adds.non2xx === 0 && adds.errors === 0 ? null : false,
          raw: { postgres: adds, sqlite: sq },
        });
      }
    } finally {
      headers = saved;
      await stop(svc.child);
    }
    // Nothing of it in DATA_DIR: both ports were PostgreSQL's.
    const written = fs.readdirSync(dir);
    if (written.length) throw new Error(`the PostgreSQL service wrote to DATA_DIR: ${written.join(', ')}`);

    // The rebuild as on SQLite: the whole log replayed by a runner in this process into a
    // fresh read store, here a database of its own on the same server.
    if (want('rebuild') && sqlite.rebuild) {
      console.log('rebuilding the read models from the PostgreSQL log');
      const { replayed, seconds } = await timedRebuild(new PostgresEventStore(url), new PostgresReadStore(await server.freshDatabase('bench_rebuild')));
      const eps = replayed / seconds;
      const sqEps = sqlite.rebuild.replayed / sqlite.rebuild.seconds;
      rows.push({
        scenario: `projection rebuild (PostgreSQL ${replayed.toLocaleString('en-US')} vs SQLite ${sqlite.rebuild.replayed.toLocaleString('en-US')} events)`,
        measured: `${fmt(eps)} vs ${fmt(sqEps)} events/s`,
        ...NO_CEILING,
        ratio: (eps / sqEps).toFixed(2),
        target: 'report',
        met: null,
        raw: { postgres: { replayed, seconds }, sqlite: sqlite.rebuild },
      });
    }
  } finally {
    headers = saved;
    fs.rmSync(dir, { recursive: true, force: true });
    // The server's process is unref'd (it never keeps a test run alive), so while close() waits
    // for it to exit nothing else may hold the event loop: this timer does, else the bench would
    // end there, silently, with exit code 0 and no table.
    const hold = setInterval(() => undefined, 1000);
    try {
      await server.close();
    } finally {
      clearInterval(hold);
    }
  }
}

// ---- main ----

async function main() {
  console.log(`bench: ${scale} scale (${JSON.stringify(S)}), ${os.cpus().length} cores, node ${process.version}`);
  buildService();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-bench-'));
  const raw = await startCeiling('raw-server.mjs');
  const fw = await startCeiling('fastify-server.mjs');
  let svc = await startService(dataDir);
  // SQLite's figures for the rows that set PostgreSQL's beside them (--store=postgres).
  const sqlite: SqliteFigures = {};
  try {
    const ws = await call(svc.url, '/v2/workspace/create', { ownerEmail: 'bench@example.com' });
    const [apiKey, key] = Object.entries(ws.result.data.apiKeyList)[0] as [string, { authToken: string }];
    headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };

    let t0 = Date.now();
    await seedOrg(svc.url, 'big', S.bigDocs);
    await seedOrg(svc.url, 'small', S.smallDocs);
    const seedSeconds = (Date.now() - t0) / 1000;
    sqlite.seedSeconds = seedSeconds;
    console.log(`seeded ${S.bigDocs + S.smallDocs} documents in ${seedSeconds.toFixed(1)} s`);
    const rssAfterSeed = rssMiB(svc.child.pid!);

    // permissions/get, 1 user x 10 documents in the deepest folder.
    const perm1 = { organizationId: 'big', userIds: ['u3'], documentIds: deepDocs(S.bigDocs, 10) };
    const page = { organizationId: 'big', folderId: 'f10', pageSize: 100 };
    let p1: Awaited<ReturnType<typeof versus>> | undefined;
    let dg: Awaited<ReturnType<typeof versus>> | undefined;
    if (want('perm1')) {
      p1 = await versus(svc.url, fw.url, raw.url, '/v2/auth/permissions/get', perm1);
      sqlite.perm1 = p1.measured;
      const ratio1 = p1.measured.reqPerSec / p1.ceiling.reqPerSec;
      rows.push({
        scenario: `permissions/get 1 user x 10 docs (org ${S.bigDocs} docs, 10 deep)`,
        measured: `${fmt(p1.measured.reqPerSec)} req/s, p99 ${p1.measured.p99} ms`,
        ...ceilings(p1),
        target: '>= 0.5, p99 < 10 ms',
        met: ratio1 >= 0.5 && p1.measured.p99 < 10 && p1.measured.non2xx === 0,
        raw: p1,
      });
    }

    // permissions/get as of a past instant (issue 25), beside the live one in the same run:
    // perm1's question asked of the history read models (queries/as-of.ts) at the instant
    // seeding ended, when every seeded grant and document already was.
    if (want('perm1asof')) {
      const asOf = Date.now();
      const live = p1?.measured ?? (await load(svc.url, '/v2/auth/permissions/get', { body: JSON.stringify({ data: perm1 }) }));
      const past = await load(svc.url, '/v2/auth/permissions/get', { body: JSON.stringify({ data: { ...perm1, asOf } }) });
      rows.push({
        scenario: `permissions/get 1 user x 10 docs with asOf (org ${S.bigDocs} docs, 10 deep)`,
        measured: `${fmt(past.reqPerSec)} req/s, p99 ${past.p99} ms; live ${fmt(live.reqPerSec)} req/s, p99 ${live.p99} ms`,
        ...NO_CEILING,
        ratio: (past.reqPerSec / live.reqPerSec).toFixed(2),
        target: 'report (asOf / live)',
        met: past.non2xx === 0 ? null : false,
        raw: { asOf: past, live },
      });
    }

    // permissions/get, perm1's request at a fixed 1,000 requests/s: the latency of a steady
    // load well under saturation, where the other scenarios measure throughput.
    if (want('perm1rate')) {
      const body = JSON.stringify({ data: perm1 });
      // The raw ceiling at the same rate, answering the service's envelope: what this machine
      // and this load generator add to any request, service or not.
      await fetch(`${raw.url}/__canned`, { method: 'POST', body: JSON.stringify({ path: '/v2/auth/permissions/get', body: await call(svc.url, '/v2/auth/permissions/get', perm1) }) });
      const pr = await loadAtRate(svc.url, '/v2/auth/permissions/get', body, RATE, RATE_CONNECTIONS, S.seconds);
      const floor = await loadAtRate(raw.url, '/v2/auth/permissions/get', body, RATE, RATE_CONNECTIONS, S.seconds);
      const reached = Math.abs(pr.achieved - RATE) <= RATE * 0.05;
      const ms = (r: RateLoad) => `p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`;
      rows.push({
        scenario: `permissions/get 1 user x 10 docs at ${fmt(RATE)} req/s, evenly spaced`,
        measured: `${fmt(pr.achieved)} req/s, ${ms(pr)} (sent late p99 ${pr.lateP99.toFixed(2)} ms)`,
        ...NO_CEILING,
        ceiling: `${ms(floor)}`,
        target: `p99 < 2 ms at ${fmt(RATE)} req/s (within 5%)`,
        met: pr.p99 < 2 && reached && pr.non2xx === 0 && pr.errors === 0,
        raw: { service: pr, rawCeiling: floor, rate: RATE, connections: RATE_CONNECTIONS },
      });
    }

    // permissions/get, 10 users x 30 documents.
    if (want('perm10')) {
      const perm10 = { organizationId: 'big', userIds: ids('u', 10), documentIds: deepDocs(S.bigDocs, 30) };
      const p10 = await versus(svc.url, fw.url, raw.url, '/v2/auth/permissions/get', perm10);
      rows.push({
        scenario: 'permissions/get 10 users x 30 docs',
        measured: `${fmt(p10.measured.reqPerSec)} req/s, ${fmt(p10.measured.reqPerSec * 300)} entries/s`,
        ...ceilings(p10),
        target: 'report',
        met: p10.measured.non2xx === 0 ? null : false,
        raw: p10,
      });
    }

    // documents/get, a page of 100 rows.
    if (want('docs')) {
      dg = await versus(svc.url, fw.url, raw.url, '/v2/organizations/documents/get', page);
      const ratioDg = dg.measured.reqPerSec / dg.ceiling.reqPerSec;
      rows.push({
        scenario: 'documents/get page of 100',
        measured: `${fmt(dg.measured.reqPerSec)} req/s, p99 ${dg.measured.p99} ms`,
        ...ceilings(dg),
        target: '>= 0.4',
        met: ratioDg >= 0.4 && dg.measured.non2xx === 0,
        raw: dg,
      });
    }

    // Cost vs size: the same two queries on the small organization (each after a warm-up).
    if (want('size')) {
      const permBig = p1?.measured ?? (await load(svc.url, '/v2/auth/permissions/get', { body: JSON.stringify({ data: perm1 }) }));
      const pageBig = dg?.measured ?? (await load(svc.url, '/v2/organizations/documents/get', { body: JSON.stringify({ data: page }) }));
      const permSmall = await load(svc.url, '/v2/auth/permissions/get', { body: JSON.stringify({ data: { ...perm1, organizationId: 'small', documentIds: deepDocs(S.smallDocs, 10) } }) });
      const pageSmall = await load(svc.url, '/v2/organizations/documents/get', { body: JSON.stringify({ data: { ...page, organizationId: 'small' } }) });
      const sizeRatioP = permSmall.reqPerSec / permBig.reqPerSec;
      const sizeRatioD = pageSmall.reqPerSec / pageBig.reqPerSec;
      rows.push({
        scenario: `cost vs size: ${S.smallDocs} vs ${S.bigDocs} docs (permissions / documents)`,
        measured: `${sizeRatioP.toFixed(2)}x / ${sizeRatioD.toFixed(2)}x slower`,
        ...NO_CEILING,
        ratio: `${sizeRatioP.toFixed(2)} / ${sizeRatioD.toFixed(2)}`,
        target: 'within 1.2x',
        met: sizeRatioP <= 1.2 && sizeRatioD <= 1.2,
        raw: { permSmall, pageSmall },
      });
    }

    // documents/add in batches of 100, read-your-writes on (every response waits for projections).
    if (want('add')) {
      let n = 0;
      const addBody = () =>
        JSON.stringify({
          data: { organizationId: 'adds', createOrganization: true, documents: Array.from({ length: 100 }, () => ({ documentId: `a${n++}`, documentName: 'Added' })) },
        });
      await call(svc.url, '/v2/organizations/add', { organizations: [{ organizationId: 'adds' }] });
      const adds = await load(svc.url, '/v2/organizations/documents/add', { setupBody: addBody, connections: 10 });
      sqlite.adds = adds;
      const addSample = await call(svc.url, '/v2/organizations/documents/add', JSON.parse(addBody()).data);
      await fetch(`${raw.url}/__canned`, { method: 'POST', body: JSON.stringify({ path: '/v2/organizations/documents/add', body: addSample }) });
      const addCeiling = await load(raw.url, '/v2/organizations/documents/add', { setupBody: addBody, connections: 10 });
      const docsPerSec = adds.reqPerSec * 100;
      rows.push({
        scenario: 'documents/add batches of 100 (read-your-writes)',
        measured: `${fmt(docsPerSec)} docs/s, p99 ${adds.p99} ms`,
        ...NO_CEILING,
        ceiling: `${fmt(addCeiling.reqPerSec * 100)} docs/s`,
        ratio: (adds.reqPerSec / addCeiling.reqPerSec).toFixed(2),
        target: '>= 20,000 docs/s',
        met: docsPerSec >= 20_000 && adds.non2xx === 0,
        raw: { adds, addCeiling },
      });
    }

    // Folder move of a subtree with S.subtree folders: A (inheriting) moves under B (restricted).
    if (want('move')) {
      await call(svc.url, '/v2/organizations/add', { organizations: [{ organizationId: 'moves' }] });
      await call(svc.url, '/v2/organizations/folders/add', { organizationId: 'moves', folders: [{ folderId: 'A' }, { folderId: 'B', accessType: 'restricted' }] });
      const subtree: Array<{ folderId: string; parentFolderId: string }> = [];
      let frontier = ['A'];
      while (subtree.length < S.subtree) {
        const next: string[] = [];
        for (const parent of frontier) {
          for (let c = 0; c < 10 && subtree.length < S.subtree; c++) {
            const folderId = `${parent}.${c}`;
            subtree.push({ folderId, parentFolderId: parent });
            next.push(folderId);
          }
        }
        frontier = next;
    }
    for (let i = 0; i < subtree.length; i += 1000) {
      await call(svc.url, '/v2/organizations/folders/add', { organizationId: 'moves', folders: subtree.slice(i, i + 1000) });
    }
    const deepest = subtree[subtree.length - 1]!.folderId;
    await call(svc.url, '/v2/organizations/documents/add', { organizationId: 'moves', folderId: deepest, documents: [{ documentId: 'deep-doc' }] });
    const accessOfDeepDoc = async () => {
      const r = await call(svc.url, '/v2/auth/permissions/get', { organizationId: 'moves', userIds: ['nobody'], documentIds: ['deep-doc'] });
      return r.result.data.nobody?.documents?.['deep-doc']?.accessType as string | undefined;
    };
    const before = await accessOfDeepDoc();
    t0 = Date.now();
    await call(svc.url, '/v2/organizations/folders/update', { organizationId: 'moves', folders: [{ folderId: 'A', parentFolderId: 'B' }] });
    let after = await accessOfDeepDoc();
    while (after !== 'restricted' && Date.now() - t0 < 60_000) {
      await new Promise((r) => setTimeout(r, 10));
      after = await accessOfDeepDoc();
    }
    const moveMs = Date.now() - t0;
    rows.push({
      scenario: `folder move of a ${S.subtree}-folder subtree until permissions reflect it`,
      measured: `${moveMs} ms (${before} -> ${after})`,
      ...NO_CEILING,
      target: '< 2000 ms',
      met: moveMs < 2000 && before === 'public' && after === 'restricted',
      raw: { moveMs, before, after },
    });
    }

    // Memory: resident set after seeding, and growth across a repeated run of the same load.
    if (want('memory')) {
      const rssBefore = rssMiB(svc.child.pid!);
      await load(svc.url, '/v2/auth/permissions/get', { body: JSON.stringify({ data: perm1 }) });
      await load(svc.url, '/v2/organizations/documents/get', { body: JSON.stringify({ data: page }) });
      const rssAfter = rssMiB(svc.child.pid!);
      rows.push({
        scenario: 'memory: resident set (after seeding; growth over a repeated run)',
        measured: `${rssAfterSeed} MiB; ${rssBefore} -> ${rssAfter} MiB`,
        ...NO_CEILING,
        target: 'report; no growth',
        met: rssAfter <= rssBefore * 1.1 + 16 ? null : false,
        raw: { rssAfterSeed, rssBefore, rssAfter },
      });
    }

    // Access queries (queries/access.ts), one connection: the latency of one request.
    // resources/get: the first page for a user holding grants on one document in ACCESS_EVERY
    // of a restricted organization; the read budget ends the page early, with a token.
    // users/get: a document under 10 levels of folders, users granted along the chain.
    if (want('access')) {
      // Seeded here, after the other scenarios, so their figures (memory included) stay
      // comparable with runs from before it existed.
      const t1 = Date.now();
      await seedAccessOrg(svc.url, 'access', ACCESS_DOCS, ACCESS_EVERY);
      console.log(`seeded the access organization (${ACCESS_DOCS} documents) in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
      const first = { organizationId: 'access', userId: 'scattered', type: 'document', pageSize: 100 };
      const sample = (await call(svc.url, '/v2/auth/resources/get', first)).result;
      const res = await load(svc.url, '/v2/auth/resources/get', { body: JSON.stringify({ data: first }), connections: 1 });
      rows.push({
        scenario: `resources/get first page, grants on 1 in ${ACCESS_EVERY} of ${ACCESS_DOCS} restricted docs (1 connection)`,
        measured: `p50 ${res.p50} ms, p99 ${res.p99} ms (mean ${res.mean.toFixed(2)}); ${sample.data.length} rows${sample.pageToken ? ' + pageToken' : ''}`,
        ...NO_CEILING,
        target: 'report',
        met: res.non2xx === 0 ? null : false,
        raw: { res, rows: sample.data.length, pageToken: Boolean(sample.pageToken) },
      });
      const who = { organizationId: 'big', documentId: deepDocs(S.bigDocs, 1)[0] };
      const users = (await call(svc.url, '/v2/auth/users/get', who)).result;
      const usr = await load(svc.url, '/v2/auth/users/get', { body: JSON.stringify({ data: who }), connections: 1 });
      rows.push({
        scenario: `users/get on a document 10 folders deep (org ${S.bigDocs} docs, 1 connection)`,
        measured: `p50 ${usr.p50} ms, p99 ${usr.p99} ms (mean ${usr.mean.toFixed(2)}); ${users.data.users.length} users`,
        ...NO_CEILING,
        target: 'report',
        met: usr.non2xx === 0 ? null : false,
        raw: { usr, users: users.data.users.length },
      });
    }
  } finally {
    await stop(svc.child);
    await stop(fw.child);
    await stop(raw.child);
  }

  // Projection rebuild: replay the whole log written above into a fresh read store.
  if (want('rebuild')) {
    const { replayed, seconds } = await timedRebuild(new SqliteEventStore(path.join(dataDir, 'events.db')), new SqliteReadStore(path.join(dataDir, 'rebuild.db')));
    const eps = replayed / seconds;
    sqlite.rebuild = { replayed, seconds };
    rows.push({
      scenario: `projection rebuild of ${replayed.toLocaleString('en-US')} events (embedded)`,
      measured: `${fmt(eps)} events/s`,
      ...NO_CEILING,
      target: '>= 50,000 events/s',
      met: eps >= 50_000,
      raw: { replayed, seconds },
    });
  }
  fs.rmSync(dataDir, { recursive: true, force: true });

  if (withPostgres) await postgresBeside(sqlite);

  // documents/add of one document at a time (read-your-writes), one process against `serve
  // --workers 2`: there the API process appends and the background process applies, so every
  // write waits for a notice to cross two processes and back (src/runtime/notices.ts).
  if (want('workers')) {
    const workersRow = (store: string, { single, cluster }: { single: Load; cluster: Load }) => {
      const ratio50 = cluster.p50 / Math.max(1, single.p50);
      const ratio99 = cluster.p99 / Math.max(1, single.p99);
      rows.push({
        scenario: `documents/add of 1 document, ${ONE_DOC_CONNECTIONS} connections: serve --workers 2 vs one process (${store})`,
        measured: `p50 ${cluster.p50} vs ${single.p50} ms, p99 ${cluster.p99} vs ${single.p99} ms (mean ${cluster.mean.toFixed(2)} vs ${single.mean.toFixed(2)})`,
        ...NO_CEILING,
        ratio: `${ratio50.toFixed(2)} / ${ratio99.toFixed(2)}`,
        target: '<= 2x at p50 and p99',
        met: ratio50 <= 2 && ratio99 <= 2 && single.non2xx === 0 && cluster.non2xx === 0,
        raw: { single, cluster },
      });
    };
    workersRow('SQLite', await oneDocAdds(3));
    // On PostgreSQL the notices cross processes by LISTEN/NOTIFY (src/adapters/postgres-common.ts).
    if (withPostgres) {
      const server = await startPostgres();
      try {
        const secretsKey = Buffer.alloc(32, 7).toString('base64');
        workersRow('PostgreSQL', await oneDocAdds(3, async () => ({ POSTGRES_URL: await server.freshDatabase('workers'), SECRETS_KEY: secretsKey })));
      } finally {
        await server.close();
      }
    }
  }

  printTable();
  const outDir = path.join(ROOT, 'bench', 'results');
  fs.mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${scale}.json`);
  fs.writeFileSync(file, JSON.stringify({ scale, store: storeArg, machine: { cores: os.cpus().length, node: process.version, loadavg: os.loadavg() }, summary: targetsSummary(), rows }, null, 2));
  console.log(`\nwritten: ${path.relative(ROOT, file)}`);
  console.log(targetsSummary());
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
