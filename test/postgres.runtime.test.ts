/**
 * Leases, checkpoints and parked events on a real PostgreSQL server (issue 23), with each
 * runner on stores of its own, as separate processes would be (test/lease.test.ts and
 * test/parked.test.ts run the same cases on the embedded store):
 * - two runners, one lease: the holder stops renewing, the other takes over within the lease
 *   time, every event applied exactly once (a projection that counts its applications);
 * - two runners without a lease racing over 200 events: the checkpoint compare-and-set keeps
 *   each event to one application;
 * - an event a projection cannot apply is parked in PostgreSQL; the rest of its batch and the
 *   log go on;
 * - the `collab` commands on POSTGRES_URL: workspace create, projections status and rebuild,
 *   audit, with nothing written to DATA_DIR.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PostgresEventStore } from '../src/adapters/postgres-event-store.js';
import { PostgresReadStore } from '../src/adapters/postgres-read-store.js';
import { ProjectionRunner } from '../src/runtime/projection-runner.js';
import { defineProjection } from '../src/runtime/projection.js';
import { Lease, LEASES, type LeaseDoc } from '../src/runtime/lease.js';
import { listParked } from '../src/ops/parked.js';
import type { Doc } from '../src/ports/read-store.js';
import { freshDatabase } from './support/postgres.js';
import { tempDir } from './support/app.js';
import { ROOT } from './support/process.js';
import { waiter } from './support/wait.js';

interface Applied extends Doc {
  count: number;
  by: string[];
}

/** Not idempotent on purpose: a second application of an event shows as count 2. */
const counting = (by: string, poison?: (n: number) => boolean) =>
  defineProjection({
    name: 'counting',
    handlers: {
      async Tick(e, tx) {
        const d = await tx.get<Applied>('applied', e.id);
        await tx.upsert('applied', { _id: e.id, count: (d?.count ?? 0) + 1, by: [...(d?.by ?? []), by] });
        if (poison?.(e.data.n as number)) throw new Error(`cannot apply tick ${e.data.n}`);
      },
    },
  });

const until = waiter(10_000, 10);

function node(url: string, name: string, ttlMs: number, withLease = true) {
  const events = new PostgresEventStore(url);
  const read = new PostgresReadStore(url);
  const lease = withLease ? new Lease(read, 'projections', { ttlMs }) : undefined;
  const runner = new ProjectionRunner(events, read, [counting(name)], { lease, pollMs: 20, batchSize: 5 });
  return { events, read, lease, runner, close: () => Promise.all([events.close(), read.close()]) };
}

const tick = (events: PostgresEventStore, n: number, from = 0) =>
  (async () => {
    for (let i = from; i < from + n; i++) {
      await events.append(`ticks-${i % 3}`, [{ id: randomUUID(), type: 'Tick', data: { n: i }, metadata: { requestId: 'r', actor: 'test', time: Date.now() } }], 'any');
    }
  })();

test('two runners, one lease: the holder stops renewing, the other takes over within the lease time; every event applied once', async () => {
  const url = await freshDatabase('lease');
  const ttl = 800;
  const a = node(url, 'A', ttl);
  const b = node(url, 'B', ttl);
  const writer = new PostgresEventStore(url);
  try {
    await a.runner.init();
    a.runner.start();
    await until('A holds the lease', () => a.lease!.held);
    await b.runner.init();
    b.runner.start();
    await tick(writer, 40);
    await until('A applied everything', async () => (await a.read.count('applied', {})) === 40);
    assert.not.ok(b.lease!.held, 'B waits while A renews');
    // A "crashes": it stops renewing and never releases its lease.
    await a.lease!.stop(false);
    await a.runner.stop();
    const stoppedAt = Date.now();
    await tick(writer, 20, 40);
    await until('B took over and applied everything', async () => (await b.read.count('applied', {})) === 60, 10_000);
    assert.ok(b.lease!.held);
    assert.ok(Date.now() - stoppedAt < ttl + 5000, `took over after ${Date.now() - stoppedAt} ms (lease ${ttl} ms)`);
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
    await Promise.all([a.close(), b.close(), writer.close()]);
  }
});

test('two runners without a lease racing over 200 events: each applied once (checkpoint compare-and-set)', async () => {
  const url = await freshDatabase('race');
  const a = node(url, 'A', 0, false);
  const b = node(url, 'B', 0, false);
  try {
    await tick(a.events, 200);
    await Promise.all([a.runner.init(), b.runner.init()]);
    await Promise.all([a.runner.catchUp(), b.runner.catchUp()]);
    const docs = await a.read.find<Applied>('applied', {});
    assert.is(docs.length, 200);
    for (const d of docs) assert.is(d.count, 1, `applied by ${d.by.join(', ')}`);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('an event the projection cannot apply is parked in PostgreSQL; the rest of the log is applied', async () => {
  const url = await freshDatabase('parked');
  const events = new PostgresEventStore(url);
  const read = new PostgresReadStore(url);
  try {
    await tick(events, 10);
    const runner = new ProjectionRunner(events, read, [counting('P', (n) => n === 4)], { clock: () => 777 });
    await runner.init();
    await runner.catchUp();
    assert.is(runner.position, await events.headPosition(), 'the runner passed the head');
    const docs = await read.find<Applied>('applied', {});
    assert.is(docs.length, 9, 'every event but the poison one applied; its write rolled back');
    const parked = await listParked(read);
    assert.is(parked.length, 1);
    assert.is(parked[0]!.follower, 'counting');
    assert.is(parked[0]!.parkedAt, 777);
    assert.match(parked[0]!.error, /cannot apply tick 4/);
  } finally {
    await Promise.all([events.close(), read.close()]);
  }
});

test('the collab commands on POSTGRES_URL: workspace create, projections status and rebuild, audit; nothing in DATA_DIR', async () => {
  const dataDir = tempDir('collab-pg-cli-');
  const env = { ...process.env, POSTGRES_URL: await freshDatabase('cli'), SECRETS_KEY: randomBytes(32).toString('base64'), DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
  const collab = (...args: string[]) => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), ...args], { cwd: ROOT, env, encoding: 'utf8' });
    assert.is(r.status, 0, `collab ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  try {
    const created = JSON.parse(collab('workspace', 'create', '--email', 'ops@example.com'));
    const apiKey = Object.keys(created.apiKeyList)[0]!;
    const status = JSON.parse(collab('projections', 'status', '--json'));
    assert.ok(status.projections.length > 5, JSON.stringify(status).slice(0, 300));
    for (const p of status.projections) assert.is(p.lag, 0, `${p.name} caught up`);
    collab('projections', 'rebuild', '--all');
    const after = JSON.parse(collab('projections', 'status', '--json'));
    assert.ok(after.generation > status.generation, `generation ${status.generation} -> ${after.generation}`);
    assert.match(collab('audit', '--api-key', apiKey), /ApiKey|Workspace/);
    assert.equal(fs.readdirSync(dataDir), [], 'nothing written to DATA_DIR');
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test.run();
