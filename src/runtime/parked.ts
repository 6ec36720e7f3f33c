/**
 * Parked events: what keeps one bad event from stopping the log for everyone.
 *
 * Every log follower (the projections, the webhook follower, the deletion cascade) applies
 * events in order and retries a failure, because skipping an event silently would leave a
 * read model wrong. That is right when the store is the problem (down, busy, full): waiting
 * loses nothing, and the follower resumes when it is back. It is wrong when the event is the
 * problem: an event no retry can apply (a document SQLite's JSON functions cannot index, a
 * handler that throws on data it never expected) would hold every tenant's reads behind it
 * forever, and a restart would not help, since the event stays in the log.
 *
 * So a follower tells the two apart (`isStoreFault`): a store fault is retried for as long as
 * it lasts; any other error is retried a few times (`PARK_AFTER_ATTEMPTS`), and if the event
 * still fails, alone, in its own transaction, it is *parked*: recorded here (follower,
 * position, event id, error), logged at error level, and passed over, in the same transaction
 * that moves the follower's checkpoint past it. The operator sees it in
 * `collab projections status`, `/readyz` and `collab projections parked`, and can `retry` it
 * (after a fix) or `skip` it (acknowledged, no longer counted).
 *
 * Example: tenant A's AgentCreated at position 120 makes the agents projection fail with
 * "malformed JSON". Batch 101..200 fails; the runner applies 101..119 one event at a time,
 * retries 120 three times, parks it as `agents:<event id>`, and applies 121..200. Tenant B's
 * write at 150 is read back as soon as the runner gets there; A's agent is missing from
 * agents/get until the operator deals with the parked event.
 *
 * Parked records belong to a read-model generation (`parked_events` is versioned): a rebuild
 * replays the log under the same rule and parks again what projections still cannot apply;
 * the webhook follower's and the cascade's records, which no replay makes again, are carried
 * over to the new generation at the switch (src/ops/rebuild.ts).
 */
import type { LogPosition, RecordedEvent } from '../ports/event-store.js';
import type { Doc, IndexSpec, ReadTx } from '../ports/read-store.js';
import { ApiError } from '../shared/errors.js';

export const PARKED = 'parked_events';

/** Attempts at an event, each in its own transaction, before it is parked. */
export const PARK_AFTER_ATTEMPTS = 3;

export type ParkedStatus = 'parked' | 'skipped';

export interface ParkedDoc extends Doc {
  /** A projection's name, `webhooks` or `cascade`. */
  follower: string;
  position: LogPosition;
  eventId: string;
  eventType: string;
  stream: string;
  apiKey: string | null;
  /** The last error's message (no stack: it is shown to operators as it is). */
  error: string;
  attempts: number;
  parkedAt: number;
  status: ParkedStatus;
  skippedAt?: number;
  /** The cascade's work item, to queue it again on retry. */
  item?: Doc;
}

export const parkedIndexes: IndexSpec[] = [{ collection: PARKED, fields: ['status', 'position'] }];

/** The operator's handle on a parked event: readable, and the same every time it is parked again. */
export const parkedId = (follower: string, eventId: string) => `${follower}:${eventId}`;

const MAX_ERROR = 2000;

export function errorText(error: unknown): string {
  const e = error as { name?: string; code?: string; message?: string };
  const text = `${e?.code ?? e?.name ?? 'Error'}: ${e?.message ?? String(error)}`;
  return text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR)}…` : text;
}

/** What a parked record says of the event: a recorded event, or what the cascade knows of the one that caused its item. */
export type ParkedEventRef = Pick<RecordedEvent, 'id' | 'position' | 'type' | 'stream'> & { metadata: { apiKey?: string } };

export function parkedDoc(follower: string, event: ParkedEventRef, error: unknown, attempts: number, now: number, item?: Doc): ParkedDoc {
  return {
    _id: parkedId(follower, event.id),
    follower,
    position: event.position,
    eventId: event.id,
    eventType: event.type,
    stream: event.stream,
    apiKey: event.metadata.apiKey ?? null,
    error: errorText(error),
    attempts,
    parkedAt: now,
    status: 'parked',
    ...(item ? { item } : {}),
  };
}

/**
 * Parks inside the caller's transaction. A record the operator already skipped stays skipped
 * (a second runner, or a retry of the batch, meeting the same event again).
 */
export async function park(tx: ReadTx, doc: ParkedDoc): Promise<void> {
  const existing = await tx.get<ParkedDoc>(PARKED, doc._id);
  if (existing?.status === 'skipped') return;
  await tx.upsert(PARKED, doc);
}

/** SQLite result codes that say the database, not the statement's data, is the problem. */
const SQLITE_STORE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|NOMEM|READONLY|PROTOCOL|INTERRUPT|CORRUPT|NOTADB|PERM|AUTH|NOLFS)/;
/** Network and system errors: a store out of reach. */
const SYSTEM = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOSPC', 'EIO', 'EMFILE', 'ENFILE']);
/** Driver error names the store adapters do not already translate. */
const STORE_NAMES = new Set([
  'MongoServerSelectionError', 'MongoNetworkError', 'MongoNetworkTimeoutError', 'MongoNotConnectedError',
  'MongoTopologyClosedError', 'MongoPoolClearedError', 'MongoWriteConcernError',
  'UnavailableError', 'DeadlineExceededError', 'NotLeaderError', 'CancelledError', 'TimeoutError',
]);
/** MongoDB's labels for errors that a retry of the same operation can get past. */
const MONGO_LABELS = ['TransientTransactionError', 'RetryableWriteError', 'ResetPool', 'UnknownTransactionCommitResult'];

/**
 * Whether `error` says the store is the problem (wait and retry for as long as it lasts)
 * rather than the event (retry a few times, then park). When in doubt the answer is "the
 * event": a store fault that is not recognised here still cannot park anything, because the
 * follower checks the store with a plain read before it parks.
 */
export function isStoreFault(error: unknown): boolean {
  if (error instanceof ApiError) return error.status === 'UNAVAILABLE';
  const e = error as { name?: string; code?: unknown; message?: string; errorLabels?: unknown; hasErrorLabel?: (l: string) => boolean };
  if (!e || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && (SQLITE_STORE.test(e.code) || SYSTEM.has(e.code))) return true;
  if (e.name && STORE_NAMES.has(e.name)) return true;
  if (typeof e.hasErrorLabel === 'function' && MONGO_LABELS.some((l) => e.hasErrorLabel!(l))) return true;
  // better-sqlite3 on a closed handle (the store is shutting down).
  if (e.name === 'TypeError' && /database connection is not open/.test(e.message ?? '')) return true;
  return false;
}
