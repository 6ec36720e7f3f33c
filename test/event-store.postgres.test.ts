/**
 * The event store contract against a real PostgreSQL server, started for this run
 * (test/support/postgres.ts): each test on a database of its own. Never skipped: without a
 * server the suite fails and says why. Then what only this adapter does: appends submitted
 * together are written by one `collab_append` call, which checks each against the revision
 * the batch's earlier appends to its stream left.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { PostgresEventStore } from '../src/adapters/postgres-event-store.js';
import { WrongExpectedRevisionError, type NewEvent } from '../src/ports/event-store.js';
import { eventStoreContract } from './contract/event-store.contract.js';
import { freshDatabase } from './support/postgres.js';

const s = eventStoreContract('PostgreSQL (a real server)', async () => new PostgresEventStore(await freshDatabase('es')));
s.run();

const meta = { requestId: 'r1', actor: 'test', time: 1_700_000_000_000, apiKey: 'k1' };
const ev = (type: string): NewEvent => ({ id: randomUUID(), type, data: { type }, metadata: meta });

test('appends submitted together to one stream chain their revisions; a refused one between them moves nothing', async () => {
  const store = new PostgresEventStore(await freshDatabase('es'));
  try {
    // Many streams in the batch as well, so the chained ones sit among others.
    const others = Array.from({ length: 150 }, (_, i) => store.append(`other-${i}`, [ev('O')], 'no_stream'));
    const [a, refused, b, c, d] = await Promise.allSettled([
      store.append('chain', [ev('A')], 'no_stream'),
      store.append('chain', [ev('X')], 5),
      store.append('chain', [ev('B')], 0),
      store.append('chain', [ev('C'), ev('D')], 1),
      store.append('chain', [ev('Y')], 'no_stream'),
    ]);
    await Promise.all(others);
    assert.equal([a, b, c].map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled']);
    assert.equal([refused.status, d.status], ['rejected', 'rejected']);
    assert.instance((refused as PromiseRejectedResult).reason, WrongExpectedRevisionError);
    assert.instance((d as PromiseRejectedResult).reason, WrongExpectedRevisionError);
    assert.is((c as PromiseFulfilledResult<{ nextRevision: number }>).value.nextRevision, 3);
    const chain = await store.readStream('chain');
    assert.equal(chain.map((e) => [e.type, e.revision]), [['A', 0], ['B', 1], ['C', 2], ['D', 3]]);
    for (let i = 0; i < 150; i++) assert.equal((await store.readStream(`other-${i}`)).map((e) => e.revision), [0]);
    // Positions follow the submission order within the stream.
    assert.ok(chain.every((e, i) => i === 0 || e.position > chain[i - 1]!.position));
    // One transaction wrote them all (a position starts with its transaction's id): the batch's
    // own checks chained them, not the one-append-at-a-time retry of a batch that failed.
    const transactions = new Set(chain.map((e) => e.position.slice(0, 20)));
    assert.is(transactions.size, 1, `transactions: ${[...transactions].join(', ')}`);
  } finally {
    await store.close();
  }
});

test.run();
