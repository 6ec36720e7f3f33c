/**
 * Who could open a resource when (`/v2/auth/access/history`, issue 25): the intervals during
 * which each user's users/get row for R held, with the change that opened and closed each.
 *
 * How: access to R changes only when a row it is resolved from changes, or a grant expires.
 * So the history rows concerning R are read through their indexes (projections/history.ts):
 * R's versions, those of every folder that was ever above it and of the organization, every
 * grant and group grant ever on those, and the memberships of every group ever granted
 * there. Their validFrom / validTo and the grants' expiries are the only instants access to
 * R can change. At each, users/get is asked of R as of that instant (queries/access.ts
 * usersPage through an AsOfView): the very answer users/get gives with `asOf`, so history
 * and asOf cannot disagree. Consecutive answers, compared user by user, give the intervals.
 *
 * Example: alice granted viewer on R's folder at t1 (GrantAdded), made editor on R at t2,
 * the folder grant revoked at t3, the R grant expiring at t4: intervals [t1, t2) viewer via
 * the folder (opened by GrantAdded at t1, closed by GrantAdded at t2), [t2, t4) editor via
 * R (closedBy `{ type: "expired", time: t4 }`); the revocation at t3 changes nothing she
 * could do, so it closes nothing.
 *
 * Cost, bounded before any answer is computed: at most MAX_HISTORY_ROWS history rows read
 * and MAX_HISTORY_CHANGES instants, each one users/get of R (within its read budget per
 * page); beyond either, INVALID_ARGUMENT. Users let in without a grant (a public resource,
 * `everyone` in users/get) have no per-user interval.
 */
import { ApiError, invalidArgument } from '../src/shared/errors.js';
import type { Doc, Filter, ReadView } from '../src/ports/read-store.js';
import type { AccessRole, ResourceType } from '../commands/grant.js';
import { historyCollection, type ChangeRef, type VersionDoc } from '../projections/history.js';
import { ORGANIZATIONS, organizationKey } from '../projections/organizations.js';
import { FOLDERS, folderKey } from '../projections/folders.js';
import { DOCUMENTS, documentKey } from '../projections/documents.js';
import { GRANTS } from '../projections/grants.js';
import { GROUP_GRANTS } from '../projections/group-grants.js';
import { GROUP_MEMBERS } from '../projections/groups.js';
import { AsOfView } from './as-of.js';
import { storeOrder, usersPage, type Level, type ResourceRef, type UserRow } from './access.js';
import { decodePageToken, encodePageToken } from './paging.js';

/** History rows one request may read about R (see the top of this file). */
export const MAX_HISTORY_ROWS = 10_000;
/** Instants at which access to R changed that one request may examine. */
export const MAX_HISTORY_CHANGES = 1_000;
export const HISTORY_DEFAULT_PAGE_SIZE = 100;

export type HistoryQuery = {
  organizationId: string;
  userId?: string;
  /** Unix ms: intervals that end after it (or are still open). */
  from?: number;
  /** Unix ms: intervals that begin before it. */
  to?: number;
  pageSize?: number;
  pageToken?: string;
} & ResourceRef;

export interface AccessInterval {
  userId: string;
  accessRole: AccessRole;
  /** Unix ms. */
  from: number;
  /** Unix ms; null while open. */
  to: number | null;
  via: { level: Level; id: string; groupId?: string };
  openedBy: ChangeRef;
  closedBy: ChangeRef | null;
}

/** The history rows concerning R, read within MAX_HISTORY_ROWS. */
class RowReader {
  rows: VersionDoc[] = [];
  constructor(private readonly read: ReadView) {}
  async find(collection: string, filter: Filter): Promise<VersionDoc[]> {
    const left = MAX_HISTORY_ROWS - this.rows.length;
    const got = await this.read.find<VersionDoc>(historyCollection(collection), filter, { limit: left + 1 });
    if (got.length > left) {
      throw invalidArgument(`The access history of this resource spans more than ${MAX_HISTORY_ROWS} changes to what it is resolved from; access/history reads at most ${MAX_HISTORY_ROWS} per call.`);
    }
    this.rows.push(...got);
    return got;
  }
}

/** R's versions and those of every folder ever above it (its ancestors as each version had them). */
async function resourceRows(rr: RowReader, apiKey: string, organizationId: string, ref: ResourceRef): Promise<Set<string>> {
  const folders = new Set<string>();
  const versions = ref.documentId !== undefined
    ? await rr.find(DOCUMENTS, { entity: documentKey(apiKey, organizationId, ref.documentId) })
    : await rr.find(FOLDERS, { entity: folderKey(apiKey, organizationId, ref.folderId) });
  const queue: string[] = [];
  const see = (f: unknown) => {
    if (typeof f === 'string' && !folders.has(f)) {
      folders.add(f);
      queue.push(f);
    }
  };
  for (const v of versions) {
    see(v.folderId);
    for (const a of (v.ancestors as string[] | undefined) ?? []) see(a);
  }
  if (ref.folderId !== undefined) folders.add(ref.folderId);
  while (queue.length) {
    const f = queue.shift()!;
    for (const v of await rr.find(FOLDERS, { entity: folderKey(apiKey, organizationId, f) })) for (const a of (v.ancestors as string[]) ?? []) see(a);
  }
  return folders;
}

/** Every row concerning R (see the top of this file), and the instants access to R may have changed. */
async function changeInstants(read: ReadView, apiKey: string, organizationId: string, ref: ResourceRef) {
  const rr = new RowReader(read);
  await rr.find(ORGANIZATIONS, { entity: organizationKey(apiKey, organizationId) });
  const folders = await resourceRows(rr, apiKey, organizationId, ref);
  const slots: Array<[ResourceType, string]> = [['organization', organizationId], ...[...folders].map((f): [ResourceType, string] => ['folder', f])];
  if (ref.documentId !== undefined) slots.push(['document', ref.documentId]);
  const groups = new Set<string>();
  for (const [resourceType, resourceId] of slots) {
    await rr.find(GRANTS, { apiKey, organizationId, resourceType, resourceId });
    for (const g of await rr.find(GROUP_GRANTS, { apiKey, organizationId, resourceType, resourceId })) groups.add(g.groupId as string);
  }
  for (const groupId of groups) await rr.find(GROUP_MEMBERS, { apiKey, organizationId, groupId });
  const instants = new Set<number>();
  for (const v of rr.rows) {
    instants.add(v.validFrom);
    if (v.validTo !== null) instants.add(v.validTo);
    if (typeof v.expiresAt === 'number') instants.add(v.expiresAt * 1000);
  }
  return { rows: rr.rows, instants: [...instants].sort((a, b) => a - b) };
}

type Row = Omit<UserRow, 'userId'>;

/** users/get of R as of `at`, every page: userId -> row; nothing when R or its organization did not exist then. */
async function usersAt(read: ReadView, apiKey: string, at: number, q: HistoryQuery): Promise<Map<string, Row>> {
  const out = new Map<string, Row>();
  const ref: ResourceRef = q.documentId !== undefined ? { documentId: q.documentId } : { folderId: q.folderId! };
  const view = new AsOfView(read, at);
  let pageToken: string | undefined;
  do {
    let page;
    try {
      page = await usersPage(view, apiKey, at, { organizationId: q.organizationId, ...ref, pageSize: 1000, asOf: at, ...(pageToken ? { pageToken } : {}) });
    } catch (error) {
      if (error instanceof ApiError && error.status === 'NOT_FOUND') return out;
      throw error;
    }
    for (const { userId, ...row } of page.data.users) if (q.userId === undefined || q.userId === userId) out.set(userId, row);
    pageToken = page.pageToken;
  } while (pageToken);
  return out;
}

/** One interval goes on while the user's role and the grant it comes from stay the same (a new expiry included). */
const sameRow = (a: Row, b: Row) => a.accessRole === b.accessRole && JSON.stringify(a.via) === JSON.stringify(b.via);

/**
 * Whether history row `v` is one the interval's access came from (`source`): the user's own
 * grant on the resource it names, or, through a group, the user's membership of that group
 * or the group's grant on it.
 */
function fromSource(v: Doc, userId: string, source: Row): boolean {
  const { id, groupId } = source.via;
  if (groupId === undefined) return v.userId === userId && v.groupId === undefined && v.resourceId === id;
  if (v.groupId !== groupId) return false;
  return v.userId === userId || (v.userId === undefined && v.resourceId === id);
}

/**
 * The change at `at` that opened or closed `userId`'s interval (its access was `source`): the
 * expiry of the grant it came from (when closing), else a change of a row it came from, else
 * their own grant or group membership, else any other row concerning R, else an expiry.
 * Example: users/data/delete revokes eve's organization grant and removes her from group g
 * in one request, so both changes carry the same instant; her interval via g's grant on a
 * folder is closed by the membership's removal (UserGroupMemberRemoved), not by the
 * revocation of a grant it did not come from.
 */
function changeAt(rows: readonly VersionDoc[], userId: string, at: number, source: Row, closing: boolean): ChangeRef {
  if (closing && source.expiresAt !== undefined && source.expiresAt * 1000 === at) return { type: 'expired', time: at, actor: 'expiry' };
  const at0 = (v: VersionDoc): ChangeRef | undefined => (v.validFrom === at ? v.openedBy : v.validTo === at ? v.closedBy : undefined);
  for (const pick of [(v: Doc) => fromSource(v, userId, source), (v: Doc) => v.userId === userId, () => true]) {
    for (const v of rows) {
      const c = pick(v) ? at0(v) : undefined;
      if (c) return c;
    }
  }
  // No row changed then: the instant is a grant's expiry (the only other kind there is), as
  // when a user's editor grant on R expires and a viewer grant on its folder takes over.
  return { type: 'expired', time: at, actor: 'expiry' };
}

/** Every interval of R, in (from, userId) order. */
async function allIntervals(read: ReadView, apiKey: string, nowMs: number, q: HistoryQuery): Promise<AccessInterval[]> {
  const { rows, instants } = await changeInstants(read, apiKey, q.organizationId, q);
  const past = instants.filter((t) => t <= nowMs);
  if (past.length > MAX_HISTORY_CHANGES) {
    throw invalidArgument(`Access to this resource changed at ${past.length} instants; access/history examines at most ${MAX_HISTORY_CHANGES} per call.`);
  }
  const open = new Map<string, { iv: AccessInterval; row: Row }>();
  const out: AccessInterval[] = [];
  for (const at of past) {
    const now = await usersAt(read, apiKey, at, q);
    for (const [userId, o] of open) {
      const row = now.get(userId);
      if (row && sameRow(row, o.row)) continue;
      o.iv.to = at;
      o.iv.closedBy = changeAt(rows, userId, at, o.row, true);
      open.delete(userId);
    }
    for (const [userId, row] of now) {
      if (open.has(userId)) continue;
      const iv: AccessInterval = { userId, accessRole: row.accessRole, from: at, to: null, via: viaOf(row), openedBy: changeAt(rows, userId, at, row, false), closedBy: null };
      open.set(userId, { iv, row });
      out.push(iv);
    }
  }
  return out.sort((a, b) => a.from - b.from || storeOrder(a.userId, b.userId));
}

const viaOf = (row: Row): AccessInterval['via'] => ({ level: row.via.level, id: row.via.id, ...(row.via.groupId !== undefined ? { groupId: row.via.groupId } : {}) });

/** A page of R's access intervals overlapping [from, to), in (from, userId) order. */
export async function accessHistory(read: ReadView, apiKey: string, nowMs: number, q: HistoryQuery) {
  const query = { apiKey, what: 'auth/access/history', organizationId: q.organizationId, documentId: q.documentId ?? null, folderId: q.folderId ?? null, userId: q.userId ?? null, from: q.from ?? null, to: q.to ?? null };
  const start = decodePageToken(q.pageToken, query);
  if (start && typeof start.value !== 'number') throw invalidArgument('data.pageToken is not a valid page token for this query.');
  const pageSize = q.pageSize ?? HISTORY_DEFAULT_PAGE_SIZE;
  const all = (await allIntervals(read, apiKey, nowMs, q)).filter((iv) =>
    (q.from === undefined || iv.to === null || iv.to > q.from) && (q.to === undefined || iv.from < q.to) &&
    (!start || iv.from > (start.value as number) || (iv.from === start.value && storeOrder(iv.userId, start.id) > 0)));
  const page = all.slice(0, pageSize);
  const last = page[page.length - 1];
  return { data: page, pageToken: all.length > pageSize && last ? encodePageToken(query, { value: last.from, id: last.userId }) : undefined };
}
