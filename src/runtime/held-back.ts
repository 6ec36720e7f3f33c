/**
 * Events the log has committed but no reader may see yet (EventStore.heldBack: PostgreSQL,
 * where a transaction left open anywhere in the cluster holds every follower back), said the
 * way an operator acts on it: how many, since when, and which session to look at. /readyz,
 * the lag metrics, `collab projections status` and the warning of a write whose read models
 * lag all read it from here (docs/operations.md, Long transactions).
 */
import type { EventStore, HeldBack } from '../ports/event-store.js';

/** Held back longer than this, the read models are behind for a reason worth answering 503 for (a batch's own commit takes far less). */
const HELD_BACK_UNREADY_MS = 5000;

export function describeHeldBack(h: HeldBack, now: number): string {
  const count = `${h.capped ? 'over ' : ''}${h.events} event${h.events === 1 ? '' : 's'}`;
  const since = Math.max(0, Math.round((now - h.oldestTime) / 1000));
  const who = h.blocker
    ? `the transaction of session pid ${h.blocker.pid} (application ${JSON.stringify(h.blocker.application)}, ${h.blocker.state || 'state unknown'}, database ${JSON.stringify(h.blocker.database)}), open ${h.blocker.openSeconds} s, holds them back`
    : 'a transaction this role cannot see holds them back (grant it pg_read_all_stats to have it named)';
  return `${count} appended up to ${since} s ago not yet visible to readers: ${who}; end it (pg_terminate_backend(pid)) or let it finish`;
}

/** The held-back events when they have waited past HELD_BACK_UNREADY_MS, or null. */
export async function heldBackTooLong(events: Pick<EventStore, 'heldBack'>, now: number): Promise<HeldBack | null> {
  const h = (await events.heldBack?.()) ?? null;
  return h && now - h.oldestTime > HELD_BACK_UNREADY_MS ? h : null;
}
