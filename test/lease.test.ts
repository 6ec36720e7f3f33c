/**
 * Leases: one projection runner applies at a time; when it stops renewing (crash), another
 * takes over within the lease time; no event is ever applied twice. In process (two runners,
 * each with its own connections to one store, a projection that counts applications), then
 * as real processes: `serve --role worker` twice and `serve --role api`, the holder killed -9.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { SqliteEventStore } from '../src/adapters/sqlite-event-store.js';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { ProjectionRunner } from '../src/runtime/projection-runner.js';
import { defineProjection } from '../src/runtime/projection.js';
import { Lease, LEASES, type LeaseDoc } from '../src/runtime/lease.js';
import type { Doc } from '../src/ports/read-store.js';
import { tempDir } from './support/app.js';
import { ROOT, post, startService, waitHealthy, type Service } from './support/process.js';
import { waiter } from './support/wait.js';

interface Applied extends Doc {
  count: number;
  by: string[];
}

/** Not idempotent on purpose: a second application of an event shows as count 2. */
const counting = (by: string) =>
  defineProjection({
    name: 'counting',
    handlers: {
      async Tick(e, tx) {
        const d = await tx.get<Applied>('applied', e.id);
        await tx.upsert('applied', { _id: e.id, count: (d?.count ?? 0) + 1, by: [...(d?.by ?? []), by] });
      },
    },
  });

/**
 * One runner with its own event-store connection and lease. In one process the runners share
 * one read-store object: two SQLite connections in one thread would block each other while a
 * transaction awaits (separate processes do not; the process test below runs those).
 */
function node(dir: string, read: SqliteReadStore, name: string, ttlMs: number, withLease = true) {
  const events = new SqliteEventStore(path.join(dir, 'events.db'));
  const lease = withLease ? new Lease(read, 'projections', { ttlMs }) : undefined;
  const runner = new ProjectionRunner(events, read, [counting(name)], { lease, pollMs: 20, batchSize: 5 });
  return { name, events, read, lease, runner };
}

const until = waiter(10_000, 10);

test('two runners, one lease: the holder applies; after it stops renewing the other takes over within the lease time; every event applied once', async () => {
  const dir = tempDir('collab-lease-');
  const ttl = 600;
  const read = new SqliteReadStore(path.join(dir, 'readmodels.db'));
  const a = node(dir, read, 'A', ttl);
  const b = node(dir, read, 'B', ttl);
  const writer = new SqliteEventStore(path.join(dir, 'events.db'));
  let appended = 0;
  const tick = async (n: number) => {
    for (let i = 0; i < n; i++) {
      await writer.append(`ticks-${appended % 3}`, [{ id: randomUUID(), type: 'Tick', data: { n: appended }, metadata: { requestId: 'r', actor: 'test', time: Date.now() } }], 'any');
      appended++;
    }
  };
  try {
    await a.runner.init();
    a.runner.start();
    await until('A holds the lease', () => a.lease!.held);
    await b.runner.init();
    b.runner.start();
    await tick(40);
    await until('A applied everything', async () => (await a.read.count('applied', {})) === 40);
    assert.not.ok(b.lease!.held, 'B waits while A renews');
    assert.not.ok(b.runner.applying);
    // B follows A's checkpoints: a waiter on B resolves when A has applied.
    assert.ok(await b.runner.waitFor(await writer.headPosition(), 2000), 'B observes the checkpoints A stores');

    // A "crashes": it stops renewing and never releases its lease.
    await a.lease!.stop(false);
    await a.runner.stop();
    const killedAt = Date.now();
    await tick(20);
    await until('B took over and applied everything', async () => (await b.read.count('applied', {})) === 60, 5000);
    const takeover = Date.now() - killedAt;
    assert.ok(b.lease!.held);
    assert.ok(takeover <= ttl + ttl / 3 + 400, `took over after ${takeover} ms (lease ${ttl} ms)`);
    const stored = await b.read.get<LeaseDoc>(LEASES, 'projections');
    assert.is(stored!.holder, b.lease!.holder);
    assert.is(stored!.epoch, 2);

    const docs = await b.read.find<Applied>('applied', {});
    assert.is(docs.length, 60);
    for (const d of docs) assert.is(d.count, 1, `event ${d._id} applied ${d.count} times by ${d.by.join(', ')}`);
    assert.ok(docs.some((d) => d.by[0] === 'A') && docs.some((d) => d.by[0] === 'B'));
    assert.is(await b.read.getCheckpoint('counting'), await writer.headPosition());
  } finally {
    await b.runner.stop();
    await Promise.all([a.events.close(), b.events.close(), writer.close()]);
    await read.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a clean stop releases the lease: the other runner takes over at once', async () => {
  const dir = tempDir('collab-lease-');
  const read = new SqliteReadStore(path.join(dir, 'readmodels.db'));
  const a = node(dir, read, 'A', 60_000);
  const b = node(dir, read, 'B', 60_000);
  try {
    await a.runner.init();
    a.runner.start();
    await until('A holds', () => a.lease!.held);
    await b.runner.init();
    b.runner.start();
    const t0 = Date.now();
    await a.runner.stop();
    await b.lease!.tryAcquire();
    await until('B holds', () => b.lease!.held, 1000);
    assert.ok(Date.now() - t0 < 1000, 'long before the 60 s lease would have expired');
  } finally {
    await b.runner.stop();
    await Promise.all([a.events.close(), b.events.close()]);
    await read.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('even without a lease, two runners racing never apply an event twice (checkpoint compare-and-set)', async () => {
  const dir = tempDir('collab-lease-');
  const read = new SqliteReadStore(path.join(dir, 'readmodels.db'));
  const a = node(dir, read, 'A', 0, false);
  const b = node(dir, read, 'B', 0, false);
  try {
    for (let i = 0; i < 200; i++) {
      await a.events.append('race', [{ id: randomUUID(), type: 'Tick', data: {}, metadata: { requestId: 'r', actor: 't', time: 0 } }], 'any');
    }
    await Promise.all([a.runner.init(), b.runner.init()]);
    await Promise.all([a.runner.catchUp(), b.runner.catchUp()]);
    const docs = await a.read.find<Applied>('applied', {});
    assert.is(docs.length, 200);
    for (const d of docs) assert.is(d.count, 1, `applied by ${d.by.join(', ')}`);
  } finally {
    await Promise.all([a.events.close(), b.events.close()]);
    await read.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('processes: two workers and an API process on one DATA_DIR; kill -9 the lease holder, the other worker takes over, writes stay read-your-writes', async () => {
  const dir = tempDir('collab-lease-proc-');
  const env = { DATA_DIR: dir, LEASE_TTL_MS: '1500' };
  const started: Service[] = [];
  const start = async (role: string) => {
    const s = await startService(env, 'src/cli.ts', ['serve', '--role', role]);
    started.push(s);
    await waitHealthy(s);
    return s;
  };
  const status = () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), 'projections', 'status', '--json'], { cwd: ROOT, env: { ...process.env, DATA_DIR: dir }, encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as { leases: Array<{ name: string; holder: string; held: boolean }> };
  };
  try {
    const w1 = await start('worker');
    const w2 = await start('worker');
    const api = await start('api');

    const bad = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), 'serve', '--role', 'cook'], { cwd: ROOT, env: { ...process.env, DATA_DIR: dir }, encoding: 'utf8' });
    assert.is(bad.status, 2);
    assert.match(bad.stderr, /--role: must be api, worker or all/);
    const onWorker = await post(w1, '/v2/agents/get', {});
    assert.is(onWorker.status, 404, 'workers serve no API');
    assert.is((await fetch(`${w1.url}/readyz`)).status, 200);

    const ws = await post(api, '/v2/workspace/create', { ownerEmail: 'o@example.com' });
    assert.is(ws.status, 200, JSON.stringify(ws.body));
    const [apiKey, k] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
    const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': k.authToken };
    const addAndRead = async (id: string) => {
      const added = await post(api, '/v2/organizations/documents/add', { organizationId: 'acme', createOrganization: true, documents: [{ documentId: id }] }, headers);
      assert.is(added.status, 200, JSON.stringify(added.body));
      const got = await post(api, '/v2/organizations/documents/get', { organizationId: 'acme', documentIds: [id] }, headers);
      return got.body.result?.data?.length === 1;
    };
    assert.ok(await addAndRead('before'), 'the API process sees what a worker applied (read-your-writes)');

    const holder = status().leases.find((l) => l.name === 'projections' && l.held)!.holder;
    const victim = [w1, w2].find((w) => holder.includes(`:${w.child.pid}:`))!;
    const survivor = victim === w1 ? w2 : w1;
    assert.ok(victim, `holder ${holder} is one of the workers`);
    victim.child.kill('SIGKILL');
    await victim.exited;
    const killedAt = Date.now();
    assert.ok(await addAndRead('after'), 'a write after the kill is applied by the other worker');
    assert.ok(Date.now() - killedAt < 1500 + 2000, `visible ${Date.now() - killedAt} ms after the kill`);
    const now = status().leases.find((l) => l.name === 'projections')!;
    assert.match(now.holder, new RegExp(`:${survivor.child.pid}:`));
    assert.ok(now.held);
    for (let i = 0; i < 5; i++) assert.ok(await addAndRead(`more-${i}`));
  } finally {
    for (const s of started) {
      if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGTERM');
      await s.exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
