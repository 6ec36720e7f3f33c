/**
 * Who could open a resource when (`/v2/auth/access/history`, issue 25): the intervals during
 * which each user's users/get row for R held, with the change that opened and closed each.
 *
 * How: access to R changes only when a row it is resolved from changes, or a grant expires.
 * So the history rows concerning R are read through their indexes (projections/history.ts):
 * R's versions, those of every folder that was ever above it and of the organization, every
 * grant and group grant ever on those, and the memberships of every group ever granted
 * there. Their validFrom / validTo and the grants' expiries are the only instants access to
 * R can change, and each row says whom its instants concern: a grant its user, a membership
 * its member, a group grant every member that group ever had, a version of R, a folder or the
 * organization everyone. A user's row at an instant is their users/get row for R as of it
 * (queries/access.ts userRowsOf through an AsOfView: the rows usersPage lists, so history
 * and asOf cannot disagree), asked only of the users the instant concerns.
 *
 * Order and paging (issue 33): intervals in (from, userId) order, made in that very order by
 * walking the instants and, at each, the users it concerns in userId order. A user's interval
 * opens at T when they have a row at T that differs from their row just before T (T - 1 ms:
 * nothing changes between two instants); it closes at the first of *their* later instants
 * where the row differs. So a page costs the users it examines times the instants that
 * concern them, never a users/get per instant, and its token is the (instant, user) it
 * reached: the next page goes on from there.
 *
 * Example: alice granted viewer on R's folder at t1 (GrantAdded), made editor on R at t2,
 * the folder grant revoked at t3, the R grant expiring at t4: intervals [t1, t2) viewer via
 * the folder (opened by GrantAdded at t1, closed by GrantAdded at t2), [t2, t4) editor via
 * R (closedBy `{ type: "expired", time: t4 }`); the revocation at t3 changes nothing she
 * could do, so it closes nothing.
 *
 * Cost, bounded per page: at most MAX_HISTORY_ROWS history rows read (a few indexed finds)
 * and MAX_HISTORY_CHANGES instants, beyond either INVALID_ARGUMENT; then HISTORY_READ_BUDGET
 * reads of resolution and the query deadline, past which the page ends early with a token
 * (the deadline passing before the page examined anyone fails RESOURCE_EXHAUSTED naming it).
 * The request's signal (the client left, the request timeout) is checked before every store
 * read. Users let in without a grant (a public resource, `everyone` in users/get) have no
 * per-user interval.
 */
import { invalidArgument } from '../src/shared/errors.js';
import type { Doc, Filter, FindOptions, ReadView } from '../src/ports/read-store.js';
import type { AccessRole, ResourceType } from '../commands/grant.js';
import { historyCollection, openVersionOf, type ChangeRef, type VersionDoc } from '../projections/history.js';
import { ORGANIZATIONS, organizationKey } from '../projections/organizations.js';
import { FOLDERS, folderKey } from '../projections/folders.js';
import { DOCUMENTS, documentKey } from '../projections/documents.js';
import { GRANTS } from '../projections/grants.js';
import { GROUP_GRANTS } from '../projections/group-grants.js';
import { GROUP_MEMBERS } from '../projections/groups.js';
import { AsOfView } from './as-of.js';
import { ACCESS_READ_BUDGET, ReadMeter, storeOrder, userRowsOf, type Level, type ResourceRef, type UserRow } from './access.js';
import { letOthersRun, NO_DEADLINE, Pacer, type Deadline } from './cost.js';
import { decodePageToken, encodePageToken } from './paging.js';

/** History rows one request may read about R (see the top of this file). */
export const MAX_HISTORY_ROWS = 10_000;
/** Instants at which access to R changed that one request may examine. */
export const MAX_HISTORY_CHANGES = 1_000;
export const HISTORY_DEFAULT_PAGE_SIZE = 100;
/** Store reads of resolution one page may spend (the history rows aside): as a users/get page. */
export const HISTORY_READ_BUDGET = ACCESS_READ_BUDGET;

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
  /** Each row's live collection: what says whom its instants concern. */
  readonly collectionOf = new Map<VersionDoc, string>();
  constructor(private readonly read: ReadView) {}
  async find(collection: string, filter: Filter): Promise<VersionDoc[]> {
    const left = MAX_HISTORY_ROWS - this.rows.length;
    const got = await this.read.find<VersionDoc>(historyCollection(collection), filter, { limit: left + 1 });
    this.add(collection, got, left);
    return got;
  }

  private add(collection: string, got: VersionDoc[], left = MAX_HISTORY_ROWS - this.rows.length) {
    if (got.length > left) {
      throw invalidArgument(`The access history of this resource spans more than ${MAX_HISTORY_ROWS} changes to what it is resolved from; access/history reads at most ${MAX_HISTORY_ROWS} per call.`);
    }
    this.rows.push(...got);
    for (const v of got) this.collectionOf.set(v, collection);
  }

  /**
   * A document's versions: the closed ones in h_documents, and the open one, which is the
   * live row (projections/history.ts, withOpenVersions), unless the row is from before that
   * and h_documents still holds it open.
   */
  async documentVersions(apiKey: string, organizationId: string, documentId: string): Promise<VersionDoc[]> {
    const entity = documentKey(apiKey, organizationId, documentId);
    const closed = await this.find(DOCUMENTS, { entity });
    const live = await this.read.get(DOCUMENTS, entity);
    const open = live ? openVersionOf(live) : null;
    if (!open) return closed;
    this.add(DOCUMENTS, [open]);
    return [...closed, open];
  }
}

/** R's versions and those of every folder ever above it (its ancestors as each version had them). */
async function resourceRows(rr: RowReader, apiKey: string, organizationId: string, ref: ResourceRef): Promise<Set<string>> {
  const folders = new Set<string>();
  const versions = ref.documentId !== undefined
    ? await rr.documentVersions(apiKey, organizationId, ref.documentId)
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

/** An interval of validity, [from, to) in Unix ms (to null while open). */
type Span = { from: number; to: number | null };
const holdsAt = (spans: readonly Span[] | undefined, t: number) => spans?.some((s) => s.from <= t && (s.to === null || t < s.to)) ?? false;
const push = <K, V>(m: Map<K, V[]>, k: K, v: V) => {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
};

/**
 * Every row concerning R (see the top of this file), the instants access to R may have
 * changed at (up to `nowMs`), and whom each concerns.
 */
async function historyPlan(read: ReadView, apiKey: string, nowMs: number, q: HistoryQuery, horizon: number | undefined) {
  const { organizationId } = q;
  const rr = new RowReader(read);
  await rr.find(ORGANIZATIONS, { entity: organizationKey(apiKey, organizationId) });
  const folders = await resourceRows(rr, apiKey, organizationId, q);
  const slots: Array<[ResourceType, string]> = [['organization', organizationId], ...[...folders].map((f): [ResourceType, string] => ['folder', f])];
  if (q.documentId !== undefined) slots.push(['document', q.documentId]);
  const groups = new Set<string>();
  for (const [resourceType, resourceId] of slots) {
    await rr.find(GRANTS, { apiKey, organizationId, resourceType, resourceId });
    for (const g of await rr.find(GROUP_GRANTS, { apiKey, organizationId, resourceType, resourceId })) groups.add(g.groupId as string);
  }
  for (const groupId of groups) await rr.find(GROUP_MEMBERS, { apiKey, organizationId, groupId });

  const wanted = (u: unknown): u is string => typeof u === 'string' && (q.userId === undefined || u === q.userId);
  const instantsOf = (v: VersionDoc) => [v.validFrom, ...(v.validTo !== null ? [v.validTo] : []), ...(typeof v.expiresAt === 'number' ? [v.expiresAt * 1000] : [])];
  const instants = new Set<number>();
  /** Instants that concern everyone: versions of the organization, of R and of the folders above it. */
  const shared = new Set<number>();
  /** Each user's own instants (their grants, their memberships of granted groups). */
  const own = new Map<string, number[]>();
  const groupInstants = new Map<string, number[]>();
  const members = new Map<string, Set<string>>();
  const groupsOf = new Map<string, Set<string>>();
  /** When each user held a grant or a membership of a granted group: nobody else can have a row. */
  const footholds = new Map<string, Span[]>();
  for (const v of rr.rows) {
    const collection = rr.collectionOf.get(v)!;
    const ts = instantsOf(v);
    for (const t of ts) instants.add(t);
    if (collection === GRANTS || collection === GROUP_MEMBERS) {
      if (!wanted(v.userId)) continue;
      for (const t of ts) push(own, v.userId, t);
      push(footholds, v.userId, { from: v.validFrom, to: v.validTo });
      if (collection === GROUP_MEMBERS) {
        const g = v.groupId as string;
        if (!members.has(g)) members.set(g, new Set());
        members.get(g)!.add(v.userId);
        if (!groupsOf.has(v.userId)) groupsOf.set(v.userId, new Set());
        groupsOf.get(v.userId)!.add(g);
      }
    } else if (collection === GROUP_GRANTS) {
      for (const t of ts) push(groupInstants, v.groupId as string, t);
    } else {
      for (const t of ts) shared.add(t);
    }
  }
  // With a retention horizon, what came before it may be deleted: the walk starts at the
  // horizon itself, where every user with access is examined (see accessHistory).
  if (horizon !== undefined) {
    instants.add(horizon);
    shared.add(horizon);
  }
  const past = [...instants].filter((t) => t <= nowMs && (horizon === undefined || t >= horizon)).sort((a, b) => a - b);
  if (past.length > MAX_HISTORY_CHANGES) {
    throw invalidArgument(`Access to this resource changed at ${past.length} instants; access/history examines at most ${MAX_HISTORY_CHANGES} per call.`);
  }
  const users = [...footholds.keys()].sort(storeOrder);
  /** The users an instant concerns. */
  const byInstant = new Map<number, Set<string>>();
  const concern = (t: number, u: string) => {
    if (!byInstant.has(t)) byInstant.set(t, new Set());
    byInstant.get(t)!.add(u);
  };
  for (const [u, ts] of own) for (const t of ts) concern(t, u);
  for (const [g, ts] of groupInstants) for (const u of members.get(g) ?? []) for (const t of ts) concern(t, u);
  const relevant = new Map<string, number[]>();
  return {
    rows: rr.rows,
    instants: past,
    /** The users whose row may begin at `t`, in store order: those the instant concerns that hold a foothold then. */
    opening(t: number): string[] {
      const concerned = shared.has(t) ? users : [...(byInstant.get(t) ?? [])].sort(storeOrder);
      return concerned.filter((u) => holdsAt(footholds.get(u), t));
    },
    /** `u`'s instants after `t` (up to now), in order: the only ones their row can change at. */
    after(u: string, t: number): number[] {
      let mine = relevant.get(u);
      if (!mine) {
        const set = new Set<number>([...shared, ...(own.get(u) ?? [])]);
        for (const g of groupsOf.get(u) ?? []) for (const x of groupInstants.get(g) ?? []) set.add(x);
        mine = [...set].filter((x) => x <= nowMs && (horizon === undefined || x >= horizon)).sort((a, b) => a - b);
        relevant.set(u, mine);
      }
      return mine.filter((x) => x > t);
    },
  };
}

type Row = Omit<UserRow, 'userId'>;

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

const viaOf = (row: Row): AccessInterval['via'] => ({ level: row.via.level, id: row.via.id, ...(row.via.groupId !== undefined ? { groupId: row.via.groupId } : {}) });

const WHAT = 'access/history';

/**
 * A ReadView that ends the query before any read once the request's signal is aborted (the
 * client left, the request timeout passed): a resolution between two deadline checks reads
 * nothing more for nobody.
 */
class Cancellable implements ReadView {
  constructor(private readonly inner: ReadView, private readonly deadline: Deadline) {}
  private check() {
    if (this.deadline.signal?.aborted) throw this.deadline.error(WHAT);
  }
  async get<T extends Doc = Doc>(collection: string, id: string) {
    this.check();
    return this.inner.get<T>(collection, id);
  }
  async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]) {
    this.check();
    return this.inner.getMany<T>(collection, ids);
  }
  async find<T extends Doc = Doc>(collection: string, filter: Filter, options?: FindOptions) {
    this.check();
    return this.inner.find<T>(collection, filter, options);
  }
  async count(collection: string, filter: Filter) {
    this.check();
    return this.inner.count(collection, filter);
  }
}

/**
 * What opened an interval that was already open at the history retention horizon
 * (HISTORY_RETENTION_DAYS): the versions before it may be deleted, so neither when it began
 * nor what began it is known any more, and the interval is shown from the horizon on.
 */
const RETENTION_HORIZON_REF = (horizon: number): ChangeRef => ({ type: 'retentionHorizon', time: horizon, actor: 'retention' });

/**
 * A page of R's access intervals overlapping [from, to), in (from, userId) order (see the top
 * of this file). The page ends when full, when HISTORY_READ_BUDGET reads of resolution are
 * spent or when the deadline passes, with a token at the (instant, user) it reached.
 *
 * `horizon` (the history retention's, src/jobs/retention.ts): the caller has refused a range
 * reaching before it; instants before it are not examined, and an interval open at it starts
 * there, opened by RETENTION_HORIZON_REF.
 */
export async function accessHistory(read: ReadView, apiKey: string, nowMs: number, q: HistoryQuery, budget = HISTORY_READ_BUDGET, deadline: Deadline = NO_DEADLINE, horizon?: number) {
  const query = { apiKey, what: 'auth/access/history', organizationId: q.organizationId, documentId: q.documentId ?? null, folderId: q.folderId ?? null, userId: q.userId ?? null, from: q.from ?? null, to: q.to ?? null };
  const start = decodePageToken(q.pageToken, query);
  if (start && typeof start.value !== 'number') throw invalidArgument('data.pageToken is not a valid page token for this query.');
  const pageSize = q.pageSize ?? HISTORY_DEFAULT_PAGE_SIZE;
  const view = new Cancellable(read, deadline);
  const plan = await historyPlan(view, apiKey, nowMs, q, horizon);
  const meter = new ReadMeter(view, budget);
  const pacer = new Pacer(deadline);
  const ref: ResourceRef = q.documentId !== undefined ? { documentId: q.documentId } : { folderId: q.folderId! };
  const rowsAt = async (at: number, userIds: readonly string[]) => {
    const before = meter.spent;
    const rows = userIds.length ? await userRowsOf(new AsOfView(meter, at), apiKey, at, q.organizationId, ref, userIds) : new Map<string, UserRow>();
    await pacer.spend(meter.spent - before);
    return rows;
  };

  const out: AccessInterval[] = [];
  /** The last (instant, user) examined whole: where the next page goes on. */
  let reached: { value: number; id: string } | undefined;
  /** Stop here? Never before the page examined someone: then the deadline fails the call instead. */
  const stop = () => {
    // The client left or the request timeout passed: no partial page, the call ends here.
    if (deadline.signal?.aborted) throw deadline.error(WHAT);
    if (!meter.exhausted && !deadline.passed) return false;
    if (reached === undefined) {
      if (deadline.passed) throw deadline.error(WHAT);
      return false;
    }
    return true;
  };
  const startAt = start ? (start.value as number) : -Infinity;
  for (const at of plan.instants) {
    if (at < startAt) continue;
    // No interval that begins at or after `to` overlaps [from, to).
    if (q.to !== undefined && at >= q.to) return { data: out, pageToken: undefined };
    const opening = plan.opening(at).filter((u) => !start || at > startAt || storeOrder(u, start.id) > 0);
    for (let i = 0; i < opening.length; i += CHUNK) {
      // A turn for the event loop between chunks: other requests run, and a client's leaving
      // (its socket's close, src/http/cancel.ts) is seen here rather than at the page's end.
      if (reached !== undefined) await letOthersRun();
      if (stop()) return { data: out, pageToken: encodePageToken(query, reached!) };
      const chunk = opening.slice(i, i + CHUNK);
      const now = await rowsAt(at, chunk);
      // At the horizon nothing before can be read: whoever has access then opens an interval there.
      const atHorizon = at === horizon;
      const before = atHorizon ? new Map<string, UserRow>() : await rowsAt(at - 1, chunk.filter((u) => now.has(u)));
      for (const userId of chunk) {
        const row = now.get(userId);
        const prior = before.get(userId);
        if (row && !(prior && sameRow(prior, row))) {
          const openedBy = atHorizon ? RETENTION_HORIZON_REF(at) : changeAt(plan.rows, userId, at, row, false);
          const iv: AccessInterval = { userId, accessRole: row.accessRole, from: at, to: null, via: viaOf(row), openedBy, closedBy: null };
          // Where it closes: the first of the user's later instants where their row differs.
          for (const later of plan.after(userId, at)) {
            if (stop()) return { data: out, pageToken: encodePageToken(query, reached!) };
            const next = (await rowsAt(later, [userId])).get(userId);
            if (next && sameRow(next, row)) continue;
            iv.to = later;
            iv.closedBy = changeAt(plan.rows, userId, later, row, true);
            break;
          }
          if (q.from === undefined || iv.to === null || iv.to > q.from) out.push(iv);
        }
        reached = { value: at, id: userId };
        if (out.length === pageSize) return { data: out, pageToken: encodePageToken(query, reached) };
      }
    }
  }
  return { data: out, pageToken: undefined };
}

/** Users examined at once at an instant: one resolution of them, with the budget and the deadline checked between. */
const CHUNK = 20;

