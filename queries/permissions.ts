/**
 * Permission resolution (semantics §3 "Who gets in"), rule by rule.
 *
 * Cost per user: one getMany on `grants` for the keys (U, each requested resource), (U,
 * each ancestor folder of those resources), (U, organization), after one getMany for the
 * requested documents and one for their folders (whose `ancestors` lists bound the walk).
 * Nothing scans the organization: the number of lookups does not grow with its size.
 *
 * Access context (semantics §4a): each user's row also gets `context.accessFields`, the
 * access fields of the live grants that let the user into a requested resource (a grant on
 * the resource, an ancestor folder or the organization: fields hold below their resource,
 * as grants do) and of the organization grant when the user is a member. Each grant's
 * fields are read once however many resources it serves, and a user's live grants in one
 * organization hold at most 2,000 (commands/grant.ts), so this adds at most 2,000 strings
 * per user to the cost above.
 */
import { invalidArgument, notFound } from '../src/errors.js';
import type { ReadView } from '../src/ports/read-store.js';
import { ORGANIZATION_DEFAULT_ACCESS, type AccessType } from '../commands/folder-tree.js';
import { isLive, type AccessRole, type ResourceType } from '../commands/grant.js';
import { ORGANIZATIONS, organizationKey, type OrganizationDoc } from '../projections/organizations.js';
import { FOLDERS, folderKey, type FolderDoc } from '../projections/folders.js';
import { DOCUMENTS, documentKey, type DocumentDoc } from '../projections/documents.js';
import { GRANTS, grantKey, type GrantDoc } from '../projections/grants.js';
import { effectiveDocumentAccess } from './documents.js';

export type Entry =
  | { accessRole: AccessRole; accessType?: AccessType; expiresAt?: number }
  | { error: string; errorCode: 'permission_denied'; accessType?: AccessType }
  | { error: string; errorCode: 'does_not_exist' };

/** A resource as resolution sees it: its effective type, ancestors nearest first, disabled. */
export interface Target {
  kind: 'folder' | 'document';
  id: string;
  accessType: AccessType;
  /** Nearest first. */
  ancestors: string[];
  disabled: boolean;
}

export interface Candidate {
  level: 'resource' | 'ancestor' | 'organization';
  grant: GrantDoc;
}

// Rule 3 (effective access type, semantics §3 "Effective access type" 1-3): a document
// uses its own type, else its folder's effective type (folders carry theirs, computed by
// projections/folders.ts from rules 1-2), else the organization default.
export function documentTarget(doc: DocumentDoc, folder: FolderDoc | null): Target {
  return {
    kind: 'document',
    id: doc.documentId,
    accessType: effectiveDocumentAccess(doc, folder),
    ancestors: folder ? [folder.folderId, ...[...folder.ancestors].reverse()] : [],
    disabled: doc.disabled,
  };
}

export function folderTarget(folder: FolderDoc): Target {
  return {
    kind: 'folder',
    id: folder.folderId,
    accessType: folder.effectiveAccessType ?? ORGANIZATION_DEFAULT_ACCESS,
    ancestors: [...folder.ancestors].reverse(),
    disabled: false,
  };
}

// Rule 1: R does not exist: its entry says so, and the whole query fails (NOT_FOUND).
export const missingEntry = (kind: 'folder' | 'document'): Entry => ({
  error: kind === 'folder' ? 'Folder does not exist' : 'Document does not exist',
  errorCode: 'does_not_exist',
});

// Rule 2: a disabled document, or any document of a disabled organization, is denied.
export const isBlocked = (target: Target, organization: OrganizationDoc) =>
  target.kind === 'document' && (target.disabled || organization.disabled);

// Rule 3 (candidates): U's grants on R itself, then on each ancestor folder nearest first,
// then on the organization. An expired grant counts as absent.
export function candidates(target: Target, organizationId: string, grantOf: (t: ResourceType, id: string) => GrantDoc | undefined, nowMs: number): Candidate[] {
  const out: Candidate[] = [];
  let g = grantOf(target.kind, target.id);
  if (g && isLive(g, nowMs)) out.push({ level: 'resource', grant: g });
  for (const a of target.ancestors) {
    g = grantOf('folder', a);
    if (g && isLive(g, nowMs)) out.push({ level: 'ancestor', grant: g });
  }
  g = grantOf('organization', organizationId);
  if (g && isLive(g, nowMs)) out.push({ level: 'organization', grant: g });
  return out;
}

/** `candidates` over one user's grants aligned with the query's resource slots (see resolvePermissions). */
function candidatesAt(slots: readonly number[], grants: ReadonlyArray<GrantDoc | undefined>, nowMs: number): Candidate[] {
  const out: Candidate[] = [];
  const last = slots.length - 1;
  for (let i = 0; i <= last; i++) {
    const g = grants[slots[i]!];
    if (g && isLive(g, nowMs)) out.push({ level: i === 0 ? 'resource' : i === last ? 'organization' : 'ancestor', grant: g });
  }
  return out;
}

const allowed = (accessType: AccessType, deciding: GrantDoc | undefined): Entry => ({
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

// Rule 4: by R's effective access type.
//  - public: everyone; role of the most specific grant, else editor.
//  - organizationPrivate: any candidate grant (organization membership counts).
//  - restricted: a grant on R or an ancestor folder; organization membership alone is not enough.
export function decideAccess(target: Target, organization: OrganizationDoc, found: Candidate[]): Entry {
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

// Rule 6: the organization entry: members get their role; others are denied.
export function organizationEntry(grant: GrantDoc | undefined, nowMs: number): Entry {
  if (grant && isLive(grant, nowMs)) {
    return { accessRole: grant.accessRole, ...(grant.expiresAt !== null ? { expiresAt: grant.expiresAt } : {}) };
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
export function checkPermissionsQueryBounds(q: PermissionsQuery): void {
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
export function reportedAccessFields(slots: Iterable<number>, grants: ReadonlyArray<GrantDoc | undefined>): string[] | undefined {
  const all = new Set<string>();
  for (const i of slots) for (const f of grants[i]?.accessFields ?? []) all.add(f);
  return all.size === 0 ? undefined : [...all].sort().slice(0, MAX_REPORTED_ACCESS_FIELDS);
}

const isAllowed = (e: Entry): boolean => 'accessRole' in e;

/** `key(...parts)` without its closing bracket: grant keys of one user share it (src/ids.ts). */
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

export async function resolvePermissions(read: ReadView, apiKey: string, nowMs: number, q: PermissionsQuery) {
  checkPermissionsQueryBounds(q);
  const { organizationId } = q;
  const organization = await read.get<OrganizationDoc>(ORGANIZATIONS, organizationKey(apiKey, organizationId));
  if (!organization) throw notFound('Organization does not exist.');
  const folderIds = [...new Set(q.folderIds ?? [])];
  const documentIds = [...new Set(q.documentIds ?? [])];
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

  // Every resource a grant may sit on, once: the key of (U, resource) is the same for every
  // target that names it. `slot` maps `type\0id` to its position in `suffixes`.
  const slot = new Map<string, number>();
  const suffixes: string[] = [];
  const slotOf = (t: ResourceType, id: string) => {
    const k = `${t}\u0000${id}`;
    let i = slot.get(k);
    if (i === undefined) {
      i = suffixes.length;
      slot.set(k, i);
      suffixes.push(`,${JSON.stringify(t)},${JSON.stringify(id)}]`);
    }
    return i;
  };
  // Per target, its candidates' slots: itself, its ancestors nearest first, the organization.
  const slotsOf = (t: Target | null) => (t ? [slotOf(t.kind, t.id), ...t.ancestors.map((a) => slotOf('folder', a)), slotOf('organization', organizationId)] : null);
  const folderSlots = folderTargets.map(slotsOf);
  const documentSlots = documentTargets.map(slotsOf);
  const organizationSlot = slotOf('organization', organizationId);

  let missing = false;
  const rows: Array<[string, UserEntries]> = [];
  for (const userId of new Set(q.userIds)) {
    const prefix = openKey(apiKey, organizationId, userId);
    const keys = suffixes.map((sfx) => prefix + sfx);
    const grants = alignGrants(keys, await read.getMany<GrantDoc>(GRANTS, keys));
    const orgEntry = organizationEntry(grants[organizationSlot], nowMs);
    const entries: UserEntries = { organization: { [organizationId]: orgEntry } };
    // The grants whose access fields the user holds on a resource they may open (see top).
    const fieldSlots = new Set<number>();
    const holds = (slots: readonly number[]) => {
      for (const i of slots) if (grants[i] && isLive(grants[i]!, nowMs)) fieldSlots.add(i);
    };
    if (isAllowed(orgEntry)) fieldSlots.add(organizationSlot);
    if (folderIds.length) {
      const out: Array<[string, Entry]> = [];
      for (let i = 0; i < folderIds.length; i++) {
        const t = folderTargets[i];
        if (!t) missing = true;
        const entry = t ? decideAccess(t, organization, candidatesAt(folderSlots[i]!, grants, nowMs)) : missingEntry('folder');
        if (isAllowed(entry)) holds(folderSlots[i]!);
        out.push([folderIds[i]!, entry]);
      }
      // fromEntries: an id such as "__proto__" stays an own property.
      entries.folders = Object.fromEntries(out);
    }
    if (documentIds.length) {
      const out: Array<[string, Entry]> = [];
      for (let i = 0; i < documentIds.length; i++) {
        const t = documentTargets[i];
        if (!t) missing = true;
        const entry = t ? decideAccess(t, organization, candidatesAt(documentSlots[i]!, grants, nowMs)) : missingEntry('document');
        if (isAllowed(entry)) holds(documentSlots[i]!);
        out.push([documentIds[i]!, entry]);
      }
      // fromEntries: an id such as "__proto__" stays an own property.
      entries.documents = Object.fromEntries(out);
    }
    const accessFields = reportedAccessFields(fieldSlots, grants);
    if (accessFields) entries.context = { accessFields };
    rows.push([userId, entries]);
  }
  const data: Record<string, UserEntries> = Object.fromEntries(rows);
  // The hosted API's message, character for character (semantics §0).
  if (missing) throw notFound('Folder or document does not exist', data);
  return data;
}
