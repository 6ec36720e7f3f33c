/**
 * What a dry run's would-be events do to access (issue 38, `result.accessChanges`), exact by
 * construction: the events go through the service's own projections (projections/index.ts)
 * into an overlay of the read models (src/runtime/read-overlay.ts), and the same permission
 * resolution permissions/get runs (queries/permissions.ts) answers before (the store) and after
 * (the overlay). No rule is written twice.
 *
 * Who and what is compared, per organization a would-be event touches (its stream names it):
 * - users: every user of the API key (users/add), and every user holding a grant in the
 *   organization or belonging to one of its groups, before or after (group members one by one);
 * - resources: the organization itself, and its folders and documents, before or after. A
 *   resource missing on one side is denied there (a deletion loses access; a creation can gain).
 * Documents are resolved by class (`organizationRows`): documents whose targets
 * (queries/targets.ts: effective access type, ancestors, disabled) are the same before and the
 * same after change alike for every user who holds no grant on them (their own or a group's),
 * so one of them is resolved for every user on each side and stands for the class, and each
 * other document is resolved only for the users who may hold a grant on it. The changes of
 * the others are made only for the page answered, and so is `via` (permissions/explain, once
 * per class and user).
 * Bounds: the request's query deadline (QUERY_DEADLINE_MS, queries/cost.ts) over the whole
 * comparison, checked by the pacer between chunks of reads, so no lookup-cost bound per chunk
 * (a chunk of many groups' grants is slow, not refused); resolution in chunks of at most 100
 * users and 10,000 cells, as permissions/get. The changes are sorted (organization, resource
 * type, resource id, user id) and paged, the counts always whole. What it costs: the
 * organization's folders and documents read once per side, then per side users x (folders +
 * classes) cells and, per document holding grants, one cell per user who may hold one; one
 * explain per class and user on the page. A move of a folder of 10,000 documents with 100
 * users answers in a fraction of the deadline, whether its documents hold grants of their own
 * or not (docs/performance.md, Dry run of a large move).
 */
import type { ReadView } from '../ports/read-store.js';
import type { RecordedEvent } from '../ports/event-store.js';
import type { DecidedEvent } from '../runtime/dry-run.js';
import { ReadOverlay } from '../runtime/read-overlay.js';
import { allProjections } from '../../projections/index.js';
import { GRANTS, type GrantDoc } from '../../projections/grants.js';
import { USERS, type UserDoc } from '../../projections/users.js';
import { GROUP_MEMBERS, type MemberDoc } from '../../projections/groups.js';
import { GROUP_GRANTS, type GroupGrantDoc } from '../../projections/group-grants.js';
import { FOLDERS, type FolderDoc } from '../../projections/folders.js';
import { DOCUMENTS, type DocumentDoc } from '../../projections/documents.js';
import { ORGANIZATIONS } from '../../projections/organizations.js';
import { documentAncestors, documentTarget } from '../../queries/targets.js';
import { key } from '../shared/ids.js';
import { MAX_PERMISSION_CELLS, MAX_PERMISSION_USERS, resolvePermissions, type Entry } from '../../queries/permissions.js';
import type { Pacer } from '../../queries/cost.js';
import { explainAccess } from '../../queries/access.js';
import { ApiError } from '../shared/errors.js';

type AccessChangeKind = 'gain' | 'lose' | 'role';

interface AccessChange {
  resourceType: 'organization' | 'folder' | 'document';
  resourceId: string;
  /** The organization the resource belongs to (the organization itself for its own entry). */
  organizationId: string;
  userId: string;
  change: AccessChangeKind;
  /** The accessRole before, when allowed before. */
  before?: string;
  /** The accessRole after, when allowed after. */
  after?: string;
  /** The rule and grant that decide the new answer (permissions/explain's `decidedBy`). */
  via?: { rule: string; grant?: unknown };
}

export interface AccessChanges {
  counts: { gain: number; lose: number; role: number };
  changes: AccessChange[];
}

/** Stream categories whose second name part is an organization id (commands/*.ts stream helpers). */
const ORGANIZATION_STREAMS = new Set(['organization', 'document', 'grants', 'usergroup', 'documentMigration']);

/** The organizations of `apiKey` the events touch, from their streams' names (src/shared/ids.ts streamName). */
function touchedOrganizations(apiKey: string, events: readonly DecidedEvent[]): string[] {
  const out = new Set<string>();
  for (const e of events) {
    const dash = e.stream.indexOf('-');
    if (!ORGANIZATION_STREAMS.has(e.stream.slice(0, dash))) continue;
    const parts = JSON.parse(e.stream.slice(dash + 1)) as string[];
    if (parts[0] === apiKey && parts[1] !== undefined) out.add(parts[1]);
  }
  return [...out].sort();
}

/** The would-be events applied by every projection that handles them, in order, to an overlay of `read`. */
async function overlayOf(read: ReadView, decided: readonly DecidedEvent[], position: string): Promise<ReadOverlay> {
  const overlay = new ReadOverlay(read);
  let i = 0;
  for (const e of decided) {
    const recorded: RecordedEvent = { id: `dry-run-${i++}`, stream: e.stream, revision: e.revision, position, type: e.type, data: e.data as Record<string, unknown>, metadata: e.metadata };
    for (const p of allProjections) if (p.handles.has(e.type)) await p.apply(recorded, overlay);
  }
  return overlay;
}

type Side = Map<string, Entry>;
const cell = (type: string, id: string, userId: string) => key(type, id, userId);

/** Every entry of `users` x `folders`/`documents` in `view`, resolved in chunks within permissions/get's limits, into `out`. */
async function resolveInto(out: Side, view: ReadView, apiKey: string, nowMs: number, organizationId: string, users: readonly string[], folders: string[], documents: string[], pacer: Pacer): Promise<void> {
  if ((await view.get(ORGANIZATIONS, key(apiKey, organizationId))) === null) return;
  const resources: Array<['folder' | 'document', string]> = [...folders.map((f) => ['folder', f] as ['folder', string]), ...documents.map((d) => ['document', d] as ['document', string])];
  const userChunk = Math.min(MAX_PERMISSION_USERS, users.length || 1);
  const resourceChunk = Math.max(1, Math.floor(MAX_PERMISSION_CELLS / userChunk));
  for (let u = 0; u < users.length; u += userChunk) {
    const userIds = users.slice(u, u + userChunk);
    for (let r = 0; r === 0 || r < resources.length; r += resourceChunk) {
      const part = resources.slice(r, r + resourceChunk);
      pacer.check();
      const data = await resolvePermissions(view, apiKey, nowMs, {
        organizationId,
        userIds,
        folderIds: part.filter(([t]) => t === 'folder').map(([, id]) => id),
        documentIds: part.filter(([t]) => t === 'document').map(([, id]) => id),
      }, { pacer, maxCost: Infinity });
      for (const [userId, e] of Object.entries(data)) {
        for (const [, entry] of Object.entries(e.organization)) out.set(cell('organization', organizationId, userId), entry);
        for (const [id, entry] of Object.entries(e.folders ?? {})) out.set(cell('folder', id, userId), entry);
        for (const [id, entry] of Object.entries(e.documents ?? {})) out.set(cell('document', id, userId), entry);
      }
    }
  }
}

const roleOf = (e: Entry | undefined): string | undefined => (e && 'accessRole' in e ? e.accessRole : undefined);

/** What one side (the store before, the overlay after) holds of an organization: its folders and documents by id. */
interface Holdings {
  folders: Map<string, FolderDoc>;
  documents: Map<string, DocumentDoc>;
  /** Per folder, its documents' ancestors (queries/targets.ts) and their JSON, made once. */
  above: Map<FolderDoc, [readonly string[], string]>;
}

async function holdingsOf(view: ReadView, scope: { apiKey: string; organizationId: string }, pacer: Pacer): Promise<Holdings> {
  const folders = new Map((await view.find<FolderDoc>(FOLDERS, scope)).map((f) => [f.folderId, f]));
  const documents = new Map((await view.find<DocumentDoc>(DOCUMENTS, scope)).map((d) => [d.documentId, d]));
  await pacer.spend(folders.size + documents.size);
  return { folders, documents, above: new Map() };
}

/**
 * A document as resolution sees it on one side: its target (queries/targets.ts, as
 * permissions/get builds it) without its id, or '-' where it does not resolve (missing, or
 * its folder gone: permissions/get says does_not_exist, denied). The ancestors, the same
 * array for every document of a folder, are written out once per folder.
 */
function documentShape(side: Holdings, documentId: string): string {
  const d = side.documents.get(documentId);
  if (!d) return '-';
  const folder = d.folderId === null ? null : side.folders.get(d.folderId);
  if (folder === undefined) return '-';
  let above: [readonly string[], string] | undefined;
  if (folder) {
    above = side.above.get(folder);
    if (!above) {
      const ancestors = documentAncestors(folder);
      side.above.set(folder, (above = [ancestors, JSON.stringify(ancestors)]));
    }
  }
  const { id: _, ancestors, ...rest } = documentTarget(d, folder, above?.[0]);
  return `${above?.[1] ?? JSON.stringify(ancestors)}${JSON.stringify(rest)}`;
}

/** One user's change on one resource; the resource is said by the row that holds it. */
interface UserChange {
  userId: string;
  change: AccessChangeKind;
  before?: string;
  after?: string;
}

/** The changes of one resource, by user id, with their counts: shared by the documents of a class. */
interface ChangeList {
  changes: UserChange[];
  counts: Record<AccessChangeKind, number>;
  /**
   * A document resolved for some users only (`own`, those who may hold a grant on it or on its
   * class's representative): the class's list, whose changes it takes for every other user.
   */
  base?: ChangeList;
  own?: ReadonlySet<string>;
}

function changeList(users: readonly string[], before: Side, after: Side, type: string, id: string): ChangeList {
  const out: ChangeList = { changes: [], counts: { gain: 0, lose: 0, role: 0 } };
  for (const userId of users) {
    const was = roleOf(before.get(cell(type, id, userId)));
    const is = roleOf(after.get(cell(type, id, userId)));
    if (was === is) continue;
    const change: AccessChangeKind = was === undefined ? 'gain' : is === undefined ? 'lose' : 'role';
    out.changes.push({ userId, change, ...(was ? { before: was } : {}), ...(is ? { after: is } : {}) });
    out.counts[change]++;
  }
  return out;
}

/** `base`'s changes for every user but `users`, and the document's own changes for those. */
function patchedList(base: ChangeList, users: readonly string[], before: Side, after: Side, id: string): ChangeList {
  const own = new Set(users);
  const mine = changeList(users, before, after, 'document', id);
  const changes = [...base.changes.filter((c) => !own.has(c.userId)), ...mine.changes].sort((a, b) => cmp(a.userId, b.userId));
  const counts = { gain: 0, lose: 0, role: 0 };
  for (const c of changes) counts[c.change]++;
  return { changes, counts, base, own };
}

/** A resource in the answer's order, and its changes. */
type Row = [AccessChange['resourceType'], string, ChangeList];

/**
 * The users compared in an organization (the API key's users, its grant holders and group
 * members, on either side), and per document the users who may hold a grant on it: the user
 * of each grant on it, and each member of a group granted on it, on the same side; live or
 * not (an expired grant counts too, to be safe).
 */
async function usersAndHolders(views: readonly ReadView[], apiKey: string, organizationId: string) {
  const scope = { apiKey, organizationId };
  const users = new Set<string>();
  const holders = new Map<string, Set<string>>();
  const hold = (documentId: string, userId: string) => {
    let h = holders.get(documentId);
    if (!h) holders.set(documentId, (h = new Set()));
    h.add(userId);
  };
  for (const v of views) {
    for (const u of await v.find<UserDoc>(USERS, { apiKey })) users.add(u.userId);
    for (const g of await v.find<GrantDoc>(GRANTS, scope)) {
      users.add(g.userId);
      if (g.resourceType === 'document') hold(g.resourceId, g.userId);
    }
    const members = new Map<string, string[]>();
    for (const m of await v.find<MemberDoc>(GROUP_MEMBERS, scope)) {
      users.add(m.userId);
      const of = members.get(m.groupId);
      if (of) of.push(m.userId);
      else members.set(m.groupId, [m.userId]);
    }
    for (const g of await v.find<GroupGrantDoc>(GROUP_GRANTS, { ...scope, resourceType: 'document' })) {
      for (const userId of members.get(g.groupId) ?? []) hold(g.resourceId, userId);
    }
  }
  return { users: [...users].sort(), holders };
}

/**
 * The documents in classes: documents whose targets are equal before and equal after. Per
 * class a representative (its first document no one may hold a grant on, else its first),
 * resolved for every user; and per other document, the users it must be resolved for itself:
 * those who may hold a grant on it or on the representative (none for most).
 */
function classesOf(documents: readonly string[], before: Holdings, after: Holdings, holders: ReadonlyMap<string, ReadonlySet<string>>) {
  const classes = new Map<string, string[]>();
  for (const id of documents) {
    const shape = `${documentShape(before, id)}\n${documentShape(after, id)}`;
    const members = classes.get(shape);
    if (members) members.push(id);
    else classes.set(shape, [id]);
  }
  const representative = new Map<string, string>();
  const reps: string[] = [];
  const own = new Map<string, string[]>();
  for (const members of classes.values()) {
    const rep = members.find((id) => !holders.has(id)) ?? members[0]!;
    reps.push(rep);
    for (const id of members) {
      representative.set(id, rep);
      if (id === rep) continue;
      const users = new Set([...(holders.get(id) ?? []), ...(holders.get(rep) ?? [])]);
      if (users.size > 0) own.set(id, [...users].sort());
    }
  }
  return { representative, reps, own };
}

/**
 * The resources of one organization in the answer's order (the organization, its folders,
 * its documents, ids in code-unit order), each with its changes.
 *
 * Documents are resolved by class: a document is decided, for one user, by its target alone
 * (its effective access type, its ancestors, disabled), by that user's and their groups'
 * grants on those ancestors and the organization, and by their grants on the document itself
 * (semantics §3; queries/permissions.ts `candidatesAt`, `decideAccess`). So documents whose
 * targets are equal before and equal after change alike for every user who holds no grant on
 * them: one of them is resolved for every user, by permissions/get's own code, on each side,
 * and stands for the others; each other document is resolved only for the users who may hold
 * a grant on it (or on the representative). A move of a folder of 10,000 documents resolves a
 * handful of documents for every user, and the documents shared with someone for those only.
 */
async function organizationRows(read: ReadView, overlay: ReadView, apiKey: string, nowMs: number, organizationId: string, pacer: Pacer): Promise<Row[]> {
  const scope = { apiKey, organizationId };
  const { users, holders } = await usersAndHolders([read, overlay], apiKey, organizationId);
  const before = await holdingsOf(read, scope, pacer);
  const after = await holdingsOf(overlay, scope, pacer);
  const folders = [...new Set([...before.folders.keys(), ...after.folders.keys()])].sort(cmp);
  const documents = [...new Set([...before.documents.keys(), ...after.documents.keys()])].sort(cmp);
  const { representative, reps, own } = classesOf(documents, before, after, holders);

  // Each side resolves only the resources it holds: a missing one is denied there.
  const resolvable = (side: Holdings, ids: readonly string[]) => ids.filter((id) => documentShape(side, id) !== '-');
  const was: Side = new Map();
  const is: Side = new Map();
  await resolveInto(was, read, apiKey, nowMs, organizationId, users, [...before.folders.keys()], resolvable(before, reps), pacer);
  await resolveInto(is, overlay, apiKey, nowMs, organizationId, users, [...after.folders.keys()], resolvable(after, reps), pacer);
  // The other documents for their own users: per user, every document they are needed on.
  const byUser = new Map<string, string[]>();
  for (const [id, us] of own) {
    for (const userId of us) {
      const ids = byUser.get(userId);
      if (ids) ids.push(id);
      else byUser.set(userId, [id]);
    }
  }
  for (const [userId, ids] of byUser) {
    for (const [out, view, side] of [[was, read, before], [is, overlay, after]] as const) {
      const on = resolvable(side, ids);
      if (on.length > 0) await resolveInto(out, view, apiKey, nowMs, organizationId, [userId], [], on, pacer);
    }
  }
  const lists = new Map<string, ChangeList>();
  for (const id of reps) lists.set(id, changeList(users, was, is, 'document', id));
  const listOf = (id: string) => {
    const base = lists.get(representative.get(id)!)!;
    const us = own.get(id);
    return us ? patchedList(base, us, was, is, id) : base;
  };
  return [
    ['organization', organizationId, changeList(users, was, is, 'organization', organizationId)],
    ...folders.map((id): Row => ['folder', id, changeList(users, was, is, 'folder', id)]),
    ...documents.map((id): Row => ['document', id, listOf(id)]),
  ];
}

/** The access changes the would-be events `decided` make, read from `read` before and from its overlay after. */
export async function predictAccessChanges(
  read: ReadView,
  apiKey: string,
  nowMs: number,
  decided: readonly DecidedEvent[],
  position: string,
  pacer: Pacer,
  page: { from: number; size: number },
): Promise<AccessChanges & { total: number }> {
  const counts = { gain: 0, lose: 0, role: 0 };
  const shown: AccessChange[] = [];
  // Per change list (one resource, or one class of documents) and user, the page's `via`.
  const vias = new Map<ChangeList, Map<string, Promise<AccessChange['via']>>>();
  const viaOf = (c: AccessChange, changes: ChangeList) => {
    // A user a document was not resolved for shares its class's.
    const list = changes.base && !changes.own!.has(c.userId) ? changes.base : changes;
    let byUser = vias.get(list);
    if (!byUser) vias.set(list, (byUser = new Map()));
    let via = byUser.get(c.userId);
    if (!via) byUser.set(c.userId, (via = explainChange(overlay!, apiKey, nowMs, c, pacer)));
    return via;
  };
  const pending: Array<[AccessChange, ChangeList]> = [];
  let total = 0;
  const orgs = touchedOrganizations(apiKey, decided).sort((a, b) => a.localeCompare(b) || cmp(a, b));
  if (orgs.length === 0) return { counts, changes: shown, total };
  const overlay = await overlayOf(read, decided, position);
  for (const organizationId of orgs) {
    for (const [resourceType, resourceId, list] of await organizationRows(read, overlay, apiKey, nowMs, organizationId, pacer)) {
      for (const k of ['gain', 'lose', 'role'] as const) counts[k] += list.counts[k];
      // Only the page's changes are made, from the running offset of this resource's first.
      const n = list.changes.length;
      const from = Math.max(0, page.from - total);
      const to = Math.min(n, page.from + page.size - total);
      for (let i = from; i < to; i++) pending.push([{ resourceType, resourceId, organizationId, ...list.changes[i]! }, list]);
      total += n;
    }
  }
  // One after the other (the pacer's deadline between them); a class's documents share theirs.
  for (const [c, list] of pending) {
    const via = await viaOf(c, list);
    shown.push(via ? { ...c, via } : c);
  }
  return { counts, changes: shown, total };
}

/**
 * `via` of a change on a folder or document that still exists after the write: the rule and
 * the grant that decide its new answer, as permissions/explain names them (queries/access.ts),
 * asked of the overlay. None for the organization's own entry or a deleted resource. The
 * documents of a class share it for every user who holds no grant on them: what explain reads
 * of one (its target, and that user's grants on its ancestors and the organization, none on
 * itself) is the same for all.
 */
async function explainChange(overlay: ReadView, apiKey: string, nowMs: number, c: AccessChange, pacer: Pacer): Promise<AccessChange['via']> {
  if (c.resourceType === 'organization') return undefined;
  pacer.check();
  const ref = c.resourceType === 'document' ? { documentId: c.resourceId } : { folderId: c.resourceId };
  const why = await explainAccess(overlay, apiKey, nowMs, { organizationId: c.organizationId, userId: c.userId, ...ref }).catch((error: unknown) => {
    if (error instanceof ApiError && error.status === 'NOT_FOUND') return null;
    throw error;
  });
  if (!why) return undefined;
  const grant = why.decidedBy.candidate !== undefined ? why.candidates[why.decidedBy.candidate] : undefined;
  return { rule: why.decidedBy.rule, ...(grant ? { grant } : {}) };
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
