/**
 * Access queries (semantics §3 "Access queries"): the same rules as permissions/get, asked
 * the other ways round.
 *
 * - `resourcesPage`: which folders or documents can user U open (`/v2/auth/resources/get`).
 * - `usersPage`: who can open resource R (`/v2/auth/users/get`).
 * - `explainAccess`: why U can or cannot open R (`/v2/auth/permissions/explain`).
 *
 * Every entry these answer is the one `resolvePermissions` (queries/permissions.ts) computes,
 * the very function permissions/get answers with: they never hold rules of their own, so
 * a change to resolution (group grants, say) reaches them as it reaches permissions/get.
 * What they add is which users or resources to ask about (`grantHolders`, the walks below)
 * and where an entry came from (`candidateGrants`, `decidingCandidate`).
 *
 * Cost (docs/limits.md, Costs): a page of resources/get or users/get reads at most
 * ACCESS_READ_BUDGET store documents or keys, group lookups included (see it for what a
 * batch may add); when the budget is spent, or the request's deadline passes, the page ends
 * early, with a pageToken that goes on from there, never with an error. So an organization
 * of any size costs each page the same bounded work, and between its batches (and every
 * few thousand reads inside one, queries/cost.ts) other requests run: a slow listing in one
 * organization slows nobody else. explain reads what permissions/get reads for one user and one resource twice over
 * (once resolving it, once listing the candidate grants) plus the folders above it: a few
 * lookups bounded by the folder depth, never a scan.
 */
import { ApiError, BugError, invalidArgument, notFound } from '../src/shared/errors.js';
import type { Doc, Filter, FindOptions, ReadView } from '../src/ports/read-store.js';
import type { AccessType } from '../commands/folder-tree.js';
import { isLive, type AccessRole, type ResourceType } from '../commands/grant.js';
import { ORGANIZATIONS, organizationKey, type OrganizationDoc } from '../projections/organizations.js';
import { FOLDERS, folderKey, type FolderDoc } from '../projections/folders.js';
import { DOCUMENTS, documentKey, type DocumentDoc } from '../projections/documents.js';
import { GRANTS, grantKey, type GrantDoc } from '../projections/grants.js';
import { decodePageToken, encodePageToken, type Cursor } from './paging.js';
import { compareGroupGrants, groupGrantCounts, groupGrantsOn, groupGrantsOnResources, userGroupIds, type GroupGrantDoc } from './group-grants.js';
import { letOthersRun, NO_DEADLINE, Pacer, type Deadline } from './cost.js';
import { GROUP_MEMBERS, memberKey, type MemberDoc } from '../projections/groups.js';
import { isBlocked, resolvePermissions, USERS_PER_GROUP_BOUNDED_CALL, type Entry, type ResolveOptions } from './permissions.js';
import { documentTarget, folderTarget, type Target } from './targets.js';

/**
 * The read budget of one page of resources/get or users/get: store documents read plus keys
 * looked up (a `get` is 1, a `getMany` its number of keys, a `find` the rows it returns, at
 * least 1, a `count` 1), group lookups included. resources/get meters it inside a batch:
 * resolution is told what is left and resolves only the resources that fit (queries/
 * permissions.ts `fit`), so a page reads at most this plus the cheap reads of one batch that
 * decide what fits (its documents, their folders, the user's groups and their grant counts).
 * users/get checks it between chunks of USERS_PER_GROUP_BOUNDED_CALL users.
 */
export const ACCESS_READ_BUDGET = 10_000;
/** The default `pageSize` of resources/get and users/get (semantics §3: 1..1000, default 100). */
export const ACCESS_DEFAULT_PAGE_SIZE = 100;
/** Resources resolved at once in resources/get: one resolvePermissions call each. */
const MAX_RESOURCE_BATCH = 500;


// ---- reads, counted ----

/** A ReadView that counts what it reads (see ACCESS_READ_BUDGET). */
export class ReadMeter implements ReadView {
  spent = 0;
  constructor(private readonly inner: ReadView, readonly budget = ACCESS_READ_BUDGET) {}
  get exhausted() {
    return this.spent >= this.budget;
  }
  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    this.spent += 1;
    return this.inner.get<T>(collection, id);
  }
  async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    this.spent += ids.length;
    return this.inner.getMany<T>(collection, ids);
  }
  async find<T extends Doc = Doc>(collection: string, filter: Filter, options?: FindOptions): Promise<T[]> {
    const rows = await this.inner.find<T>(collection, filter, options);
    this.spent += Math.max(1, rows.length);
    return rows;
  }
  async count(collection: string, filter: Filter): Promise<number> {
    this.spent += 1;
    return this.inner.count(collection, filter);
  }
}

// ---- shared pieces ----

const isAllowed = (e: Entry | undefined): e is Extract<Entry, { accessRole: AccessRole }> => e !== undefined && 'accessRole' in e;
/** `minAccessRole`: viewer (or none) admits both roles, editor only editors. */
const meets = (role: AccessRole, min: AccessRole | undefined) => min !== 'editor' || role === 'editor';

/**
 * Store order of strings: SQLite (BINARY collation) and MongoDB compare UTF-8 bytes, which
 * differs from JavaScript's UTF-16 `<` past the Basic Multilingual Plane. Merging keyset
 * pages in JavaScript must use the store's order, or a cutoff could skip a row.
 */
export const storeOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

async function organizationOf(read: ReadView, apiKey: string, organizationId: string) {
  const organization = await read.get<OrganizationDoc>(ORGANIZATIONS, organizationKey(apiKey, organizationId));
  if (!organization) throw notFound('Organization does not exist.');
  return organization;
}

export type ResourceRef = { documentId: string; folderId?: undefined } | { folderId: string; documentId?: undefined };

/** R as resolution sees it, with the read-model documents behind it; NOT_FOUND when R is not there. */
async function targetOf(read: ReadView, apiKey: string, organizationId: string, ref: ResourceRef) {
  if (ref.documentId !== undefined) {
    const doc = await read.get<DocumentDoc>(DOCUMENTS, documentKey(apiKey, organizationId, ref.documentId));
    // A document whose folder is gone went with it (queries/documents.ts).
    const folder = doc?.folderId != null ? await read.get<FolderDoc>(FOLDERS, folderKey(apiKey, organizationId, doc.folderId)) : null;
    if (!doc || (doc.folderId !== null && !folder)) throw notFound('Document does not exist.');
    return { target: documentTarget(doc, folder), doc };
  }
  const folder = await read.get<FolderDoc>(FOLDERS, folderKey(apiKey, organizationId, ref.folderId));
  if (!folder) throw notFound('Folder does not exist.');
  return { target: folderTarget(folder), folder };
}

/** The one user's entries for `ids` of `kind`, as permissions/get answers them. */
async function entriesOf(read: ReadView, apiKey: string, nowMs: number, organizationId: string, userIds: string[], kind: 'folder' | 'document', ids: string[], options: ResolveOptions = {}) {
  const q = { organizationId, userIds, ...(kind === 'document' ? { documentIds: ids } : { folderIds: ids }) };
  type Data = Awaited<ReturnType<typeof resolvePermissions>>;
  let data: Data;
  try {
    data = await resolvePermissions(read, apiKey, nowMs, q, options);
  } catch (error) {
    // A resource deleted while the page was read: its entry says does_not_exist and the
    // others are right; it is simply not listed (an organization gone has no details).
    if (!(error instanceof ApiError && error.status === 'NOT_FOUND' && error.details)) throw error;
    data = error.details as Data;
  }
  return (userId: string, id: string): Entry | undefined => {
    const entries = kind === 'document' ? data[userId]?.documents : data[userId]?.folders;
    return entries && Object.hasOwn(entries, id) ? entries[id] : undefined;
  };
}

// ---- where an entry comes from ----

/** Where a grant sits, seen from R (the API's names: an ancestor is a `folder`). */
export type Level = 'resource' | 'folder' | 'organization';

export interface GrantCandidate {
  level: Level;
  /** The resource the grant is on. */
  id: string;
  via: 'user' | 'group';
  groupId?: string;
  accessRole: AccessRole;
  /** Unix seconds; absent on a permanent grant. */
  expiresAt?: number;
  /** Not expired at the request's time (an expired grant counts as absent). */
  live: boolean;
}

/** The resources a candidate grant for R may sit on (semantics §3 rule 3), most specific first. */
function candidateResources(target: Target, organizationId: string): Array<{ level: Level; type: ResourceType; id: string }> {
  return [
    { level: 'resource', type: target.kind, id: target.id },
    ...target.ancestors.map((id) => ({ level: 'folder' as const, type: 'folder' as const, id })),
    { level: 'organization', type: 'organization', id: organizationId },
  ];
}

/**
 * Every grant each of `userIds` holds that is a candidate for R (semantics §3 rules 3 and 7),
 * live or expired, most specific level first; at each level the user's own grant first,
 * then their groups' grants there in the order resolution ranks them (`compareGroupGrants`:
 * editor first, then the later expiry, permanent first, then groupId). So the first live
 * candidate at a level is the one `levelCandidate` decides with, and `decidingCandidate`
 * picks the grant resolution decides with.
 *
 * Reads: one getMany of the users' own grants; per user, their groups (one indexed find,
 * at most 100); per distinct group one count, and for those holding grants the cheaper of
 * their grants and their keys on R's levels: what permissions/get reads for the same users
 * and resource.
 */
async function candidateGrants(read: ReadView, apiKey: string, organizationId: string, target: Target, userIds: readonly string[], nowMs: number) {
  const resources = candidateResources(target, organizationId);
  const keys = userIds.flatMap((u) => resources.map((r) => grantKey(apiKey, organizationId, u, r.type, r.id)));
  const found = new Map((await read.getMany<GrantDoc>(GRANTS, keys)).map((g) => [g._id, g]));
  const slotOf = new Map(resources.map((r, j) => [`${r.type}\u0000${r.id}`, j]));
  const pairs = resources.map((r) => [r.type, r.id] as const);
  const candidate = (r: (typeof resources)[number], g: GrantDoc | GroupGrantDoc, group?: string): GrantCandidate => ({
    level: r.level,
    id: r.id,
    via: group === undefined ? 'user' : 'group',
    ...(group !== undefined ? { groupId: group } : {}),
    accessRole: g.accessRole,
    ...(g.expiresAt !== null ? { expiresAt: g.expiresAt } : {}),
    live: isLive(g, nowMs),
  });
  // Each user's groups, then each distinct group's grants on R's levels, read once for all
  // the users (queries/group-grants.ts: only from groups holding grants).
  const pacer = new Pacer();
  const groupsOf: string[][] = [];
  for (const u of userIds) {
    groupsOf.push(await userGroupIds(read, apiKey, organizationId, u));
    await pacer.spend(1);
  }
  const held = await groupGrantCounts(read, apiKey, organizationId, new Set(groupsOf.flat()), pacer);
  const byGroup = new Map<string, GroupGrantDoc[]>();
  for (const g of await groupGrantsOnResources(read, apiKey, organizationId, held, pairs, pacer)) {
    let list = byGroup.get(g.groupId);
    if (!list) byGroup.set(g.groupId, (list = []));
    list.push(g);
  }
  const out = new Map<string, GrantCandidate[]>();
  for (const [i, u] of userIds.entries()) {
    const groupGrants: GroupGrantDoc[][] = resources.map(() => []);
    for (const groupId of groupsOf[i]!) {
      for (const g of byGroup.get(groupId) ?? []) groupGrants[slotOf.get(`${g.resourceType}\u0000${g.resourceId}`)!]!.push(g);
    }
    const list: GrantCandidate[] = [];
    resources.forEach((r, j) => {
      const g = found.get(keys[i * resources.length + j]!);
      if (g) list.push(candidate(r, g));
      for (const gg of groupGrants[j]!.sort(compareGroupGrants)) list.push(candidate(r, gg, gg.groupId));
    });
    out.set(u, list);
  }
  return out;
}

/**
 * The index of the candidate whose role an ALLOWED entry carries, as `decideAccess` picks it
 * (semantics §3 rule 4): the most specific live grant; under `restricted`, the most specific
 * live one below the organization. Undefined when none decides (public, no grant: editor).
 */
function decidingCandidate(accessType: AccessType, candidates: readonly GrantCandidate[]): number | undefined {
  const i = candidates.findIndex((c) => c.live && (accessType !== 'restricted' || c.level !== 'organization'));
  return i < 0 ? undefined : i;
}

// ---- who holds grants ----

/**
 * The users holding a grant on any of `resources` (R, its folders, the organization), in
 * store order of userId, strictly after `after`: each resource's grants are read through
 * the (apiKey, organizationId, resourceType, resourceId, userId) index of `grants`, at most
 * `limit` per resource, and merged. `userIds` is complete up to the smallest last userId of
 * the resources that filled their limit; `exhausted` when none did (no holder is left).
 * Users let in through a group only are found by usersPage's second walk (UsersPosition).
 */
async function grantHolders(read: ReadView, apiKey: string, organizationId: string, resources: ReadonlyArray<{ type: ResourceType; id: string }>, after: string | undefined, limit: number) {
  const lists = await Promise.all(resources.map((r) =>
    read.find<GrantDoc>(GRANTS, { apiKey, organizationId, resourceType: r.type, resourceId: r.id }, {
      sort: 'userId',
      ...(after !== undefined ? { after: { value: after, id: grantKey(apiKey, organizationId, after, r.type, r.id) } } : {}),
      limit,
    })));
  let cutoff: string | undefined;
  for (const list of lists) {
    if (list.length < limit) continue;
    const last = list[list.length - 1]!.userId;
    if (cutoff === undefined || storeOrder(last, cutoff) < 0) cutoff = last;
  }
  const users = new Set<string>();
  for (const list of lists) for (const g of list) if (cutoff === undefined || storeOrder(g.userId, cutoff) <= 0) users.add(g.userId);
  return { userIds: [...users].sort(storeOrder), exhausted: cutoff === undefined };
}

// ---- resources/get ----

/**
 * A page token is bound to the instant asked about (issue 25, src/usecases/access.ts): a
 * live query's token does not go on an asOf one's pages, nor one asOf's another's. Live
 * queries hash as before, so their tokens are unchanged.
 */
const asOfOf = (q: { asOf?: number }) => (q.asOf !== undefined ? { asOf: q.asOf } : {});

export interface ResourcesQuery {
  /** The past instant the question is asked at (Unix ms); the caller reads through its AsOfView. */
  asOf?: number;
  organizationId: string;
  userId: string;
  type: 'document' | 'folder';
  minAccessRole?: AccessRole;
  folderId?: string;
  pageSize?: number;
  pageToken?: string;
}

interface ResourceRow {
  id: string;
  accessRole: AccessRole;
  accessType: AccessType;
  expiresAt?: number;
}

/** One step of a walk: the resource, and the walk's position once it is examined. */
interface Walked {
  id: string;
  after: Cursor;
}

interface Walk {
  /**
   * Up to `n` more resources in the walk's order (fewer when the budget ran out while
   * looking); `done`: nothing is left after them. Always reads at least once.
   */
  next(n: number): Promise<{ items: Walked[]; done: boolean }>;
  /** The position after everything examined so far; undefined before anything was. */
  position(): Cursor | undefined;
}

const seqCursor = (d: { seq: string; _id: string }): Cursor => ({ value: d.seq, id: d._id });

/**
 * The documents (or folders) matching `filter`, in creation order through the
 * (apiKey, organizationId[, folderId], seq) index, those `keep` refuses skipped. Rows read
 * ahead wait in `buffer` for the next call: nothing is read twice.
 */
function seqWalk<T extends DocumentDoc | FolderDoc>(read: ReadMeter, collection: string, filter: Filter, idOf: (d: T) => string, keep: ((d: T) => boolean) | null, start: Cursor | undefined): Walk {
  let pos = start;
  let fetched = start;
  let buffer: T[] = [];
  let at = 0;
  let storeDone = false;
  return {
    position: () => pos,
    async next(n) {
      const items: Walked[] = [];
      let first = true;
      while (items.length < n) {
        if (at === buffer.length) {
          if (storeDone || (!first && read.exhausted)) break;
          first = false;
          // One row past what is wanted tells whether the walk ends here; a filtered walk
          // reads ahead further, as most of what it reads may be skipped.
          const limit = Math.min(MAX_RESOURCE_BATCH, keep ? MAX_RESOURCE_BATCH : n - items.length + 1);
          buffer = await read.find<T>(collection, filter, { sort: 'seq', ...(fetched ? { after: fetched } : {}), limit });
          at = 0;
          if (buffer.length < limit) storeDone = true;
          if (buffer.length === 0) break;
          fetched = seqCursor(buffer[buffer.length - 1]!);
        }
        const d = buffer[at++]!;
        pos = seqCursor(d);
        if (!keep || keep(d)) items.push({ id: idOf(d), after: pos });
      }
      return { items, done: storeDone && at === buffer.length };
    },
  };
}

/**
 * The documents of a folder's subtree: the subtree's folders in creation order (a filtered
 * walk over the organization's folders), and each one's documents in creation order. The
 * position is (folder walk position, folder being read, last document read in it).
 */
function subtreeDocumentWalk(read: ReadMeter, apiKey: string, organizationId: string, inSubtree: (f: FolderDoc) => boolean, start: Cursor | undefined): Walk {
  const state = decodeSubtreePosition(start);
  const folders = seqWalk<FolderDoc>(read, FOLDERS, { apiKey, organizationId }, (f) => f.folderId, inSubtree, state.folders);
  let current = state.current;
  let docAfter = state.doc;
  let finished = false;
  const position = (): Cursor => ({
    value: JSON.stringify([folders.position()?.value ?? null, folders.position()?.id ?? null, current ?? null, docAfter?.value ?? null, docAfter?.id ?? null]),
    id: '',
  });
  return {
    position: () => (folders.position() || current !== undefined ? position() : undefined),
    async next(n) {
      const items: Walked[] = [];
      let first = true;
      while (items.length < n && !finished && (first || !read.exhausted)) {
        first = false;
        if (current === undefined) {
          const next = await folders.next(1);
          if (next.items.length === 0) {
            if (next.done) finished = true;
            continue;
          }
          current = next.items[0]!.id;
          docAfter = undefined;
        }
        const want = n - items.length;
        const docs = await read.find<DocumentDoc>(DOCUMENTS, { apiKey, organizationId, folderId: current }, { sort: 'seq', ...(docAfter ? { after: docAfter } : {}), limit: want + 1 });
        for (const d of docs.slice(0, want)) {
          docAfter = seqCursor(d);
          items.push({ id: d.documentId, after: position() });
        }
        if (docs.length <= want) {
          current = undefined;
          docAfter = undefined;
        }
      }
      return { items, done: finished };
    },
  };
}

function decodeSubtreePosition(c: Cursor | undefined): { folders?: Cursor; current?: string; doc?: Cursor } {
  if (c === undefined) return {};
  let p: unknown;
  try {
    p = JSON.parse(String(c.value));
  } catch {
    p = null;
  }
  const str = (v: unknown): v is string => typeof v === 'string';
  const opt = (v: unknown) => v === null || typeof v === 'string';
  if (!Array.isArray(p) || p.length !== 5 || !p.every(opt) || str(p[0]) !== str(p[1]) || str(p[3]) !== str(p[4]) || (str(p[3]) && !str(p[2]))) {
    throw invalidArgument('data.pageToken is not a valid page token for this query.');
  }
  const [fv, fid, current, dv, did] = p as Array<string | null>;
  return {
    ...(fv !== null && fid !== null ? { folders: { value: fv, id: fid } } : {}),
    ...(current !== null ? { current } : {}),
    ...(dv !== null && did !== null ? { doc: { value: dv, id: did } } : {}),
  };
}

/**
 * A page of the resources of `type` user U can open (semantics §3 "Access queries"), each
 * row exactly U's permissions/get entry for it plus its id. Order: creation order over the
 * organization; with `folderId`, the subtree's folders (the folder itself first) in creation
 * order and, for documents, each folder's documents in creation order.
 */
export async function resourcesPage(read: ReadView, apiKey: string, nowMs: number, q: ResourcesQuery, budget = ACCESS_READ_BUDGET, deadline: Deadline = NO_DEADLINE) {
  const { organizationId, userId, type, minAccessRole, folderId } = q;
  const pageSize = q.pageSize ?? ACCESS_DEFAULT_PAGE_SIZE;
  const query = { apiKey, what: 'auth/resources', organizationId, userId, type, minAccessRole: minAccessRole ?? null, folderId: folderId ?? null, ...asOfOf(q) };
  const start = decodePageToken(q.pageToken, query);
  if (start && typeof start.value !== 'string') throw invalidArgument('data.pageToken is not a valid page token for this query.');
  const meter = new ReadMeter(read, budget);
  const organization = await organizationOf(meter, apiKey, organizationId);
  if (folderId !== undefined && !(await meter.get(FOLDERS, folderKey(apiKey, organizationId, folderId)))) throw notFound('Folder does not exist.');
  // Rule 2: no document of a disabled organization opens; no walk can find one.
  if (type === 'document' && organization.disabled) return { rows: [] as ResourceRow[], pageToken: undefined };

  const inSubtree = (f: FolderDoc) => f.folderId === folderId || f.ancestors.includes(folderId!);
  const walk = type === 'folder'
    ? seqWalk<FolderDoc>(meter, FOLDERS, { apiKey, organizationId }, (f) => f.folderId, folderId === undefined ? null : inSubtree, start)
    : folderId === undefined
      ? seqWalk<DocumentDoc>(meter, DOCUMENTS, { apiKey, organizationId }, (d) => d.documentId, null, start)
      : subtreeDocumentWalk(meter, apiKey, organizationId, inSubtree, start);

  const rows: ResourceRow[] = [];
  let cursor = start;
  let more = true;
  // Small first, then larger: a dense listing reads little more than its page, a sparse
  // one (few grants among many restricted resources) gets through the budget in fewer calls.
  let batch = Math.min(MAX_RESOURCE_BATCH, pageSize);
  let first = true;
  // Resolution meters the budget inside the batch: it resolves the resources whose cost fits
  // in what is left (at least one on the first batch, so a page always moves on), and the
  // page ends at the first one it left out.
  const fitted: ResolveOptions = { maxCost: () => meter.budget - meter.spent, fit: { atLeastOne: true } };
  while (first || (!meter.exhausted && !deadline.passed)) {
    if (!first) await letOthersRun();
    // The client left or the request timeout passed (src/http/cancel.ts): the call ends, no partial page.
    if (deadline.signal?.aborted) throw deadline.error('resources/get');
    const options = first ? fitted : { ...fitted, fit: { atLeastOne: false } };
    first = false;
    const { items, done } = await walk.next(Math.min(MAX_RESOURCE_BATCH, Math.max(batch, pageSize - rows.length)));
    batch = Math.min(MAX_RESOURCE_BATCH, batch * 2);
    const entry = items.length ? await entriesOf(meter, apiKey, nowMs, organizationId, [userId], type, items.map((i) => i.id), options) : null;
    let full = false;
    let cut = false;
    for (let i = 0; i < items.length; i++) {
      const e = entry!(userId, items[i]!.id);
      // Left out for the budget: the page ends before it.
      if (e === undefined) {
        cut = true;
        break;
      }
      cursor = items[i]!.after;
      if (isAllowed(e) && meets(e.accessRole, minAccessRole)) {
        if (e.accessType === undefined) throw new BugError('a folder or document entry carries its access type');
        rows.push({ id: items[i]!.id, ...e, accessType: e.accessType });
      }
      if (rows.length === pageSize) {
        full = true;
        more = i < items.length - 1 || !done;
        break;
      }
    }
    if (full) break;
    if (cut) {
      if (cursor === start) throw new BugError('the first batch of a page resolves at least one resource');
      break;
    }
    cursor = walk.position() ?? cursor;
    if (done) {
      more = false;
      break;
    }
  }
  // Cut short because the client left or the request timeout passed: the error, not a partial page.
  if (more && deadline.signal?.aborted) throw deadline.error('resources/get');
  return { rows, pageToken: more && cursor ? encodePageToken(query, cursor) : undefined };
}

// ---- users/get ----

export type UsersQuery = { organizationId: string; minAccessRole?: AccessRole; pageSize?: number; pageToken?: string; asOf?: number } & ResourceRef;

export interface UserRow {
  userId: string;
  accessRole: AccessRole;
  expiresAt?: number;
  via: { type: 'user' | 'group'; level: Level; id: string; groupId?: string };
}

/**
 * Where a users/get page stopped. Two walks, one after the other, so that every step is a
 * keyset read of one index however many groups hold grants on R's levels:
 * - `holders`: users holding a grant of their own on one of R's levels (own grants live or
 *   expired: such a user is examined here whatever lets them in, a group grant included),
 *   in userId order, after `after`;
 * - `groups`: users let in only through groups. The live group grants on R's levels, level
 *   by level (R first, the organization last) and by groupId within a level; each group's
 *   members in userId order. A member is listed at the first of their groups' grants in
 *   that order, and only if they hold no grant of their own there (else `holders` listed
 *   them): so each user appears once.
 */
type UsersPosition =
  | { walk: 'holders'; after?: string }
  | { walk: 'groups'; level: number; group: string | null; inGroup: boolean; member: string | null };

function encodeUsersPosition(p: UsersPosition): Cursor {
  return p.walk === 'holders' ? { value: p.after!, id: '' } : { value: JSON.stringify([p.level, p.group, p.inGroup, p.member]), id: 'groups' };
}

function decodeUsersPosition(c: Cursor | undefined, levels: number): UsersPosition {
  const bad = () => invalidArgument('data.pageToken is not a valid page token for this query.');
  if (c === undefined) return { walk: 'holders' };
  if (typeof c.value !== 'string') throw bad();
  if (c.id === '') return { walk: 'holders', after: c.value };
  if (c.id !== 'groups') throw bad();
  let p: unknown;
  try {
    p = JSON.parse(c.value);
  } catch {
    throw bad();
  }
  const opt = (v: unknown) => v === null || typeof v === 'string';
  if (!Array.isArray(p) || p.length !== 4 || !Number.isInteger(p[0]) || p[0] < 0 || p[0] > levels || !opt(p[1]) || typeof p[2] !== 'boolean' || !opt(p[3])) throw bad();
  const [level, group, inGroup, member] = p as [number, string | null, boolean, string | null];
  // Inside a group there is a group; a member cursor only inside one.
  if ((inGroup && group === null) || (!inGroup && member !== null)) throw bad();
  return { walk: 'groups', level, group, inGroup, member };
}

/** A users/get row: the user, the role resolution gives, and the grant that decides it. */
function userRow(userId: string, e: Extract<Entry, { accessRole: AccessRole }>, c: GrantCandidate): UserRow {
  return {
    userId,
    accessRole: e.accessRole,
    ...(e.expiresAt !== undefined ? { expiresAt: e.expiresAt } : {}),
    via: { type: c.via, level: c.level, id: c.id, ...(c.groupId !== undefined ? { groupId: c.groupId } : {}) },
  };
}

type GroupsPosition = Extract<UsersPosition, { walk: 'groups' }>;

/** Walk 2, between groups: where the next group with a live grant on `r` (at `p.level`) is. */
async function nextLiveGroup(meter: ReadMeter, apiKey: string, organizationId: string, r: { type: ResourceType; id: string }, p: GroupsPosition, nowMs: number): Promise<GroupsPosition> {
  const grants = await groupGrantsOn(meter, apiKey, organizationId, r.type, r.id, { ...(p.group !== null ? { after: p.group } : {}), limit: 50 });
  const live = grants.find((g) => isLive(g, nowMs));
  if (live) return { walk: 'groups', level: p.level, group: live.groupId, inGroup: true, member: null };
  if (grants.length < 50) return { walk: 'groups', level: p.level + 1, group: null, inGroup: false, member: null };
  return { walk: 'groups', level: p.level, group: grants[grants.length - 1]!.groupId, inGroup: false, member: null };
}

/**
 * Walk 2 lists a member under `group` at `level` only when that is the first of their group
 * grants in walk order and they hold no grant of their own on R's levels (walk 1 examined them).
 */
function isFirstGroupHere(found: readonly GrantCandidate[], levelOf: ReadonlyMap<string, number>, atLevel: number, group: string): boolean {
  let best: { level: number; groupId: string } | undefined;
  for (const c of found) {
    const level = levelOf.get(`${c.level}\u0000${c.id}`);
    if (level === undefined) continue;
    if (c.via === 'user') return false;
    if (!c.live) continue;
    if (!best || level < best.level || (level === best.level && storeOrder(c.groupId!, best.groupId) < 0)) best = { level, groupId: c.groupId! };
  }
  return best !== undefined && best.level === atLevel && best.groupId === group;
}

/**
 * A page of who can open R (semantics §3 "Access queries"): `everyone` when anyone gets in
 * (R is public and not disabled), and the users whose access comes from a grant (their own
 * or a group's, rule 7), each exactly as permissions/get answers for them, with the grant
 * that decides (`via`). Order: first the users holding a grant of their own on R, a folder
 * above it or the organization, by userId (the store's order); then those let in only
 * through a group, by the level of that group's grant (R first), groupId and userId (see
 * UsersPosition). Those resolution denies (an organization member on a restricted
 * resource, say) or whose grants all expired are not listed.
 */
export async function usersPage(read: ReadView, apiKey: string, nowMs: number, q: UsersQuery, budget = ACCESS_READ_BUDGET, deadline: Deadline = NO_DEADLINE) {
  const { organizationId, minAccessRole } = q;
  const pageSize = q.pageSize ?? ACCESS_DEFAULT_PAGE_SIZE;
  const query = { apiKey, what: 'auth/users', organizationId, documentId: q.documentId ?? null, folderId: q.folderId ?? null, minAccessRole: minAccessRole ?? null, ...asOfOf(q) };
  const start = decodePageToken(q.pageToken, query);
  const meter = new ReadMeter(read, budget);
  const organization = await organizationOf(meter, apiKey, organizationId);
  const { target } = await targetOf(meter, apiKey, organizationId, q);
  const blocked = isBlocked(target, organization);
  const head = { accessType: target.accessType, everyone: !blocked && target.accessType === 'public' };

  // Under restricted an organization grant alone lets nobody in (rule 4): its holders, who
  // may be every member of a large organization, are not read; a member with a grant below
  // it is a holder through that grant. The same for groups granted on the organization.
  const resources = candidateResources(target, organizationId).filter((r) => target.accessType !== 'restricted' || r.level !== 'organization');
  const levelOf = new Map(resources.map((r, i) => [`${r.level}\u0000${r.id}`, i]));
  let pos = decodeUsersPosition(start, resources.length);
  // Rule 2: nobody opens a disabled document.
  if (blocked) return { data: { ...head, users: [] as UserRow[] }, pageToken: undefined };

  const ids = [target.id];
  const users: UserRow[] = [];
  /** Examines `chunk` (userId order), listing those let in through a grant; `keep` filters by candidates first. */
  const examine = async (chunk: string[], keep: (found: GrantCandidate[]) => boolean, moved: (userId: string) => void) => {
    const candidates = await candidateGrants(meter, apiKey, organizationId, target, chunk, nowMs);
    const wanted = chunk.filter((u) => keep(candidates.get(u)!));
    const entry = wanted.length ? await entriesOf(meter, apiKey, nowMs, organizationId, wanted, target.kind, ids) : () => undefined;
    for (const userId of chunk) {
      moved(userId);
      const found = candidates.get(userId)!;
      const e = keep(found) ? entry(userId, target.id) : undefined;
      const deciding = isAllowed(e) ? decidingCandidate(target.accessType, found) : undefined;
      // Listed when allowed through a grant: a user without one is in `everyone`.
      if (isAllowed(e) && deciding !== undefined && meets(e.accessRole, minAccessRole)) {
        users.push(userRow(userId, e, found[deciding]!));
      }
      if (users.length === pageSize) return true;
    }
    return false;
  };

  let first = true;
  const go = async () => {
    if (!first) await letOthersRun();
    // The client left or the request timeout passed (src/http/cancel.ts): the call ends, no partial page.
    if (deadline.signal?.aborted) throw deadline.error('users/get');
    const ok = first || (!meter.exhausted && !deadline.passed);
    first = false;
    return ok;
  };
  // Walk 1: holders of a grant of their own.
  while (pos.walk === 'holders' && users.length < pageSize && (await go())) {
    const need = pageSize - users.length;
    const limit = Math.max(1, Math.min(need, Math.floor((meter.budget - meter.spent) / resources.length)));
    const { userIds, exhausted } = await grantHolders(meter, apiKey, organizationId, resources, pos.after, limit);
    let full = false;
    // A few users at a time: their groups stay under MAX_GROUPS_PER_REQUEST, and the budget
    // and the deadline are checked between them.
    for (let i = 0; i < userIds.length && !full; i += USERS_PER_GROUP_BOUNDED_CALL) {
      if (i > 0 && (meter.exhausted || deadline.passed)) break;
      if (i > 0) await letOthersRun();
      full = await examine(userIds.slice(i, i + USERS_PER_GROUP_BOUNDED_CALL), () => true, (u) => (pos = { walk: 'holders', after: u }));
    }
    if (!full && exhausted && (userIds.length === 0 || (pos.walk === 'holders' && pos.after === userIds[userIds.length - 1]))) {
      pos = { walk: 'groups', level: 0, group: null, inGroup: false, member: null };
    }
  }
  // Walk 2: users let in only through a group.
  while (pos.walk === 'groups' && users.length < pageSize && (await go())) {
    const p: GroupsPosition = pos;
    if (p.level === resources.length) break;
    const r = resources[p.level]!;
    if (!p.inGroup) {
      pos = await nextLiveGroup(meter, apiKey, organizationId, r, p, nowMs);
      continue;
    }
    const group = p.group!;
    // A few members at a time (see walk 1); each step checks the budget and the deadline.
    const limit = USERS_PER_GROUP_BOUNDED_CALL;
    const members = await meter.find<MemberDoc>(GROUP_MEMBERS, { apiKey, organizationId, groupId: group }, {
      sort: 'userId',
      ...(p.member !== null ? { after: { value: p.member, id: memberKey(apiKey, organizationId, group, p.member) } } : {}),
      limit,
    });
    const firstHere = (found: GrantCandidate[]) => isFirstGroupHere(found, levelOf, p.level, group);
    const full = members.length ? await examine(members.map((m) => m.userId), firstHere, (u) => (pos = { ...p, member: u })) : false;
    if (!full && members.length < limit) pos = { walk: 'groups', level: p.level, group, inGroup: false, member: null };
  }
  // Done: walk 2 went past the last level.
  const done = pos.walk === 'groups' && pos.level === resources.length;
  const token = !done && (pos.walk === 'groups' || pos.after !== undefined) ? encodePageToken(query, encodeUsersPosition(pos)) : undefined;
  return { data: { ...head, users }, pageToken: token };
}

/**
 * The users/get rows of `userIds` for R as of `nowMs`, the very rows usersPage lists for them
 * (a user is listed there iff resolution lets them in and a live grant decides): what the
 * access history asks of the few users a change concerns (queries/access-history.ts) instead
 * of a whole users/get. Empty when R or its organization is missing, or R is disabled.
 */
export async function userRowsOf(read: ReadView, apiKey: string, nowMs: number, organizationId: string, ref: ResourceRef, userIds: readonly string[]): Promise<Map<string, UserRow>> {
  const out = new Map<string, UserRow>();
  let target: Target;
  try {
    const organization = await organizationOf(read, apiKey, organizationId);
    target = (await targetOf(read, apiKey, organizationId, ref)).target;
    if (isBlocked(target, organization)) return out;
  } catch (error) {
    if (error instanceof ApiError && error.status === 'NOT_FOUND') return out;
    throw error;
  }
  // A few users at a time, as usersPage examines them: their groups stay under MAX_GROUPS_PER_REQUEST.
  for (let i = 0; i < userIds.length; i += USERS_PER_GROUP_BOUNDED_CALL) {
    const chunk = userIds.slice(i, i + USERS_PER_GROUP_BOUNDED_CALL);
    const candidates = await candidateGrants(read, apiKey, organizationId, target, chunk, nowMs);
    const entry = await entriesOf(read, apiKey, nowMs, organizationId, chunk, target.kind, [target.id]);
    for (const userId of chunk) {
      const e = entry(userId, target.id);
      const found = candidates.get(userId)!;
      const deciding = isAllowed(e) ? decidingCandidate(target.accessType, found) : undefined;
      if (isAllowed(e) && deciding !== undefined) out.set(userId, userRow(userId, e, found[deciding]!));
    }
  }
  return out;
}

// ---- permissions/explain ----

export type ExplainQuery = { organizationId: string; userId: string } & ResourceRef;

type DecidingRule = '3.2 disabled' | '3.4 public' | '3.4 organizationPrivate' | '3.4 restricted';

/**
 * Why U can or cannot open R: the permissions/get entry, where R's effective access type
 * comes from, whether a disabled document or organization blocks it, U's candidate grants
 * (expired ones too, marked), and the rule and grant that decide.
 */
export async function explainAccess(read: ReadView, apiKey: string, nowMs: number, q: ExplainQuery) {
  const { organizationId, userId } = q;
  const organization = await organizationOf(read, apiKey, organizationId);
  const { target, doc, folder } = await targetOf(read, apiKey, organizationId, q);
  const entry = (await entriesOf(read, apiKey, nowMs, organizationId, [userId], target.kind, [target.id]))(userId, target.id);
  // Only a resource deleted since it was read above leaves no entry.
  if (!entry || ('errorCode' in entry && entry.errorCode === 'does_not_exist')) {
    throw notFound(target.kind === 'document' ? 'Document does not exist.' : 'Folder does not exist.');
  }

  // Semantics §3 "Effective access type": R's own type, else the nearest folder above with
  // one (a document's own folder first), else the organization default.
  let from: { level: Level; id: string } = { level: 'organization', id: organizationId };
  if ((doc ?? folder)!.accessType !== null) from = { level: 'resource', id: target.id };
  else if (target.ancestors.length > 0) {
    const chain = await read.getMany<FolderDoc>(FOLDERS, target.ancestors.map((f) => folderKey(apiKey, organizationId, f)));
    const own = chain.find((f) => f.accessType !== null);
    if (own) from = { level: 'folder', id: own.folderId };
  }
  const blocked = target.kind === 'document' ? (doc!.disabled ? 'document disabled' : organization.disabled ? 'organization disabled' : undefined) : undefined;
  const candidates = (await candidateGrants(read, apiKey, organizationId, target, [userId], nowMs)).get(userId) ?? [];
  const deciding = !blocked && isAllowed(entry) ? decidingCandidate(target.accessType, candidates) : undefined;
  const rule: DecidingRule = blocked ? '3.2 disabled' : `3.4 ${target.accessType}`;
  return {
    entry,
    accessType: { value: target.accessType, from },
    ...(blocked ? { blocked } : {}),
    candidates,
    decidedBy: { rule, ...(deciding !== undefined ? { candidate: deciding } : {}) },
  };
}
