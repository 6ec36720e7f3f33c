/**
 * Projection specs read `given(events).then(readModel)`: the events are applied through a
 * real (in-memory SQLite) read store, in one transaction each, as the runner does.
 * `replayTwice` applies them all again and checks nothing changed: projections are
 * idempotent in effect.
 */
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { SqliteReadStore } from '../../src/adapters/sqlite-read-store.js';
import { encodePosition } from '../../src/adapters/sqlite-event-store.js';
import type { EventMetadata, RecordedEvent } from '../../src/ports/event-store.js';
import type { Doc } from '../../src/ports/read-store.js';
import type { Projection } from '../../src/runtime/projection.js';

export interface GivenEvent {
  type: string;
  data: Record<string, unknown>;
  stream?: string;
  metadata?: Partial<EventMetadata>;
}

/**
 * The events as the log records them: positions 1, 2, ...; each event's revision counts the
 * earlier events of its own stream (`test-stream` unless it names one), as an event store's do.
 */
export function recorded(events: GivenEvent[]): RecordedEvent[] {
  const revisions = new Map<string, number>();
  return events.map((e, i) => {
    const stream = e.stream ?? 'test-stream';
    const revision = revisions.get(stream) ?? 0;
    revisions.set(stream, revision + 1);
    return { e, i, stream, revision };
  }).map(({ e, i, stream, revision }) => ({
    id: randomUUID(),
    stream,
    revision,
    position: encodePosition(i + 1),
    type: e.type,
    data: e.data,
    metadata: { requestId: 'test', actor: 'test', time: 1_700_000_000_000 + i, ...e.metadata },
  }));
}

export async function project(projection: Projection, events: GivenEvent[], times = 1) {
  const store = new SqliteReadStore(':memory:');
  await store.ensureIndexes(projection.indexes);
  const all = recorded(events);
  for (let t = 0; t < times; t++) {
    for (const e of all) {
      if (projection.handles.has(e.type)) await store.transaction((tx) => projection.apply(e, tx));
    }
  }
  return store;
}

export async function collection(store: SqliteReadStore, name: string): Promise<Doc[]> {
  return store.find(name, {});
}

export function projectionSpec(projection: Projection) {
  return {
    given(events: GivenEvent[]) {
      return {
        /** Asserts the listed collections hold exactly these documents (sorted by _id). */
        async then(expected: Record<string, Doc[]>) {
          const store = await project(projection, events);
          try {
            for (const [name, docs] of Object.entries(expected)) {
              const sorted = [...docs].sort((a, b) => (a._id < b._id ? -1 : a._id > b._id ? 1 : 0));
              assert.equal(await collection(store, name), sorted, `collection ${name}`);
            }
          } finally {
            await store.close();
          }
        },
        /** Applying every event a second time leaves every listed collection as it was. */
        async replayTwice(collections: string[]) {
          const once = await project(projection, events, 1);
          const twice = await project(projection, events, 2);
          try {
            for (const name of collections) {
              assert.equal(await collection(twice, name), await collection(once, name), `collection ${name} after replay`);
            }
          } finally {
            await once.close();
            await twice.close();
          }
        },
      };
    },
  };
}
