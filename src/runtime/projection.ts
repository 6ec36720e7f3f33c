/**
 * A projection keeps one read model. It names the event types it handles and applies one
 * event at a time inside a read-store transaction. It must be idempotent in effect: the
 * runner commits the checkpoint with the documents, so an event is applied once per
 * checkpoint, but a rebuild replays the whole log into empty collections and must end in
 * the same documents.
 */
import type { RecordedEvent } from '../ports/event-store.js';
import type { IndexSpec, ReadTx } from '../ports/read-store.js';

export interface Projection {
  name: string;
  /** Indexes the projection's queries rely on; created before it first runs. */
  indexes: IndexSpec[];
  handles: ReadonlySet<string>;
  apply(event: RecordedEvent, tx: ReadTx): Promise<void>;
}

export function defineProjection(p: {
  name: string;
  indexes?: IndexSpec[];
  handlers: Record<string, (event: RecordedEvent, tx: ReadTx) => Promise<void>>;
}): Projection {
  return {
    name: p.name,
    indexes: p.indexes ?? [],
    handles: new Set(Object.keys(p.handlers)),
    apply: async (event, tx) => {
      const h = p.handlers[event.type];
      if (h) await h(event, tx);
    },
  };
}
