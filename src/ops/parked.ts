/**
 * The operator's side of parked events (src/runtime/parked.ts): `collab projections parked`,
 * `... retry <id>` and `... skip <id>`, and the counts that `projections status` and
 * `/readyz` show.
 *
 * - retry: a projection's event is applied again to that projection, now, in the live
 *   generation (after the cause was fixed, e.g. a new release). It is applied out of order:
 *   later events of the same stream were applied before it, so retry suits events whose
 *   effect does not depend on order (a creation nothing later touched); otherwise rebuild the
 *   read models (`projections rebuild --all`), which replays everything in order. A cascade
 *   item is queued again for the cascade worker.
 * - skip: the record stays, marked skipped: it no longer counts as parked, and the same event
 *   met again (another runner, a retried batch) stays skipped.
 */
import type { EventStore, RecordedEvent } from '../ports/event-store.js';
import type { ReadStore, ReadView } from '../ports/read-store.js';
import type { Projection } from '../runtime/projection.js';
import { PARKED, errorText, type ParkedDoc, type ParkedStatus } from '../runtime/parked.js';
import { CASCADE_WORK } from '../../projections/cascade-work.js';

export class ParkedError extends Error {}

const LIST_LIMIT = 10_000;

/** Parked (and, with `all`, skipped) records in log order. */
export async function listParked(read: ReadView, options: { all?: boolean } = {}): Promise<ParkedDoc[]> {
  const statuses: ParkedStatus[] = options.all ? ['parked', 'skipped'] : ['parked'];
  const rows: ParkedDoc[] = [];
  for (const status of statuses) rows.push(...(await read.find<ParkedDoc>(PARKED, { status }, { sort: 'position', limit: LIST_LIMIT })));
  return rows.sort((a, b) => (a.position < b.position ? -1 : a.position > b.position ? 1 : a._id < b._id ? -1 : 1));
}

export const countParked = (read: ReadView) => read.count(PARKED, { status: 'parked' });

async function getParked(read: ReadView, id: string): Promise<ParkedDoc> {
  const doc = await read.get<ParkedDoc>(PARKED, id);
  if (!doc) throw new ParkedError(`no parked event ${JSON.stringify(id)} (collab projections parked lists them)`);
  return doc;
}

async function eventOf(events: EventStore, doc: ParkedDoc): Promise<RecordedEvent> {
  const e = (await events.readStream(doc.stream)).find((x) => x.id === doc.eventId);
  if (!e) throw new ParkedError(`event ${doc.eventId} is no longer in stream ${doc.stream}`);
  return e;
}

export interface RetryDeps {
  events: EventStore;
  read: ReadStore;
  projections: readonly Projection[];
  clock?: () => number;
  /** Queues a webhook follower's event again (src/webhooks/deliverer.ts). */
  requeueWebhooks?: (event: RecordedEvent) => Promise<void>;
}

/** Applies a parked event again; on success its record goes. Throws ParkedError with the new error otherwise. */
export async function retryParked(deps: RetryDeps, id: string): Promise<ParkedDoc> {
  const doc = await getParked(deps.read, id);
  if (doc.follower === 'cascade') {
    if (!doc.item) throw new ParkedError(`parked cascade record ${id} has no work item`);
    const item = doc.item;
    await deps.read.transaction(async (tx) => {
      await tx.upsert(CASCADE_WORK, item);
      await tx.delete(PARKED, id);
    });
    return doc;
  }
  const event = await eventOf(deps.events, doc);
  try {
    if (doc.follower === 'webhooks') {
      if (!deps.requeueWebhooks) throw new ParkedError('webhook events can be retried only where webhooks are configured');
      await deps.requeueWebhooks(event);
      await deps.read.transaction((tx) => tx.delete(PARKED, id).then(() => undefined));
      return doc;
    }
    const projection = deps.projections.find((p) => p.name === doc.follower);
    if (!projection) throw new ParkedError(`unknown projection ${JSON.stringify(doc.follower)}`);
    await deps.read.transaction(async (tx) => {
      await projection.apply(event, tx);
      await tx.delete(PARKED, id);
    });
    return doc;
  } catch (error) {
    if (error instanceof ParkedError) throw error;
    const text = errorText(error);
    await deps.read.transaction((tx) =>
      tx.patch(PARKED, id, { error: text, attempts: doc.attempts + 1 }).then(() => undefined),
    );
    throw new ParkedError(`${id} failed again: ${text}`);
  }
}

export async function skipParked(read: ReadStore, id: string, now: number): Promise<ParkedDoc> {
  const doc = await getParked(read, id);
  await read.transaction((tx) => tx.patch(PARKED, id, { status: 'skipped', skippedAt: now }).then(() => undefined));
  return { ...doc, status: 'skipped', skippedAt: now };
}

export function formatParked(rows: readonly ParkedDoc[]): string {
  if (rows.length === 0) return 'no parked events';
  const lines: string[] = [];
  for (const r of rows) {
    lines.push(
      `${r._id}${r.status === 'skipped' ? ' (skipped)' : ''}`,
      `  follower ${r.follower}, position ${r.position}, ${r.eventType} on ${r.stream}${r.apiKey ? `, api key ${r.apiKey}` : ''}`,
      `  parked ${new Date(r.parkedAt).toISOString()} after ${r.attempts} attempts: ${r.error}`,
    );
  }
  return lines.join('\n');
}
