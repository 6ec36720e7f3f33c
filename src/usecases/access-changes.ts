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
 * Bounds: the request's query deadline (QUERY_DEADLINE_MS, queries/cost.ts) over the whole
 * comparison, checked by the pacer between chunks of reads, so no lookup-cost bound per chunk
 * (a chunk of many groups' grants is slow, not refused); resolution in chunks of at most 100
 * users and 10,000 cells, as permissions/get. The changes are sorted (organization, resource
 * type, resource id, user id) and paged, the counts always whole. Measured (one core of a
 * shared machine, SQLite): 10,000 documents x 100 users, 2,000,000 cells resolved, about 20 s,
 * so at the default 5 s deadline such a dry run answers RESOURCE_EXHAUSTED.
 */
import type { ReadView, Doc } from '../ports/read-store.js';
import type { RecordedEvent } from '../ports/event-store.js';
import type { DecidedEvent } from '../runtime/dry-run.js';
import { ReadOverlay } from '../runtime/read-overlay.js';
import { allProjections } from '../../projections/index.js';
import { GRANTS } from '../../projections/grants.js';
import { USERS } from '../../projections/users.js';
import { GROUP_MEMBERS } from '../../projections/groups.js';
import { FOLDERS } from '../../projections/folders.js';
import { DOCUMENTS } from '../../projections/documents.js';
import { ORGANIZATIONS } from '../../projections/organizations.js';
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

const idsOf = async <T extends Doc>(views: readonly ReadView[], collection: string, filter: Record<string, string>, field: keyof T): Promise<string[]> => {
  const out = new Set<string>();
  for (const v of views) for (const d of await v.find<T>(collection, filter)) out.add(String(d[field]));
  return [...out].sort();
};

type Side = Map<string, Entry>;
const cell = (type: string, id: string, userId: string) => key(type, id, userId);

/** Every entry of `users` x `folders`/`documents` in `view`, resolved in chunks within permissions/get's limits. */
async function resolveAll(view: ReadView, apiKey: string, nowMs: number, organizationId: string, users: string[], folders: string[], documents: string[], pacer: Pacer): Promise<Side> {
  const out: Side = new Map();
  if ((await view.get(ORGANIZATIONS, key(apiKey, organizationId))) === null) return out;
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
  return out;
}

const roleOf = (e: Entry | undefined): string | undefined => (e && 'accessRole' in e ? e.accessRole : undefined);

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
  let overlay: ReadOverlay | null = null;
  const changes: AccessChange[] = [];
  const orgs = touchedOrganizations(apiKey, decided);
  if (orgs.length > 0) {
    overlay = await overlayOf(read, decided, position);
    const views = [read, overlay];
    for (const organizationId of orgs) {
      const scope = { apiKey, organizationId };
      const users = [...new Set([
        ...(await idsOf(views, USERS, { apiKey }, 'userId')),
        ...(await idsOf(views, GRANTS, scope, 'userId')),
        ...(await idsOf(views, GROUP_MEMBERS, scope, 'userId')),
      ])].sort();
      const folders = await idsOf(views, FOLDERS, scope, 'folderId');
      const documents = await idsOf(views, DOCUMENTS, scope, 'documentId');
      // Each side resolves only the resources it holds: a missing one is denied there.
      const exists = async (view: ReadView, collection: string, ids: string[], field: string) => {
        const docs = await view.find(collection, scope);
        const have = new Set(docs.map((d) => String(d[field])));
        return ids.filter((id) => have.has(id));
      };
      const before = await resolveAll(read, apiKey, nowMs, organizationId, users, await exists(read, FOLDERS, folders, 'folderId'), await exists(read, DOCUMENTS, documents, 'documentId'), pacer);
      const after = await resolveAll(overlay, apiKey, nowMs, organizationId, users, await exists(overlay, FOLDERS, folders, 'folderId'), await exists(overlay, DOCUMENTS, documents, 'documentId'), pacer);
      const resources: Array<[AccessChange['resourceType'], string]> = [['organization', organizationId], ...folders.map((f) => ['folder', f] as ['folder', string]), ...documents.map((d) => ['document', d] as ['document', string])];
      for (const [resourceType, resourceId] of resources) {
        for (const userId of users) {
          const was = roleOf(before.get(cell(resourceType, resourceId, userId)));
          const is = roleOf(after.get(cell(resourceType, resourceId, userId)));
          const change: AccessChangeKind | null = was === is ? null : was === undefined ? 'gain' : is === undefined ? 'lose' : 'role';
          if (change) changes.push({ resourceType, resourceId, organizationId, userId, change, ...(was ? { before: was } : {}), ...(is ? { after: is } : {}) });
        }
      }
    }
  }
  const order = ['organization', 'folder', 'document'];
  changes.sort((a, b) => a.organizationId.localeCompare(b.organizationId) || order.indexOf(a.resourceType) - order.indexOf(b.resourceType) || cmp(a.resourceId, b.resourceId) || cmp(a.userId, b.userId));
  const counts = { gain: 0, lose: 0, role: 0 };
  for (const c of changes) counts[c.change]++;
  const shown = changes.slice(page.from, page.from + page.size);
  if (overlay) for (const c of shown) await explainChange(overlay, apiKey, nowMs, c, pacer);
  return { counts, changes: shown, total: changes.length };
}

/**
 * `via` of a change on a folder or document that still exists after the write: the rule and
 * the grant that decide its new answer, as permissions/explain names them (queries/access.ts),
 * asked of the overlay. None for the organization's own entry or a deleted resource.
 */
async function explainChange(overlay: ReadView, apiKey: string, nowMs: number, c: AccessChange, pacer: Pacer): Promise<void> {
  if (c.resourceType === 'organization') return;
  pacer.check();
  const ref = c.resourceType === 'document' ? { documentId: c.resourceId } : { folderId: c.resourceId };
  const why = await explainAccess(overlay, apiKey, nowMs, { organizationId: c.organizationId, userId: c.userId, ...ref }).catch((error: unknown) => {
    if (error instanceof ApiError && error.status === 'NOT_FOUND') return null;
    throw error;
  });
  if (!why) return;
  const grant = why.decidedBy.candidate !== undefined ? why.candidates[why.decidedBy.candidate] : undefined;
  c.via = { rule: why.decidedBy.rule, ...(grant ? { grant } : {}) };
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
