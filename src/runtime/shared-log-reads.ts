/**
 * Two log followers in one thread (the projection runner and the webhook deliverer) read the
 * same events: each was reading and parsing every event of the log again. This event store
 * decorator keeps the last few batches read from the log and answers a `readAll` that starts
 * where one of them started from it, so the second follower costs no read and no JSON parse.
 *
 * Why a cached batch is a valid answer: a `readAll({ after, maxCount })` may return any
 * non-empty prefix of the events after `after` (followers loop until they read nothing), and
 * the log is append-only in position order, so a batch read a moment ago is still a prefix.
 * An empty batch is never kept: "nothing after X" would hide events appended since.
 *
 * Example: the deliverer reads up to 500 after 0000120 and gets 0000121..0000620; the runner
 * asks for 250 after 0000120 (the first 250 of them), then 250 after 0000370 (the next 250, cut
 * from the same batch), then after 0000620, which goes to the store. Readers share the event
 * objects: none of them mutates an event.
 */
import { decorateEventStore, type EventStore, type ReadAllOptions, type RecordedEvent } from '../ports/event-store.js';

/**
 * Events kept (about 1 KB each): a busy runner reads several batches in a row before the
 * deliverer's turn comes, so the deliverer's next read can start thousands of events back.
 */
const KEPT_EVENTS = 10_000;

interface Kept {
  after: string;
  batch: RecordedEvent[];
}

/**
 * The part of a kept batch after `after`: all of it when the batch was read from there, the
 * events behind `after` when `after` is one of its events (followers with different batch
 * sizes stop at different events of the same batch); null otherwise, or when nothing is left.
 */
function restAfter(k: Kept, after: string): RecordedEvent[] | null {
  if (k.after === after) return k.batch;
  const b = k.batch;
  if (after < b[0]!.position || after >= b[b.length - 1]!.position) return null;
  let lo = 0;
  let hi = b.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const p = b[mid]!.position;
    if (p === after) return b.slice(mid + 1);
    if (p < after) lo = mid + 1;
    else hi = mid - 1;
  }
  return null;
}

export function shareLogReads(events: EventStore): EventStore {
  // Oldest first.
  const recent: Kept[] = [];
  let kept = 0;
  return decorateEventStore(events, {
    async readAll(options: ReadAllOptions = {}) {
      const after = options.after ?? '';
      for (const r of recent) {
        const rest = restAfter(r, after);
        if (rest) return options.maxCount !== undefined && options.maxCount < rest.length ? rest.slice(0, options.maxCount) : rest;
      }
      const batch = await events.readAll(options);
      if (batch.length > 0) {
        recent.push({ after, batch });
        kept += batch.length;
        while (kept > KEPT_EVENTS && recent.length > 1) kept -= recent.shift()!.batch.length;
      }
      return batch;
    },
  });
}
