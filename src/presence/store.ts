/**
 * Presence (semantics §5): who is on a document right now. Ephemeral state, not part of the
 * audited history: it lives in the read store's `presence` collection, written in read-store
 * transactions, never in the event log (a rebuild of the read models drops it, which is
 * right: a rebuilt service has nobody present).
 *
 * An entry expires `PRESENCE_TTL_SECONDS` after its last add/update. Reads filter expired
 * entries out; writes sweep them (the touched document's, and a bounded batch of the oldest
 * across all tenants), so the collection does not grow with people who left.
 */
import { key } from '../shared/ids.js';
import type { Doc, IndexSpec, ReadStore, ReadTx, ReadView } from '../ports/read-store.js';
import { decodePageToken, encodePageToken, type Cursor } from '../../queries/paging.js';

export const PRESENCE = 'presence';
type PresenceStatus = 'online' | 'away' | 'offline';

export interface PresenceDoc extends Doc {
  apiKey: string;
  organizationId: string;
  documentId: string;
  userId: string;
  name?: string;
  email?: string;
  status: PresenceStatus;
  joinedAt: number;
  updatedAt: number;
  /** Milliseconds. */
  expiresAt: number;
}

export interface PresenceInput {
  userId: string;
  name?: string;
  email?: string;
  status?: PresenceStatus;
}

const presenceIndexes: IndexSpec[] = [
  { collection: PRESENCE, fields: ['apiKey', 'organizationId', 'documentId', 'joinedAt'] },
  { collection: PRESENCE, fields: ['apiKey', 'organizationId', 'joinedAt'] },
  { collection: PRESENCE, fields: ['expiresAt'] },
  // One user's entries on every document (users/data/get and delete).
  { collection: PRESENCE, fields: ['apiKey', 'userId'] },
];

const SWEEP_BATCH = 200;
const ready = new WeakMap<ReadStore, Promise<void>>();

/** Creates the indexes once per store. */
function ensureReady(store: ReadStore): Promise<void> {
  let p = ready.get(store);
  if (!p) {
    p = store.ensureIndexes(presenceIndexes);
    p.catch(() => ready.delete(store));
    ready.set(store, p);
  }
  return p;
}

export interface Scope {
  apiKey: string;
  organizationId: string;
  documentId: string;
}

const idOf = (s: Scope, userId: string) => key(s.apiKey, s.organizationId, s.documentId, userId);

async function sweep(tx: ReadTx, scope: Scope, now: number) {
  const ops: string[] = [];
  for (const d of await tx.find<PresenceDoc>(PRESENCE, { apiKey: scope.apiKey, organizationId: scope.organizationId, documentId: scope.documentId })) {
    if (d.expiresAt <= now) ops.push(d._id);
  }
  for (const d of await tx.find<PresenceDoc>(PRESENCE, {}, { sort: 'expiresAt', limit: SWEEP_BATCH })) {
    if (d.expiresAt > now) break;
    ops.push(d._id);
  }
  await tx.bulk([...new Set(ops)].map((id) => ({ op: 'delete' as const, collection: PRESENCE, id })));
}

/**
 * Adds (or refreshes) users; with `onlyPresent`, only users with a live entry are touched
 * (update). Returns, per user id, whether it was applied.
 */
export async function writePresence(
  store: ReadStore,
  scope: Scope,
  users: PresenceInput[],
  options: { now: number; ttlMs: number; onlyPresent: boolean },
): Promise<Map<string, boolean>> {
  await ensureReady(store);
  const { now, ttlMs, onlyPresent } = options;
  return store.transaction(async (tx) => {
    await sweep(tx, scope, now);
    const applied = new Map<string, boolean>();
    for (const u of users) {
      const id = idOf(scope, u.userId);
      const prev = await tx.get<PresenceDoc>(PRESENCE, id);
      const live = prev && prev.expiresAt > now ? prev : null;
      if (onlyPresent && !live) {
        applied.set(u.userId, false);
        continue;
      }
      const doc: PresenceDoc = {
        _id: id,
        ...scope,
        userId: u.userId,
        ...(u.name ?? live?.name ? { name: u.name ?? live?.name } : {}),
        ...(u.email ?? live?.email ? { email: u.email ?? live?.email } : {}),
        status: u.status ?? live?.status ?? 'online',
        joinedAt: live?.joinedAt ?? now,
        updatedAt: now,
        expiresAt: now + ttlMs,
      };
      await tx.upsert(PRESENCE, doc);
      applied.set(u.userId, true);
    }
    return applied;
  });
}

export async function removePresence(store: ReadStore, scope: Scope, userIds: string[], now: number): Promise<void> {
  await ensureReady(store);
  await store.transaction(async (tx) => {
    await sweep(tx, scope, now);
    await tx.bulk(userIds.map((u) => ({ op: 'delete' as const, collection: PRESENCE, id: idOf(scope, u) })));
  });
}

/** At most this many of one user's entries are read or removed at once (users/data/get and delete). */
const MAX_USER_PRESENCE = 1000;

/** One user's live entries in one organization, at most MAX_USER_PRESENCE. */
export async function userPresence(store: ReadStore, apiKey: string, organizationId: string, userId: string, now: number): Promise<PresenceDoc[]> {
  await ensureReady(store);
  const found = await store.find<PresenceDoc>(PRESENCE, { apiKey, userId }, { limit: MAX_USER_PRESENCE });
  return found.filter((d) => d.organizationId === organizationId && d.expiresAt > now);
}

/**
 * Removes every entry of one user (their name and e-mail with them: users/data/delete), in
 * a `sensitive` transaction so the deleted bytes are overwritten (src/ports/read-store.ts).
 */
export async function eraseUserPresence(store: ReadStore, apiKey: string, userId: string): Promise<void> {
  await ensureReady(store);
  for (;;) {
    const n = await store.transaction(async (tx) => {
      const found = await tx.find<PresenceDoc>(PRESENCE, { apiKey, userId }, { limit: MAX_USER_PRESENCE });
      await tx.bulk(found.map((d) => ({ op: 'delete' as const, collection: PRESENCE, id: d._id })));
      return found.length;
    }, { sensitive: true });
    if (n < MAX_USER_PRESENCE) return;
  }
}

/**
 * At most this many stored entries are looked at for one page. Expired entries stay stored
 * until a write sweeps them, and a `userIds` filter skips the others, so the rows that match
 * may be few among many: past this many, the page is answered with what it has and a
 * `pageToken` that goes on from the last row looked at. The cost of one call is bounded
 * whatever the organization holds.
 */
export const PRESENCE_SCAN_BUDGET = 10_000;

export interface PresencePageQuery {
  documentId?: string;
  userIds?: string[];
  pageSize: number;
  pageToken?: string;
}

const cursorOf = (d: PresenceDoc): Cursor => ({ value: d.joinedAt, id: d._id });
const afterCursor = (d: PresenceDoc, c: Cursor) =>
  d.joinedAt > (c.value as number) || (d.joinedAt === c.value && d._id > c.id);
const byJoined = (a: PresenceDoc, b: PresenceDoc) => a.joinedAt - b.joinedAt || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);

/**
 * One page of live entries of a document, or of every document of an organization, oldest
 * first (joinedAt, then id: a keyset that a heartbeat does not move, so paging while people
 * come and go neither repeats nor skips anyone who stays). `pageToken` comes back only when
 * more may follow; it is bound to this query (queries/paging.ts).
 *
 * With a documentId and userIds, the entries are read by key (at most 1000) rather than
 * scanned.
 */
export async function presencePage(
  read: ReadView,
  scope: Omit<Scope, 'documentId'>,
  q: PresencePageQuery,
  now: number,
): Promise<{ rows: PresenceDoc[]; pageToken?: string }> {
  const wanted = q.userIds ? [...new Set(q.userIds)].sort() : undefined;
  const query = { apiKey: scope.apiKey, what: 'presence', organizationId: scope.organizationId, documentId: q.documentId ?? null, userIds: wanted ?? null };
  const after = decodePageToken(q.pageToken, query);
  const live = (d: PresenceDoc) => d.expiresAt > now;

  if (q.documentId !== undefined && wanted) {
    const docScope = { ...scope, documentId: q.documentId };
    const docs = (await read.getMany<PresenceDoc>(PRESENCE, wanted.map((u) => idOf(docScope, u))))
      .filter((d) => live(d) && (!after || afterCursor(d, after)))
      .sort(byJoined);
    const rows = docs.slice(0, q.pageSize);
    const last = rows[rows.length - 1];
    return { rows, pageToken: docs.length > q.pageSize && last ? encodePageToken(query, cursorOf(last)) : undefined };
  }

  const filter: Record<string, string> = { apiKey: scope.apiKey, organizationId: scope.organizationId };
  if (q.documentId !== undefined) filter.documentId = q.documentId;
  const users = wanted ? new Set(wanted) : undefined;
  const rows: PresenceDoc[] = [];
  let cursor = after;
  let scanned = 0;
  for (;;) {
    const limit = Math.min(q.pageSize + 1, PRESENCE_SCAN_BUDGET - scanned);
    const chunk = await read.find<PresenceDoc>(PRESENCE, filter, { sort: 'joinedAt', after: cursor, limit });
    for (const d of chunk) {
      if (!live(d) || (users && !users.has(d.userId))) continue;
      if (rows.length === q.pageSize) {
        // One more match exists: the page is full and a token follows.
        return { rows, pageToken: encodePageToken(query, cursorOf(rows[rows.length - 1]!)) };
      }
      rows.push(d);
    }
    scanned += chunk.length;
    const last = chunk[chunk.length - 1];
    if (chunk.length < limit || !last) return { rows };
    cursor = cursorOf(last);
    // Out of budget: go on from the last row looked at (the page may be short, even empty).
    if (scanned >= PRESENCE_SCAN_BUDGET) return { rows, pageToken: encodePageToken(query, cursor) };
  }
}

export const presenceView = (d: PresenceDoc) => ({
  userId: d.userId,
  documentId: d.documentId,
  ...(d.name !== undefined ? { name: d.name } : {}),
  ...(d.email !== undefined ? { email: d.email } : {}),
  status: d.status,
  lastSeenAt: d.updatedAt,
  /** Unix seconds (semantics §1). */
  expiresAt: Math.floor(d.expiresAt / 1000),
});
