/**
 * A writer process for test/postgres.order.test.ts: appends to the PostgreSQL log as fast as it
 * can, from `LANES` concurrent loops each on a stream of its own, until it has written `COUNT`
 * events; then prints the ids it had acknowledged, one JSON line.
 * Usage: node --import tsx test/support/pg-writer.ts <url> <writer> <count>
 */
import { randomUUID } from 'node:crypto';
import { PostgresEventStore } from '../../src/adapters/postgres-event-store.js';

const [url, writer, countArg] = process.argv.slice(2);
const count = Number(countArg);
const LANES = 4;
const store = new PostgresEventStore(url!);
const acked: string[] = [];
let next = 0;
await Promise.all(
  Array.from({ length: LANES }, async (_, lane) => {
    const stream = `w${writer}-lane${lane}`;
    let revision: number | 'no_stream' = 'no_stream';
    while (next < count) {
      // One to three events per append: batches of several sizes interleave.
      const n = Math.min(count - next, 1 + (next % 3));
      next += n;
      const events = Array.from({ length: n }, () => ({
        id: randomUUID(),
        type: 'Written',
        data: { writer, lane },
        metadata: { requestId: randomUUID(), actor: `test:${writer}`, time: Date.now() },
      }));
      const r = await store.append(stream, events, revision);
      revision = r.nextRevision;
      acked.push(...events.map((e) => e.id));
    }
  }),
);
await store.close();
process.stdout.write(JSON.stringify({ writer, acked }) + '\n');
