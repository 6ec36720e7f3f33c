/**
 * Permission resolution (semantics §3 "Who gets in"), rule by rule.
 *
 * Cost, all bounded before the costly part runs (docs/limits.md, Costs):
 * - first, cheap reads bounded by the query's own limits: the organization, one getMany of
 *   the requested documents, one of their folders and the requested folders (whose
 *   `ancestors` lists bound the walk), per user one indexed find of their groups (at most
 *   MAX_GROUPS_PER_USER rows), and per distinct group one indexed count of its grants. More
 *   than MAX_GROUPS_PER_REQUEST distinct groups is refused here.
 * - then the resolution cost, counted from those before anything else is read
 *   (`resolutionCost`), refused past MAX_RESOLUTION_COST with INVALID_ARGUMENT: per user one
 *   getMany of the keys (U, each slot), a slot being each requested resource, each ancestor
 *   folder and the organization; per group holding grants, the smaller of its grants and the
 *   slots (queries/group-grants.ts `groupGrantReads`); and per user, each of their groups'
 *   grants on the slots weighed once. A group without grants costs its one count: the
 *   fan-out of looking up every (group, slot) key is gone. Example: 10 users in 100 groups
 *   each (1,000 groups, none holding a grant), 100 documents each 8 folders deep (901
 *   slots): 10 x 901 keys, where (group, slot) keys alone were 901,000 lookups.
 * - reads are paced (queries/cost.ts): every few thousand the event loop gets a turn, so
 *   other requests run in between, and a request past its deadline stops there.
 * Nothing scans the organization; membership is read at query time, so leaving a group or
 * its deletion takes its grants away at once.
 *
 * Access context (semantics §4a): each user's row also gets `context.accessFields`, the
 * access fields of the live grants that let the user into a requested resource (a grant on
 * the resource, an ancestor folder or the organization: fields hold below their resource,
 * as grants do) and of the organization grant when the user is a member. Each grant's
 * fields are read once however many resources it serves, and a user's live grants in one
 * organization hold at most 2,000 (commands/grant.ts), so this adds at most 2,000 strings
 * per user to the cost above. Group grants carry no access fields (commands/group.ts).
 */
import { invalidArgument, notFound } from '../src/shared/errors.js';
import type { ReadView } from '../src/ports/read-store.js';
import type { AccessType } from '../commands/folder-tree.js';
import { isLive, type AccessRole, type ResourceType } from '../commands/grant.js';
import { ORGANIZATIONS, organizationKey, type OrganizationDoc } from '../projections/organizations.js';
import { FOLDERS, folderKey, type FolderDoc } from '../projections/folders.js';
import { DOCUMENTS, documentKey, type DocumentDoc } from '../projections/documents.js';
import { GRANTS, type GrantDoc } from '../projections/grants.js';
import { MAX_GROUPS_PER_USER } from '../commands/group.js';
import { bestGroupGrant, compareGroupGrants, groupGrantCounts, groupGrantReads, groupGrantsOnResources, userGroupIds, type GroupGrantDoc } from './group-grants.js';
import { Pacer } from './cost.js';
import { documentTarget, folderTarget, type Target } from './targets.js';
import { accessIndexOf, type OrganizationAccess } from './access-index.js';

export type Entry =
  | { accessRole: AccessRole; accessType?: AccessType; expiresAt?: number }
  | { error: string; errorCode: 'permission_denied'; accessType?: AccessType }
  | { error: string; errorCode: 'does_not_exist' };

type Level = 'resource' | 'ancestor' | 'organization';

/**
 * The grant that counts at one level for one user: their own (`via: 'user'`), else the best
 * of their groups' (`via: 'group'`, semantics §3 rule 7).
 */
type Candidate =
  | { level: Level; via: 'user'; grant: GrantDoc }
  | { level: Level; via: 'group'; grant: GroupGrantDoc };

/** What an entry reads from the deciding grant, whoever holds it. */
type Deciding = { accessRole: AccessRole; expiresAt: number | null };

// Rule 1: R does not exist: its entry says so, and the whole query fails (NOT_FOUND).
const missingEntry = (kind: 'folder' | 'document'): Entry => ({
  error: kind === 'folder' ? 'Folder does not exist' : 'Document does not exist',
  errorCode: 'does_not_exist',
});

// Rule 2: a disabled document, or any document of a disabled organization, is denied.
export const isBlocked = (target: Target, organization: OrganizationDoc) =>
  target.kind === 'document' && (target.disabled || organization.disabled);

// Rule 7 at one level: the user's own live grant decides over any group's; else the best
// live grant of the user's groups (`groupGrants`: theirs on this resource), see
// queries/group-grants.ts `compareGroupGrants`. An expired grant counts as absent.
function levelCandidate(level: Level, own: GrantDoc | undefined, groupGrants: Iterable<GroupGrantDoc>, nowMs: number): Candidate | undefined {
  if (own && isLive(own, nowMs)) return { level, via: 'user', grant: own };
  const g = bestGroupGrant(groupGrants, nowMs);
  return g ? { level, via: 'group', grant: g } : undefined;
}

/**
 * Rule 3 (candidates): U's grants on R itself, then on each ancestor folder nearest first,
 * then on the organization; at each level U's own grant, else their groups' (rule 7). Over one
 * user's grants aligned with the query's resource slots (see resolvePermissions):
 * `grants[slot]` their own, `groups.get(slot)` the best of their groups'.
 */
function candidatesAt(slots: readonly number[], grants: ReadonlyArray<GrantDoc | undefined>, groups: ReadonlyMap<number, GroupGrantDoc>, nowMs: number): Candidate[] {
  const out: Candidate[] = [];
  const last = slots.length - 1;
  for (let i = 0; i <= last; i++) {
    const slot = slots[i]!;
    const level: Level = i === 0 ? 'resource' : i === last ? 'organization' : 'ancestor';
    const g = grants[slot];
    if (g && isLive(g, nowMs)) out.push({ level, via: 'user', grant: g });
    else {
      const group = groups.get(slot);
      if (group) out.push({ level, via: 'group', grant: group });
    }
  }
  return out;
}

const allowed = (accessType: AccessType, deciding: Deciding | undefined): Entry => ({
  accessRole: deciding?.accessRole ?? 'editor',
  accessType,
  ...(deciding && deciding.expiresAt !== null ? { expiresAt: deciding.expiresAt } : {}),
});

// Rule 5: denied entries name the resource kind and carry the effective access type.
const denied = (target: Target, error = `User does not have access to ${target.kind}`): Entry => ({
  error,
  errorCode: 'permission_denied',
  accessType: target.accessType,
});

// Rule 4: by R's effective access type. A group's candidate counts as a grant everywhere
// (rule 7): organization membership includes a group grant on the organization.
//  - public: everyone; role of the most specific grant, else editor.
//  - organizationPrivate: any candidate grant (organization membership counts).
//  - restricted: a grant on R or an ancestor folder; organization membership alone is not enough.
function decideAccess(target: Target, organization: OrganizationDoc, found: Candidate[]): Entry {
  if (isBlocked(target, organization)) return denied(target, 'Document is disabled');
  switch (target.accessType) {
    case 'public':
      return allowed('public', found[0]?.grant);
    case 'organizationPrivate':
      return found[0] ? allowed('organizationPrivate', found[0].grant) : denied(target);
    case 'restricted': {
      const specific = found.find((c) => c.level !== 'organization');
      return specific ? allowed('restricted', specific.grant) : denied(target);
    }
  }
}

// Rule 6: the organization entry: members get their role; others are denied. Membership is
// the organization-level candidate (rule 7: the user's own grant, else a group's).
function organizationEntry(candidate: Candidate | undefined): Entry {
  if (candidate) {
    const g = candidate.grant;
    return { accessRole: g.accessRole, ...(g.expiresAt !== null ? { expiresAt: g.expiresAt } : {}) };
  }
  return { error: 'User does not have access to organization', errorCode: 'permission_denied' };
}

/** semantics §1 Limits: `permissions/get` takes at most this many `userIds`. */
export const MAX_PERMISSION_USERS = 100;
/**
 * semantics §1 Limits: at most this many cells, users x (folders + documents) requested, ids
 * counted once each (the answer is keyed by id). The organization entry every user gets is
 * not a requested cell: it adds at most MAX_PERMISSION_USERS entries, bounded already.
 * Example: 100 users x (40 folders + 60 documents) = 10,000 passes; one more document makes
 * 10,100 and is refused before anything is read.
 */
export const MAX_PERMISSION_CELLS = 10_000;

/** Refuses a query beyond the limits above, before any resolution work. */
function checkPermissionsQueryBounds(q: PermissionsQuery): void {
  const users = new Set(q.userIds).size;
  if (users > MAX_PERMISSION_USERS) {
    throw invalidArgument(`data.userIds must have at most ${MAX_PERMISSION_USERS} items (permissions/get resolves at most ${MAX_PERMISSION_USERS} users per call).`);
  }
  const resources = new Set(q.folderIds ?? []).size + new Set(q.documentIds ?? []).size;
  const cells = users * resources;
  if (cells > MAX_PERMISSION_CELLS) {
    throw invalidArgument(
      `The query asks for ${cells} permission cells (${users} users x ${resources} folders and documents); ` +
        `permissions/get resolves at most ${MAX_PERMISSION_CELLS} cells per call.`,
    );
  }
}

export interface PermissionsQuery {
  organizationId: string;
  userIds: string[];
  folderIds?: string[];
  documentIds?: string[];
}

/**
 * Distinct user groups one resolution considers, all users together. Example: 10 users in
 * 100 groups each, no two alike, is 1,000 and passes; an 11th such user is refused before
 * any group's grants are read. Paged callers (queries/access.ts) resolve at most
 * MAX_GROUPS_PER_REQUEST / MAX_GROUPS_PER_USER users at once, so they never reach it.
 */
export const MAX_GROUPS_PER_REQUEST = 1_000;
/** Users whose groups always fit under MAX_GROUPS_PER_REQUEST, however many groups each is in. */
export const USERS_PER_GROUP_BOUNDED_CALL = Math.floor(MAX_GROUPS_PER_REQUEST / MAX_GROUPS_PER_USER);

/**
 * The most one resolution may cost, in lookups: a store key or row read, or one group grant
 * weighed for one user (see the top of this file and `resolutionCost`). Counted before the
 * costly part runs; past it permissions/get is INVALID_ARGUMENT naming this bound. Example:
 * 100 users x 100 documents in 19 distinct folders (120 slots) and no groups: 12,000; 100
 * users sharing 100 groups that each hold 20 grants on the 21 slots: 2,100 + 2,000 + 200,000
 * = 204,100 and is refused.
 */
export const MAX_RESOLUTION_COST = 200_000;

/** What decides a resolution's cost once its slots are known (`resolutionCost`). */
interface CostShape {
  users: number;
  /** Grants held by each distinct group (`groupGrantCounts`). */
  held: ReadonlyMap<string, number>;
  /** Each user's groups. */
  groupsOf: ReadonlyMap<string, readonly string[]>;
}

/**
 * The lookups resolution spends over `slots` slots: the users' own grant keys, each group's
 * grant reads, and each user's groups' grants weighed (at most one per group and slot).
 */
function resolutionCost(shape: CostShape, slots: number): number {
  let cost = shape.users * slots;
  for (const held of shape.held.values()) cost += groupGrantReads(held, slots);
  for (const groups of shape.groupsOf.values()) for (const g of groups) cost += Math.min(shape.held.get(g)!, slots);
  return cost;
}

export interface ResolveOptions {
  /** Yields between chunks of reads; with a named query it also ends it past its deadline (queries/cost.ts). */
  pacer?: Pacer;
  /**
   * The cost bound (MAX_RESOLUTION_COST by default); a function is asked once the cost is
   * known (a paged caller's read budget left after the reads that decide the cost).
   */
  maxCost?: number | (() => number);
  /**
   * Paged callers: resolve only the longest prefix of the requested resources (folders, then
   * documents) whose cost fits in `maxCost` instead of refusing; the others get no entry.
   * `atLeastOne`: the first resource is resolved whatever it costs (a page always moves on).
   */
  fit?: { atLeastOne: boolean };
}

type UserEntries = {
  organization: Record<string, Entry>;
  folders?: Record<string, Entry>;
  documents?: Record<string, Entry>;
  context?: { accessFields: string[] };
};

/** semantics §4a: `context.accessFields` lists at most this many fields (the hosted service's limit). */
export const MAX_REPORTED_ACCESS_FIELDS = 200;

/**
 * The sorted, unique access fields of the grants at `slots` (the first 200), or undefined
 * when there are none. Example: slots holding ["b:1", "a:2"] and ["a:2"] give ["a:2", "b:1"].
 */
function reportedAccessFields(slots: Iterable<number>, grants: ReadonlyArray<GrantDoc | undefined>): string[] | undefined {
  const all = new Set<string>();
  for (const i of slots) for (const f of grants[i]?.accessFields ?? []) all.add(f);
  return all.size === 0 ? undefined : [...all].sort().slice(0, MAX_REPORTED_ACCESS_FIELDS);
}

const isAllowed = (e: Entry): boolean => 'accessRole' in e;

/** `key(...parts)` without its closing bracket: grant keys of one user share it (src/shared/ids.ts). */
const openKey = (...parts: string[]) => JSON.stringify(parts).slice(0, -1);

/** The grant for candidate `i` of one user: grants come back in key order, missing ones skipped. */
function alignGrants(keys: readonly string[], grants: readonly GrantDoc[]): Array<GrantDoc | undefined> {
  const out = new Array<GrantDoc | undefined>(keys.length);
  let j = 0;
  for (let i = 0; i < keys.length && j < grants.length; i++) {
    if (grants[j]!._id === keys[i]) out[i] = grants[j++];
  }
  return out;
}

/** The resources of one kind asked for: ids in request order, each one's target (null: missing). */
interface Section {
  kind: 'folder' | 'document';
  ids: string[];
  targets: Array<Target | null>;
  /** How many of them are resolved: all, or with `fit` a prefix. */
  count: number;
  /** Per resolved target, its candidates' slots (null: missing). */
  slots: Array<number[] | null>;
}

const section = (kind: Section['kind'], ids: string[], targets: Array<Target | null>): Section => ({ kind, ids, targets, count: ids.length, slots: [] });

/**
 * Reads the organization, the documents and folders asked for, and makes each a target; from
 * the access index when the store has one (queries/access-index.ts), which reads what it lacks.
 */
async function readTargets(read: ReadView, apiKey: string, q: PermissionsQuery, index: OrganizationAccess | null) {
  const folderIds = [...new Set(q.folderIds ?? [])];
  const documentIds = [...new Set(q.documentIds ?? [])];
  if (!index) return readTargetsFromStore(read, apiKey, q.organizationId, folderIds, documentIds);
  const organization = await index.organization(read);
  if (!organization) throw notFound('Organization does not exist.');
  const folderTargets = await index.folderTargets(read, folderIds);
  const documentTargets = await index.documentTargets(read, documentIds);
  return { organization, folders: section('folder', folderIds, folderTargets), documents: section('document', documentIds, documentTargets) };
}

async function readTargetsFromStore(read: ReadView, apiKey: string, organizationId: string, folderIds: string[], documentIds: string[]) {
  const organization = await read.get<OrganizationDoc>(ORGANIZATIONS, organizationKey(apiKey, organizationId));
  if (!organization) throw notFound('Organization does not exist.');
  const docs = new Map<string, DocumentDoc>();
  for (const d of await read.getMany<DocumentDoc>(DOCUMENTS, documentIds.map((d) => documentKey(apiKey, organizationId, d)))) {
    docs.set(d.documentId, d);
  }
  const wantedFolders = new Set(folderIds);
  for (const d of docs.values()) if (d.folderId !== null) wantedFolders.add(d.folderId);
  const folders = new Map<string, FolderDoc>();
  for (const f of await read.getMany<FolderDoc>(FOLDERS, [...wantedFolders].map((f) => folderKey(apiKey, organizationId, f)))) {
    folders.set(f.folderId, f);
  }
  // A document whose folder is gone was deleted with it (rule 1 applies).
  const folderTargets = folderIds.map((id) => (folders.has(id) ? folderTarget(folders.get(id)!) : null));
  const documentTargets = documentIds.map((id) => {
    const d = docs.get(id);
    const live = d && (d.folderId === null || folders.has(d.folderId));
    return live ? documentTarget(d, d.folderId === null ? null : folders.get(d.folderId)!) : null;
  });
  return { organization, folders: section('folder', folderIds, folderTargets), documents: section('document', documentIds, documentTargets) };
}

/**
 * Rule 7: each user's groups, read now (leaving a group takes its grants away at once), then
 * how many grants each group holds: with those, what resolution will cost is known.
 */
async function readGroups(read: ReadView, apiKey: string, organizationId: string, userIds: readonly string[], pacer: Pacer, index: OrganizationAccess | null): Promise<CostShape> {
  const groupsOf = new Map<string, readonly string[]>();
  for (const userId of userIds) {
    groupsOf.set(userId, index ? await index.userGroups(read, userId) : await userGroupIds(read, apiKey, organizationId, userId));
    await pacer.spend(1 + groupsOf.get(userId)!.length);
  }
  const distinctGroups = new Set([...groupsOf.values()].flat());
  if (distinctGroups.size > MAX_GROUPS_PER_REQUEST) {
    throw invalidArgument(
      `The ${userIds.length} users asked for belong to ${distinctGroups.size} distinct user groups; ` +
        `permissions/get considers at most ${MAX_GROUPS_PER_REQUEST} groups per call: ask for fewer users.`,
    );
  }
  const held = index ? await heldFromIndex(index, read, distinctGroups, pacer) : await groupGrantCounts(read, apiKey, organizationId, distinctGroups, pacer);
  return { users: userIds.length, held, groupsOf };
}

/** groupGrantCounts (queries/group-grants.ts) from the access index, paced alike. */
async function heldFromIndex(index: OrganizationAccess, read: ReadView, groupIds: Iterable<string>, pacer: Pacer): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const groupId of groupIds) {
    out.set(groupId, await index.grantsHeld(read, groupId));
    await pacer.spend(1);
  }
  return out;
}

/**
 * With `fit`: how many targets (folders, then documents) make the longest prefix whose
 * distinct slots keep the cost within maxCost; the first one counts whatever it costs when
 * `atLeastOne`.
 */
function fittingPrefix(organizationId: string, targets: ReadonlyArray<Target | null>, shape: CostShape, maxCost: number, atLeastOne: boolean): number {
  const seen = new Set<string>([`organization\u0000${organizationId}`]);
  let n = 0;
  for (const t of targets) {
    if (t) for (const k of [`${t.kind}\u0000${t.id}`, ...t.ancestors.map((a) => `folder\u0000${a}`)]) seen.add(k);
    if (resolutionCost(shape, seen.size) > maxCost && !(n === 0 && atLeastOne)) break;
    n++;
  }
  return n;
}

/**
 * Every resource a grant may sit on, once: the key of (U, resource) is the same for every
 * target that names it. `slot` maps each type's ids to their positions in `resources`: one
 * map per type, keyed by the id string itself, because the ancestors of documents in one
 * folder are the same strings (one folder document), whose hash is computed once, where a
 * `type\0id` key would build and hash a new string on every lookup (hot: 10 documents 10
 * folders deep look up 120 slots).
 */
class Slots {
  readonly slot: Record<ResourceType, Map<string, number>> = { organization: new Map(), folder: new Map(), document: new Map() };
  readonly resources: Array<[ResourceType, string]> = [];
  readonly organization: number;
  private ends: string[] | null = null;

  constructor(private readonly organizationId: string) {
    this.organization = this.of('organization', organizationId);
  }

  of(t: ResourceType, id: string): number {
    const ofType = this.slot[t];
    let i = ofType.get(id);
    if (i === undefined) {
      i = this.resources.length;
      ofType.set(id, i);
      this.resources.push([t, id]);
    }
    return i;
  }

  /** Per slot, the end of its grant key: `,"type","id"]` (made once, when read from the store). */
  get suffixes(): readonly string[] {
    return (this.ends ??= this.resources.map(([t, id]) => `,${JSON.stringify(t)},${JSON.stringify(id)}]`));
  }

  /**
   * The slots above a target (its ancestors nearest first, then the organization), once per
   * ancestors array: the access index gives the documents of one folder the same array, so 10
   * documents 10 folders deep look up 10 ancestor slots instead of 100.
   */
  private readonly above = new Map<readonly string[], number[]>();

  /** A target's candidates' slots: itself, its ancestors nearest first, the organization. */
  ofTarget(t: Target | null): number[] | null {
    if (!t) return null;
    const own = this.of(t.kind, t.id);
    let above = this.above.get(t.ancestors);
    if (!above) {
      above = t.ancestors.map((a) => this.of('folder', a));
      above.push(this.organization);
      this.above.set(t.ancestors, above);
    }
    return [own, ...above];
  }
}

/**
 * The grants of the users' groups on the slots, per group, read once for the request and
 * only from the groups that hold any (queries/group-grants.ts).
 */
async function groupGrantsBySlot(read: ReadView, apiKey: string, organizationId: string, held: ReadonlyMap<string, number>, slots: Slots, nowMs: number, pacer: Pacer, index: OrganizationAccess | null) {
  const groupSlots = new Map<string, Array<[number, GroupGrantDoc]>>();
  const grants = index ? await groupGrantsFromIndex(index, read, held, slots, pacer) : await groupGrantsOnResources(read, apiKey, organizationId, held, slots.resources, pacer);
  for (const g of grants) {
    const i = slots.slot[g.resourceType].get(g.resourceId);
    if (i === undefined || !isLive(g, nowMs)) continue;
    let at = groupSlots.get(g.groupId);
    if (!at) groupSlots.set(g.groupId, (at = []));
    at.push([i, g]);
  }
  return groupSlots;
}

/** groupGrantsOnResources (queries/group-grants.ts) from the access index, paced alike. */
async function groupGrantsFromIndex(index: OrganizationAccess, read: ReadView, held: ReadonlyMap<string, number>, slots: Slots, pacer: Pacer): Promise<GroupGrantDoc[]> {
  const out: GroupGrantDoc[] = [];
  for (const [groupId, n] of held) {
    if (n === 0) continue;
    out.push(...(await index.groupGrantsOn(read, groupId, n, slots.resources)));
    await pacer.spend(groupGrantReads(n, slots.resources.length));
  }
  return out;
}

/** What one request resolves, read once and shared by every user's row. */
interface Resolution {
  read: ReadView;
  /** The access index's entries of the organization, when the store has an index. */
  index: OrganizationAccess | null;
  apiKey: string;
  organizationId: string;
  nowMs: number;
  organization: OrganizationDoc;
  pacer: Pacer;
  slots: Slots;
  groupsOf: ReadonlyMap<string, readonly string[]>;
  groupSlots: ReadonlyMap<string, Array<[number, GroupGrantDoc]>>;
  folders: Section;
  documents: Section;
}

/** The slots of `slots` whose own grant is live: the user holds those grants' access fields. */
function holdFields(fieldSlots: Set<number>, slots: readonly number[], grants: ReadonlyArray<GrantDoc | undefined>, nowMs: number): void {
  for (const i of slots) if (grants[i] && isLive(grants[i]!, nowMs)) fieldSlots.add(i);
}

/** One section's entries for one user; allowed ones add their grants' fields to `fieldSlots`. */
function sectionEntries(r: Resolution, s: Section, grants: ReadonlyArray<GrantDoc | undefined>, groups: ReadonlyMap<number, GroupGrantDoc>, fieldSlots: Set<number>): Record<string, Entry> {
  const out: Array<[string, Entry]> = [];
  for (let i = 0; i < s.count; i++) {
    const t = s.targets[i];
    const entry = t ? decideAccess(t, r.organization, candidatesAt(s.slots[i]!, grants, groups, r.nowMs)) : missingEntry(s.kind);
    if (isAllowed(entry)) holdFields(fieldSlots, s.slots[i]!, grants, r.nowMs);
    out.push([s.ids[i]!, entry]);
  }
  // fromEntries: an id such as "__proto__" stays an own property.
  return Object.fromEntries(out);
}

/** One user's grants on the slots, in slot order: one getMany of their keys. */
async function userGrantsFromStore(r: Resolution, userId: string): Promise<Array<GrantDoc | undefined>> {
  const prefix = openKey(r.apiKey, r.organizationId, userId);
  const keys = r.slots.suffixes.map((sfx) => prefix + sfx);
  return alignGrants(keys, await r.read.getMany<GrantDoc>(GRANTS, keys));
}

/** One user's row: their grants on the slots (one getMany, or the index), their groups' best per slot. */
async function userEntries(r: Resolution, userId: string): Promise<UserEntries> {
  const { slots, nowMs } = r;
  const grants = r.index ? await r.index.userGrants(r.read, userId, slots.resources) : await userGrantsFromStore(r, userId);
  // Per slot, the grant that counts among the user's groups (rule 7).
  const groups = new Map<number, GroupGrantDoc>();
  let weighed = 0;
  for (const groupId of r.groupsOf.get(userId)!) {
    for (const [i, g] of r.groupSlots.get(groupId) ?? []) {
      weighed++;
      const best = groups.get(i);
      if (!best || compareGroupGrants(g, best) < 0) groups.set(i, g);
    }
  }
  await r.pacer.spend(slots.resources.length + weighed);
  const ownOrg = grants[slots.organization];
  const orgEntry = organizationEntry(levelCandidate('organization', ownOrg, groups.has(slots.organization) ? [groups.get(slots.organization)!] : [], nowMs));
  const entries: UserEntries = { organization: { [r.organizationId]: orgEntry } };
  // The grants whose access fields the user holds on a resource they may open (see top).
  const fieldSlots = new Set<number>();
  // A member through a group only holds no fields there: group grants carry none.
  if (ownOrg && isLive(ownOrg, nowMs)) fieldSlots.add(slots.organization);
  if (r.folders.ids.length) entries.folders = sectionEntries(r, r.folders, grants, groups, fieldSlots);
  if (r.documents.ids.length) entries.documents = sectionEntries(r, r.documents, grants, groups, fieldSlots);
  const accessFields = reportedAccessFields(fieldSlots, grants);
  if (accessFields) entries.context = { accessFields };
  return entries;
}

/** Whether a resolved target of `s` is missing. */
const missesAny = (s: Section) => {
  for (let i = 0; i < s.count; i++) if (!s.targets[i]) return true;
  return false;
};

export async function resolvePermissions(read: ReadView, apiKey: string, nowMs: number, q: PermissionsQuery, options: ResolveOptions = {}) {
  checkPermissionsQueryBounds(q);
  const { organizationId } = q;
  // The live store's access index, checked against the store's change signal here, once per
  // resolution (queries/access-index.ts); null: read the store.
  const kept = accessIndexOf(read)?.organization(apiKey, organizationId) ?? null;
  const index = kept instanceof Promise ? await kept : kept;
  const { organization, folders, documents } = await readTargets(read, apiKey, q, index);
  const pacer = options.pacer ?? new Pacer();
  const userIds = [...new Set(q.userIds)];
  const shape = await readGroups(read, apiKey, organizationId, userIds, pacer, index);
  const maxCost = typeof options.maxCost === 'function' ? options.maxCost() : options.maxCost ?? MAX_RESOLUTION_COST;

  // The targets resolved: all of them, or with `fit` the longest prefix (folders, then
  // documents) whose distinct slots keep the cost within maxCost.
  if (options.fit) {
    const n = fittingPrefix(organizationId, [...folders.targets, ...documents.targets], shape, maxCost, options.fit.atLeastOne);
    folders.count = Math.min(n, folders.ids.length);
    documents.count = n - folders.count;
  }
  const slots = new Slots(organizationId);
  folders.slots = folders.targets.slice(0, folders.count).map((t) => slots.ofTarget(t));
  documents.slots = documents.targets.slice(0, documents.count).map((t) => slots.ofTarget(t));

  const cost = resolutionCost(shape, slots.resources.length);
  if (!options.fit && cost > maxCost) {
    throw invalidArgument(
      `The query would cost ${cost} lookups (${userIds.length} users x ${slots.resources.length} resources, the folders above them and the organization, ` +
        `plus the grants of ${shape.held.size} user groups weighed per user); permissions/get resolves at most ${maxCost} lookups per call: ` +
        'ask for fewer users or resources.',
    );
  }

  pacer.check();
  const groupSlots = await groupGrantsBySlot(read, apiKey, organizationId, shape.held, slots, nowMs, pacer, index);
  const r: Resolution = { read, index, apiKey, organizationId, nowMs, organization, pacer, slots, groupsOf: shape.groupsOf, groupSlots, folders, documents };
  const rows: Array<[string, UserEntries]> = [];
  for (const userId of userIds) rows.push([userId, await userEntries(r, userId)]);
  const data: Record<string, UserEntries> = Object.fromEntries(rows);
  // The hosted API's message, character for character (semantics §0).
  if (userIds.length > 0 && (missesAny(folders) || missesAny(documents))) throw notFound('Folder or document does not exist', data);
  return data;
}
