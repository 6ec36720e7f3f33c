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
import { key } from '../ids.js';
import type { Doc, IndexSpec, ReadStore, ReadTx, ReadView } from '../ports/read-store.js';

export const PRESENCE = 'presence';
export type PresenceStatus = 'online' | 'away' | 'offline';

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

export const presenceIndexes: IndexSpec[] = [
  { collection: PRESENCE, fields: ['apiKey', 'organizationId', 'documentId', 'joinedAt'] },
  { collection: PRESENCE, fields: ['apiKey', 'organizationId', 'joinedAt'] },
  { collection: PRESENCE, fields: ['expiresAt'] },
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

/** Live entries of a document, or of every document of an organization; oldest first. */
export async function listPresence(
  read: ReadView,
  scope: Omit<Scope, 'documentId'> & { documentId?: string },
  now: number,
): Promise<PresenceDoc[]> {
  const filter: Record<string, string> = { apiKey: scope.apiKey, organizationId: scope.organizationId };
  if (scope.documentId !== undefined) filter.documentId = scope.documentId;
  const docs = await read.find<PresenceDoc>(PRESENCE, filter, { sort: 'joinedAt' });
  return docs.filter((d) => d.expiresAt > now);
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
