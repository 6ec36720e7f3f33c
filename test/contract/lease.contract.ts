/**
 * Leases and checkpoints of projection runners, written once and run against each store: the
 * embedded one (test/lease.test.ts) and PostgreSQL (test/postgres.runtime.test.ts). Each runner
 * has an event-store connection of its own, as separate processes would, and a projection that
 * counts its applications, so an event applied twice shows:
 * - two runners, one lease: the holder applies, the other waits and follows its checkpoints;
 *   once the holder stops renewing, the other takes over within the lease time, every event
 *   applied exactly once;
 * - a clean stop releases the lease: the other runner takes over at once;
 * - two runners without a lease racing over 200 events: the checkpoint compare-and-set keeps
 *   each event to one application.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { ProjectionRunner } from '../../src/runtime/projection-runner.js';
import { defineProjection } from '../../src/runtime/projection.js';
import { Lease, LEASES, type LeaseDoc } from '../../src/runtime/lease.js';
import type { EventStore } from '../../src/ports/event-store.js';
import type { Doc, ReadStore } from '../../src/ports/read-store.js';
import { waiter } from '../support/wait.js';

export interface Applied extends Doc {
  count: number;
  by: string[];
}

/** Not idempotent on purpose: a second application of an event shows as count 2. `poison` ticks fail. */
export const counting = (by: string, poison?: (n: number) => boolean) =>
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

/** Appends ticks `from`..`from + n - 1` over three streams. */
export async function tick(events: EventStore, n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i++) {
    await events.append(`ticks-${i % 3}`, [{ id: randomUUID(), type: 'Tick', data: { n: i }, metadata: { requestId: 'r', actor: 'test', time: Date.now() } }], 'any');
  }
}

/** One fresh store, as the runners of one case share it. */
export interface LeaseWorld {
  /** An event-store connection of its own. */
  events(): EventStore;
  /** The read store a runner uses (the store decides whether runners share one object). */
  read(): ReadStore;
  /** Closes every store it opened. */
  close(): Promise<void>;
}

export interface LeaseStore {
  name: string;
  open(label: string): Promise<LeaseWorld>;
  /** The lease time of the takeover case, and the time by which the takeover must have come. */
  ttlMs: number;
  takeoverWithinMs: number;
  /** How long to wait for the runner taking over to apply everything. */
  applyWaitMs: number;
}

const until = waiter(10_000, 10);

function node(world: LeaseWorld, name: string, ttlMs: number, withLease = true) {
  const events = world.events();
  const read = world.read();
  const lease = withLease ? new Lease(read, 'projections', { ttlMs }) : undefined;
  const runner = new ProjectionRunner(events, read, [counting(name)], { lease, pollMs: 20, batchSize: 5 });
  return { events, read, lease, runner };
}

export function leaseContract(store: LeaseStore) {
  const s = suite(`leases of projection runners: ${store.name}`);

  s('two runners, one lease: the holder applies; after it stops renewing the other takes over within the lease time; every event applied once', async () => {
    const world = await store.open('lease');
    const ttl = store.ttlMs;
    const a = node(world, 'A', ttl);
    const b = node(world, 'B', ttl);
    const writer = world.events();
    try {
      await a.runner.init();
      a.runner.start();
      await until('A holds the lease', () => a.lease!.held);
      await b.runner.init();
      b.runner.start();
      await tick(writer, 40);
      await until('A applied everything', async () => (await a.read.count('applied', {})) === 40);
      assert.not.ok(b.lease!.held, 'B waits while A renews');
      assert.not.ok(b.runner.applying);
      // B follows A's checkpoints: a waiter on B resolves when A has applied.
      assert.ok(await b.runner.waitFor(await writer.headPosition(), 2000), 'B observes the checkpoints A stores');

      // A "crashes": it stops renewing and never releases its lease.
      await a.lease!.stop(false);
      await a.runner.stop();
      const stoppedAt = Date.now();
      await tick(writer, 20, 40);
      // The takeover is timed when B holds the lease, not once it has also applied 20 events,
      // which on a loaded machine takes longer still and says nothing about the lease.
      await until('B took over', () => b.lease!.held, store.applyWaitMs);
      const takeover = Date.now() - stoppedAt;
      await until('B applied everything', async () => (await b.read.count('applied', {})) === 60, store.applyWaitMs);
      assert.ok(b.lease!.held);
      assert.ok(takeover <= store.takeoverWithinMs, `took over after ${takeover} ms (lease ${ttl} ms)`);
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
      await world.close();
    }
  });

  s('a clean stop releases the lease: the other runner takes over at once', async () => {
    const world = await store.open('release');
    const a = node(world, 'A', 60_000);
    const b = node(world, 'B', 60_000);
    try {
      await a.runner.init();
      a.runner.start();
      await until('A holds', () => a.lease!.held);
      await b.runner.init();
      b.runner.start();
      const t0 = Date.now();
      await a.runner.stop();
      // "At once" is measured against the 60 s lease: a loaded CI machine may take seconds to
      // run the release and the acquire, never the lease's whole time to live. B asks until it
      // gets it: tryAcquire joins an attempt already in flight, and B's own renewal loop may
      // have started one before A released (it answers false; the loop's next try is 20 s on).
      await until('B holds', async () => (await b.lease!.tryAcquire()) && b.lease!.held, 15_000);
      assert.ok(Date.now() - t0 < 15_000, 'long before the 60 s lease would have expired');
    } finally {
      await b.runner.stop();
      await world.close();
    }
  });

  s('even without a lease, two runners racing over 200 events never apply one twice (checkpoint compare-and-set)', async () => {
    const world = await store.open('race');
    const a = node(world, 'A', 0, false);
    const b = node(world, 'B', 0, false);
    try {
      await tick(a.events, 200);
      await Promise.all([a.runner.init(), b.runner.init()]);
      await Promise.all([a.runner.catchUp(), b.runner.catchUp()]);
      const docs = await a.read.find<Applied>('applied', {});
      assert.is(docs.length, 200);
      for (const d of docs) assert.is(d.count, 1, `applied by ${d.by.join(', ')}`);
    } finally {
      await world.close();
    }
  });

  return s;
}
