/**
 * Leases, checkpoints and parked events on a real PostgreSQL server (issue 23), with each
 * runner on stores of its own, as separate processes would be (test/lease.test.ts and
 * test/parked.test.ts run the same cases on the embedded store):
 * - the lease cases of test/contract/lease.contract.ts: takeover within the lease time, a
 *   clean stop's release, two runners racing without a lease, every event applied once;
 * - an event a projection cannot apply is parked in PostgreSQL; the rest of its batch and the
 *   log go on;
 * - the `collab` commands on POSTGRES_URL: workspace create, projections status and rebuild,
 *   audit, with nothing written to DATA_DIR.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PostgresEventStore } from '../src/adapters/postgres-event-store.js';
import { PostgresReadStore } from '../src/adapters/postgres-read-store.js';
import { ProjectionRunner } from '../src/runtime/projection-runner.js';
import { defineProjection, type Projection } from '../src/runtime/projection.js';
import type { ReadStore, ReadTx } from '../src/ports/read-store.js';
import { listParked } from '../src/ops/parked.js';
import { freshDatabase } from './support/postgres.js';
import { tempDir } from './support/app.js';
import { ROOT } from './support/process.js';
import { counting, leaseContract, tick, type Applied } from './contract/lease.contract.js';

const contract = leaseContract({
  name: 'PostgreSQL',
  // Each runner on stores of its own, as separate processes would be.
  async open(label) {
    const url = await freshDatabase(label);
    const opened: Array<PostgresEventStore | PostgresReadStore> = [];
    const track = <T extends PostgresEventStore | PostgresReadStore>(store: T) => (opened.push(store), store);
    return {
      events: () => track(new PostgresEventStore(url)),
      read: () => track(new PostgresReadStore(url)),
      close: async () => {
        await Promise.all(opened.map((s) => s.close()));
      },
    };
  },
  ttlMs: 800,
  // Strictly within the lease time and 5 s more, as this suite always asked.
  takeoverWithinMs: 800 + 5000 - 1,
  applyWaitMs: 10_000,
});
contract.run();

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

test("projection lanes: each lane commits on its own handle; a lane that fails on an event leaves the other lane's batch committed", async () => {
  const url = await freshDatabase('lanes');
  const events = new PostgresEventStore(url);
  const read = new PostgresReadStore(url);
  const fork = read.fork();
  // Two projections writing collections of their own; `side` cannot apply tick 4.
  const lane = (name: string, collection: string, poison?: number): Projection => ({
    ...defineProjection({
      name,
      handlers: {
        async Tick(e, tx) {
          await tx.upsert(collection, { _id: e.id, n: e.data.n });
          if (e.data.n === poison) throw new Error(`cannot apply tick ${poison}`);
        },
      },
    }),
    ...(name === 'side' ? { lane: 'side' } : {}),
  });
  let forkTransactions = 0;
  const counted: ReadStore = Object.assign(Object.create(fork) as ReadStore, {
    transaction: <T>(fn: (tx: ReadTx) => Promise<T>) => (forkTransactions++, fork.transaction(fn)),
  });
  try {
    await tick(events, 10);
    const runner = new ProjectionRunner(events, read, [lane('main', 'main_rows'), lane('side', 'side_rows', 4)], { lanes: new Map([['side', counted]]), clock: () => 777 });
    await runner.init();
    await runner.catchUp();
    const head = await events.headPosition();
    assert.is(runner.position, head);
    assert.is(await read.getCheckpoint('main'), head);
    assert.is(await read.getCheckpoint('side'), head);
    assert.is((await read.find('main_rows', {})).length, 10, "the main lane applied every tick, its batch untouched by the side lane's failure");
    assert.is((await read.find('side_rows', {})).length, 9, 'the side lane parked tick 4 and applied the rest');
    assert.ok(forkTransactions >= 2, `the side lane's transactions went through its own handle (${forkTransactions})`);
    const parked = await listParked(read);
    assert.equal(parked.map((p) => [p.follower, p.error.includes('cannot apply tick 4')]), [['side', true]]);
  } finally {
    await Promise.all([events.close(), read.close(), fork.close()]);
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
