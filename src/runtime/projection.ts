/**
 * A projection keeps one read model. It names the event types it handles and applies one
 * event at a time inside a read-store transaction. It must be idempotent in effect: the
 * runner commits the checkpoint with the documents, so an event is applied once per
 * checkpoint, but a rebuild replays the whole log into empty collections and must end in
 * the same documents.
 */
import type { RecordedEvent } from '../ports/event-store.js';
import type { IndexSpec, ReadTx } from '../ports/read-store.js';
import type { DomainEvent } from './decider.js';

export interface Projection {
  name: string;
  /** Indexes the projection's queries rely on; created before it first runs. */
  indexes: IndexSpec[];
  handles: ReadonlySet<string>;
  apply(event: RecordedEvent, tx: ReadTx): Promise<void>;
  /**
   * Projections of different lanes write no collection in common, so a runner may apply them
   * in concurrent transactions on a store that takes concurrent writers (ReadStore.fork),
   * live and in rebuilds. Absent: the main lane. Give a lane only to a projection whose rows
   * no other projection or job writes.
   */
  lane?: string;
}

/**
 * A recorded event narrowed to one member of a domain event union: `RecordedOf<DocumentEvent>`
 * is a union whose `data` follows its `type`. Distributes over the union on purpose.
 */
export type RecordedOf<E extends DomainEvent> = E extends DomainEvent
  ? Omit<RecordedEvent, 'type' | 'data'> & { type: E['type']; data: E['data'] }
  : never;

/** The member of `E` named `T`; an untyped projection (`type: string`) gets `E` itself. */
type Member<E extends DomainEvent, T> = string extends E['type'] ? E : Extract<E, { type: T }>;

/** One handler per event type of `E`, each given that type's event. */
type ProjectionHandlers<E extends DomainEvent> = {
  [T in E['type']]?: (event: RecordedOf<Member<E, T>>, tx: ReadTx) => Promise<void>;
};

/**
 * `E` is the union of the events the projection reads (e.g. `DocumentEvent | OrganizationEvent`):
 * handler names are checked against it and each handler receives its own event's data typed.
 * The one cast is here: an event recorded under a type carries that type's data, as the decider
 * that wrote it declared.
 */
export function defineProjection<E extends DomainEvent = DomainEvent>(p: {
  name: string;
  indexes?: IndexSpec[];
  handlers: ProjectionHandlers<E>;
}): Projection {
  const handlers = p.handlers as Record<string, ((event: RecordedEvent, tx: ReadTx) => Promise<void>) | undefined>;
  return {
    name: p.name,
    indexes: p.indexes ?? [],
    handles: new Set(Object.keys(handlers)),
    apply: async (event, tx) => {
      const h = handlers[event.type];
      if (h) await h(event, tx);
    },
  };
}
