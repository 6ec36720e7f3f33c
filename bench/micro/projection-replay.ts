/**
 * Projection CPU per event, A/B between source trees (docs/performance.md, issue 27).
 *
 *   node scripts/run.mjs dev bench/micro/projection-replay.ts write <dir>
 *     writes two logs through the app (test/support/app.ts) into <dir>/add and <dir>/update:
 *     200 documents/add of 100 (REPLAY_ADD_REQUESTS); 100 rounds of add, rename and delete of
 *     the same 100 documents (REPLAY_LOGS=add: the first only).
 *   node scripts/run.mjs dev bench/micro/projection-replay.ts replay <dir> <rounds> <root>...
 *     replays each log into a fresh SQLite read store with each tree's own runner and
 *     projections (`<root>` is a checkout of the tree), alternating the trees round by round,
 *     and prints the CPU µs per event (process.cpuUsage around catchUp) of each replay
 *     (REPLAY_LOGS=add: that log only).
 *     `rebuild:<root>` replays through that tree's `rebuildReadModels` instead (what
 *     `collab projections rebuild` runs), so a change to the rebuild itself is measured too;
 *     `pg:<root>` into a PostgreSQL read store (a fresh database on a throwaway server,
 *     test/support/postgres.ts), where the wall time counts: the server's CPU is not ours;
 *     `pgrebuild:<root>` through `rebuildReadModels` into PostgreSQL.
 *     REPLAY_BATCH: events per projection batch (default 2000, as the bench's rebuild).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [mode, dir, ...rest] = process.argv.slice(2);
if (!dir || (mode !== 'write' && mode !== 'replay')) {
  console.error('usage: projection-replay.ts write <dir> | replay <dir> <rounds> <root>...');
  process.exit(2);
}

/** documents/add requests of the add log (REPLAY_ADD_REQUESTS: a bigger log). */
const ADD_REQUESTS = Number(process.env.REPLAY_ADD_REQUESTS ?? 200);
/** Events per projection batch of a replay (REPLAY_BATCH). */
const BATCH = Number(process.env.REPLAY_BATCH ?? 2000);

async function writeLogs(out: string) {
  const { harness } = await import('../../test/support/app.js');
  const orgDoc = (i: number) => ({ documentId: `d${i}`, documentName: `Doc ${i}` });
  for (const log of (process.env.REPLAY_LOGS ?? 'add,update').split(',')) {
    const dataDir = path.join(out, log);
    fs.mkdirSync(dataDir, { recursive: true });
    const h = await harness({ DATA_DIR: dataDir });
    const t = await h.tenant();
    const post = (url: string, data: unknown) => h.ok(url, data, t.headers);
    await post('/v2/organizations/add', { organizations: [{ organizationId: 'o', organizationName: 'o' }] });
    for (let r = 0; r < (log === 'add' ? ADD_REQUESTS : 100); r++) {
      const docs = Array.from({ length: 100 }, (_, i) => orgDoc(log === 'add' ? r * 100 + i : i));
      await post('/v2/organizations/documents/add', { organizationId: 'o', documents: docs });
      if (log === 'add') continue;
      await post('/v2/organizations/documents/update', { organizationId: 'o', documents: docs.map((d) => ({ ...d, documentName: `${d.documentName} r${r}` })) });
      await post('/v2/organizations/documents/delete', { organizationId: 'o', documentIds: docs.map((d) => d.documentId) });
    }
    await h.app.close();
    await h.services.close();
    fs.rmSync(path.join(dataDir, 'readmodels.db'), { force: true });
    console.log(`${log}: written to ${dataDir}`);
  }
}

async function openRead(kind: string, root: string, tmp: string) {
  if (kind !== 'pg' && kind !== 'pgrebuild') return new (await load(root, 'src/adapters/sqlite-read-store.ts')).SqliteReadStore(path.join(tmp, 'read.db'));
  server ??= await (await import('../../test/support/postgres.js')).startPostgres();
  return new (await load(root, 'src/adapters/postgres-read-store.ts')).PostgresReadStore(await server.freshDatabase('replay'));
}

/** The throwaway PostgreSQL server of the pg modes, whose CPU each replay reports. */
let server: { dataDir: string; freshDatabase(prefix: string): Promise<string> } | null = null;
const serverCpu = async () => (server ? (await import('../stage-budget.js')).postgresCpuUs(server.dataDir) : 0);

const load = (root: string, file: string) => import(pathToFileURL(path.join(root, file)).href);

/** One replay of `log` with the tree at `root`: CPU µs per event. */
async function replay(spec: string, log: string): Promise<{ us: number; wallUs: number; serverUs: number; events: number }> {
  const [kind, root] = spec.includes(':') ? (spec.split(':', 2) as [string, string]) : ['runner', spec];
  const { SqliteEventStore } = await load(root, 'src/adapters/sqlite-event-store.ts');
  const { allProjections } = await load(root, 'projections/index.ts');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'replay-'));
  const events = new SqliteEventStore(path.join(log, 'events.db'));
  const read = await openRead(kind, root, tmp);
  const rebuild = kind === 'rebuild' || kind === 'pgrebuild';
  let t0 = performance.now();
  let s0 = 0;
  const serverCpuUs = async () => (kind === 'pg' || kind === 'pgrebuild' ? serverCpu() : 0);
  const per = async (cpu: NodeJS.CpuUsage, n: number) => ({ us: (cpu.user + cpu.system) / n, wallUs: ((performance.now() - t0) * 1000) / n, serverUs: ((await serverCpuUs()) - s0) / n, events: n });
  try {
    if (rebuild) {
      const { openReadModels } = await load(root, 'src/ops/read-models.ts');
      const { rebuildReadModels } = await load(root, 'src/ops/rebuild.ts');
      const generations = await openReadModels(read, allProjections, 0);
      const c0 = process.cpuUsage();
      s0 = await serverCpuUs();
      t0 = performance.now();
      const r = await rebuildReadModels({ events, generations, projections: allProjections }, { batchSize: BATCH });
      return await per(process.cpuUsage(c0), r.events);
    }
    const { ProjectionRunner } = await load(root, 'src/runtime/projection-runner.ts');
    const runner = new ProjectionRunner(events, read, allProjections, { batchSize: BATCH });
    await runner.init();
    const c0 = process.cpuUsage();
    s0 = await serverCpuUs();
    t0 = performance.now();
    const n = await runner.catchUp();
    return await per(process.cpuUsage(c0), n);
  } finally {
    await events.close();
    await read.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (mode === 'write') {
  await writeLogs(dir);
} else {
  const rounds = Number(rest[0] ?? 3);
  const roots = rest.slice(1);
  const results = new Map<string, number[]>();
  for (let r = 0; r < rounds; r++) {
    for (const log of (process.env.REPLAY_LOGS ?? 'add,update').split(',')) {
      // Alternate the order round by round, so neither tree always runs first.
      for (const root of r % 2 ? [...roots].reverse() : roots) {
        const { us, wallUs, serverUs, events } = await replay(root, path.join(dir, log));
        const k = `${log} ${root}`;
        results.set(k, [...(results.get(k) ?? []), us]);
        console.log(`round ${r + 1} ${k}: ${events} events, ${us.toFixed(1)} µs CPU, ${wallUs.toFixed(1)} µs wall per event${serverUs ? `, PostgreSQL ${serverUs.toFixed(1)} µs CPU` : ''}`);
      }
    }
  }
  for (const [k, v] of results) console.log(`${k}: ${v.map((x) => x.toFixed(0)).join(', ')} µs CPU per event`);
  process.exit(0); // the throwaway PostgreSQL server stops with the process
}
