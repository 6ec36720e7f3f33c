/**
 * Projection rebuild: build read models live, rebuild from scratch into a new generation while
 * the service keeps answering (and writing), switch, compare every document: identical. Then
 * the service carries on in the new generation, a second rebuild drops the oldest one, and the
 * CLI does the same beside a running server process.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { harness, tempDir, type Harness, type Tenant } from './support/app.js';
import { ROOT, post as postTo, startService, waitHealthy } from './support/process.js';
import { rebuildReadModels, type RebuildProgress } from '../src/ops/rebuild.js';
import { allProjections } from '../projections/index.js';
import { parsePhysical, type GenerationalReadStore } from '../src/runtime/generations.js';
import type { Doc } from '../src/ports/read-store.js';
import { decorateEventStore, LOG_START } from '../src/ports/event-store.js';
import Database from 'better-sqlite3';
import pg from 'pg';

let h: Harness;
let t: Tenant;
const ok = (url: string, data: unknown, headers = t.headers) => h.ok(url, data, headers);

async function dump(view: GenerationalReadStore): Promise<Map<string, Doc[]>> {
  const out = new Map<string, Doc[]>();
  for (const c of await view.listCollections()) {
    if (view.isShared(c)) continue;
    out.set(c, await view.find(c, {}));
  }
  return out;
}

/**
 * Every index definition of a generation's read-model tables, with the table and index names
 * left out: `collection: CREATE INDEX ON (...)`, as the store itself reports them (shared
 * collections, one copy for every generation, left out).
 */
async function indexDefinitions(generation: number): Promise<string[]> {
  let rows: Array<{ table: string; sql: string }>;
  const url = h.services.config.postgresUrl;
  if (url) {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      rows = (await c.query<{ table: string; sql: string }>(`SELECT tablename AS table, indexdef AS sql FROM pg_indexes WHERE schemaname = current_schema()`)).rows;
    } finally {
      await c.end();
    }
  } else {
    const db = new Database(path.join(h.dataDir, 'readmodels.db'), { readonly: true });
    try {
      rows = db.prepare(`SELECT tbl_name AS "table", sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL`).all() as typeof rows;
    } finally {
      db.close();
    }
  }
  return rows
    .filter((r) => r.table.startsWith('rm_') && !h.services.generations.isShared(r.table.slice(3)) && parsePhysical(r.table.slice(3)).generation === generation)
    .map((r) => `${parsePhysical(r.table.slice(3)).collection}: ${r.sql.replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+/, 'CREATE $1INDEX ON')}`)
    .sort();
}

async function workload(tenant: Tenant, n: number) {
  const h2 = (url: string, data: unknown) => ok(url, data, tenant.headers);
  await h2('/v2/organizations/add', { organizations: [{ organizationId: `o${n}`, organizationName: 'Org' }, { organizationId: `x${n}` }] });
  await h2('/v2/organizations/folders/add', { organizationId: `o${n}`, folders: [{ folderId: 'a' }, { folderId: 'b', parentFolderId: 'a' }, { folderId: 'c', accessType: 'restricted' }] });
  await h2('/v2/organizations/documents/add', { organizationId: `o${n}`, documents: [{ documentId: 'd1', folderId: 'b' }, { documentId: 'd2' }, { documentId: 'd3', folderId: 'c' }] });
  await h2('/v2/organizations/folders/update', { organizationId: `o${n}`, folders: [{ folderId: 'c', parentFolderId: 'a', folderName: 'C' }] });
  await h2('/v2/organizations/documents/update', { organizationId: `o${n}`, documents: [{ documentId: 'd2', documentName: 'Two' }] });
  await h2('/v2/users/add', { organizationId: `o${n}`, users: [{ userId: 'u1', name: 'Ann Lee', email: 'ann@example.com' }, { userId: 'u2', name: 'Bo', email: 'bo@example.com', accessRole: 'viewer' }] });
  await h2('/v2/auth/permissions/add', { user: { userId: 'u2' }, permissions: { resources: [{ type: 'folder', id: 'c', organizationId: `o${n}`, accessRole: 'editor' }] } });
  await h2('/v2/organizations/usergroups/add', { organizationId: `o${n}`, organizationUserGroups: [{ groupId: 'g1', groupName: 'Team' }] }).catch(() => undefined);
  await h2('/v2/organizations/documents/delete', { organizationId: `o${n}`, documentIds: ['d2'] });
  await h2('/v2/organizations/folders/delete', { organizationId: `o${n}`, folderId: 'c' }).catch(() => undefined);
  await h2('/v2/organizations/delete', { organizationIds: [`x${n}`] });
  await h2('/v2/agents/create', { agentId: `bot${n}`, name: 'Bot', contextGathering: { strategies: ['web'], strategyOptions: { web: { apiKey: 'sk-1' } } } });
  await h2('/v2/agents/update', { agentId: `bot${n}`, name: 'Bot 2' });
}

test.before(async () => {
  h = await harness();
  t = await h.tenant();
  await workload(t, 1);
  await workload(await h.tenant(), 2);
  await ok('/v2/workspace/webhookconfig/update', { useWebhookService: false, rawNotificationUrl: 'https://hooks.example.com/raw' }).catch(() => undefined);
  // Folder and organization deletions finish in the background (src/jobs/cascade.ts): let them.
  await h.services.cascade.settle();
  before = (await ok('/v2/organizations/documents/get', { organizationId: 'o1' })).data.map((d: { id: string }) => d.id);
});
let before: string[] = [];
const ids = (rows: Array<{ id: string }>) => rows.map((d) => d.id).sort();
test.after(async () => h.close());

test('rebuild from scratch equals the live read models, document for document; the service answers and writes throughout', async () => {
  const gens = h.services.generations;
  assert.is(gens.generation, 0);
  const progress: RebuildProgress[] = [];
  let duringRebuild: { status: number; docs: number } | null = null;
  // Reads that reach the log: one per batch for every projection and lane (PostgreSQL's audit
  // lane beside the main one), not one per lane.
  let logReads = 0;
  const events = decorateEventStore(h.services.events, {
    readAll: (options) => {
      logReads++;
      return h.services.events.readAll(options);
    },
  });
  const r = await rebuildReadModels(
    { events, generations: gens, projections: allProjections },
    {
      batchSize: 7,
      progressEveryMs: 0,
      onProgress: (p) => progress.push(p),
      async beforeSwitch() {
        // The service still answers from generation 0, and a write lands while the rebuild runs.
        const res = await h.post('/v2/organizations/documents/get', { organizationId: 'o1' }, t.headers);
        duringRebuild = { status: res.status, docs: res.body.result.data.length };
        await ok('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: 'late', documentName: 'Late' }] });
        assert.is(gens.generation, 0);
      },
    },
  );
  assert.equal(duringRebuild, { status: 200, docs: before.length });
  // The new generation has every index the live one was made with (lanes included).
  const liveIndexes = await indexDefinitions(0);
  assert.ok(liveIndexes.some((d) => d.startsWith('audit_events: ')), liveIndexes.join('\n'));
  const rebuiltIndexes = await indexDefinitions(1);
  const missing = liveIndexes.filter((d) => !rebuiltIndexes.includes(d));
  const extra = rebuiltIndexes.filter((d) => !liveIndexes.includes(d));
  assert.equal({ missing, extra }, { missing: [], extra: [] }, 'index definitions of generation 1 against 0');
  assert.is(r.from, 0);
  assert.is(r.to, 1);
  assert.ok(progress.length >= 3, 'progress reported per batch');
  const lastP = progress.at(-1)!;
  assert.ok(lastP.eventsPerSecond > 0 && lastP.fraction === 1 && lastP.etaSeconds === 0, JSON.stringify(lastP));
  assert.is(gens.generation, 1, 'switched');
  assert.is(r.position, await h.services.events.headPosition(), 'the switch includes the write made during the rebuild');
  // Every event of the log counted once in the result, whatever the lanes.
  let logged = 0;
  for (let after = LOG_START, page = await h.services.events.readAll({ after }); page.length > 0; page = await h.services.events.readAll({ after })) {
    logged += page.length;
    after = page.at(-1)!.position;
  }
  assert.is(r.events, logged, 'events replayed');
  assert.ok(logReads <= Math.ceil(logged / 7) + 8, `${logReads} reads of the log for ${logged} events in batches of 7`);

  // The rebuild queues historical cascade work again (a grant on the deleted folder c); the
  // worker recognises it as done and drains it, appending nothing.
  const head = await h.services.events.headPosition();
  await h.services.cascade.settle();
  assert.is(await h.services.events.headPosition(), head, 'historical cascade work appends nothing');
  // Compare generation 0 (built live, request by request) with generation 1 (replayed).
  const live = await dump(gens.at(0));
  const rebuilt = await dump(gens.at(1));
  assert.equal([...rebuilt.keys()].sort(), [...live.keys()].sort());
  assert.ok(live.size >= 10, `read models compared: ${[...live.keys()].join(', ')}`);
  let docs = 0;
  for (const [c, liveDocs] of live) {
    assert.equal(rebuilt.get(c), liveDocs, `collection ${c}`);
    docs += liveDocs.length;
  }
  assert.ok(docs > 50, `${docs} documents compared`);
  for (const p of allProjections) {
    assert.is(await gens.at(1).getCheckpoint(p.name), r.position, p.name);
  }
});

test('after the switch the service reads and writes the new generation (read-your-writes included)', async () => {
  const gens = h.services.generations;
  const got = await ok('/v2/organizations/documents/get', { organizationId: 'o1' });
  assert.equal(ids(got.data), [...before, 'late'].sort());
  await ok('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: 'after' }] });
  const again = await ok('/v2/organizations/documents/get', { organizationId: 'o1' });
  assert.equal(ids(again.data), [...before, 'late', 'after'].sort());
  assert.is(await gens.at(1).count('documents', { documentId: 'after' }), 1);
  assert.is(await gens.at(0).count('documents', { documentId: 'after' }), 0, 'the old generation no longer changes');
  assert.ok(await h.services.projections.isCaughtUp());
});

test('a second rebuild drops the generation the first one replaced', async () => {
  const gens = h.services.generations;
  // On a store that takes concurrent writers (PostgreSQL), the audit lane gets a handle of its own.
  const base = gens.base;
  const fork = base.fork?.bind(base);
  let forks = 0;
  if (fork) base.fork = () => (forks++, fork());
  const r = await rebuildReadModels({ events: h.services.events, generations: gens, projections: allProjections }).finally(() => {
    if (fork) base.fork = fork;
  });
  assert.is(forks, fork ? 1 : 0, 'one lane beside the main one');
  assert.is(r.to, 2);
  assert.ok(r.dropped.length > 0 && r.dropped.every((c) => parsePhysical(c).generation === 0), r.dropped.join(', '));
  const names = await gens.base.listCollections();
  assert.not.ok(names.some((c) => !gens.isShared(c) && parsePhysical(c).generation === 0), names.join(', '));
  assert.ok(names.some((c) => c.startsWith('g1_')), 'the generation just replaced is kept');
  await h.services.cascade.settle(); // historical cascade work queued again (see above)
  const live = await dump(gens.at(1));
  const rebuilt = await dump(gens.at(2));
  for (const [c, d] of live) assert.equal(rebuilt.get(c), d, c);
  assert.is((await ok('/v2/organizations/documents/get', { organizationId: 'o1' })).data.length, before.length + 2);
});

test('CLI: projections rebuild beside a running server, then projections status', async () => {
  const dir = tempDir('collab-rebuild-cli-');
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), ...args], { cwd: ROOT, env: { ...process.env, DATA_DIR: dir }, encoding: 'utf8' });
  const s = await startService({ DATA_DIR: dir });
  try {
    await waitHealthy(s);
    const ws = await postTo(s, '/v2/workspace/create', { ownerEmail: 'o@example.com' });
    const [apiKey, k] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
    const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': k.authToken };
    assert.is((await postTo(s, '/v2/organizations/add', { organizations: [{ organizationId: 'acme' }] }, headers)).status, 200);
    assert.is((await postTo(s, '/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'd1' }] }, headers)).status, 200);

    const bad = cli('projections', 'rebuild', 'nope');
    assert.is(bad.status, 2);
    assert.match(bad.stderr, /unknown projection/);
    const rebuilt = cli('projections', 'rebuild', '--all');
    assert.is(rebuilt.status, 0, rebuilt.stderr);
    assert.match(rebuilt.stderr, /rebuild generation 1: \d+ events, \d+ events\/s, position \d+ of \d+ 100\.0%, ETA 0 s/);
    assert.match(rebuilt.stdout, /switched read models from generation 0 to 1 at position \d+/);

    const st = cli('projections', 'status', '--json');
    assert.is(st.status, 0, st.stderr);
    const status = JSON.parse(st.stdout);
    assert.is(status.generation, 1);
    assert.is(status.previous, 0);
    for (const p of status.projections) assert.is(p.lag, 0, p.name);
    assert.ok(status.leases.some((l: { name: string; held: boolean }) => l.name === 'projections' && l.held), 'the server holds the projections lease');
    const text = cli('projections', 'status');
    assert.match(text.stdout, /read models: generation 1/);
    assert.match(text.stdout, /documents\s+\d+\s+0/);

    // The server keeps serving, now from generation 1. The pause gives it the chance to notice
    // the switch on its own (it re-reads the live generation each second); the checks below
    // hold either way, as its next transaction reads the live generation too, so a slow
    // machine cannot fail them by noticing late.
    await new Promise((r) => setTimeout(r, 1200));
    assert.is((await postTo(s, '/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'd2' }] }, headers)).status, 200);
    const docs = await postTo(s, '/v2/organizations/documents/get', { organizationId: 'acme' }, headers);
    assert.equal(docs.body.result.data.map((d: { id: string }) => d.id), ['d1', 'd2']);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
