/**
 * Permission resolution (semantics §3 "Who gets in"), rule by rule.
 *
 * Cost per user: one getMany on `grants` for the keys (U, each requested resource), (U,
 * each ancestor folder of those resources), (U, organization), after one getMany for the
 * requested documents and one for their folders (whose `ancestors` lists bound the walk).
 * Nothing scans the organization: the number of lookups does not grow with its size.
 */
import { notFound } from '../src/errors.js';
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
  const push = (level: Candidate['level'], g: GrantDoc | undefined) => {
    if (g && isLive(g, nowMs)) out.push({ level, grant: g });
  };
  push('resource', grantOf(target.kind, target.id));
  for (const a of target.ancestors) push('ancestor', grantOf('folder', a));
  push('organization', grantOf('organization', organizationId));
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

export interface PermissionsQuery {
  organizationId: string;
  userIds: string[];
  folderIds?: string[];
  documentIds?: string[];
}

type UserEntries = { organization: Record<string, Entry>; folders?: Record<string, Entry>; documents?: Record<string, Entry> };

export async function resolvePermissions(read: ReadView, apiKey: string, nowMs: number, q: PermissionsQuery) {
  const { organizationId } = q;
  const organization = await read.get<OrganizationDoc>(ORGANIZATIONS, organizationKey(apiKey, organizationId));
  if (!organization) throw notFound('Organization does not exist.');
  const folderIds = [...new Set(q.folderIds ?? [])];
  const documentIds = [...new Set(q.documentIds ?? [])];
  const docs = new Map(
    (await read.getMany<DocumentDoc>(DOCUMENTS, documentIds.map((d) => documentKey(apiKey, organizationId, d)))).map((d) => [d.documentId, d]),
  );
  const wantedFolders = new Set([...folderIds, ...[...docs.values()].flatMap((d) => (d.folderId === null ? [] : [d.folderId]))]);
  const folders = new Map(
    (await read.getMany<FolderDoc>(FOLDERS, [...wantedFolders].map((f) => folderKey(apiKey, organizationId, f)))).map((f) => [f.folderId, f]),
  );
  // A document whose folder is gone was deleted with it (rule 1 applies).
  const targets = new Map<string, Target | null>();
  for (const id of folderIds) targets.set(`folder:${id}`, folders.has(id) ? folderTarget(folders.get(id)!) : null);
  for (const id of documentIds) {
    const d = docs.get(id);
    const live = d && (d.folderId === null || folders.has(d.folderId));
    targets.set(`document:${id}`, live ? documentTarget(d, d.folderId === null ? null : folders.get(d.folderId)!) : null);
  }
  const keysOf = new Set<string>();
  for (const t of targets.values()) {
    if (!t) continue;
    keysOf.add(`${t.kind}\u0000${t.id}`);
    for (const a of t.ancestors) keysOf.add(`folder\u0000${a}`);
  }
  keysOf.add(`organization\u0000${organizationId}`);
  const resourceKeys = [...keysOf].map((k) => k.split('\u0000') as [ResourceType, string]);

  let missing = false;
  const rows: Array<[string, UserEntries]> = [];
  for (const userId of new Set(q.userIds)) {
    const grants = await read.getMany<GrantDoc>(GRANTS, resourceKeys.map(([t, id]) => grantKey(apiKey, organizationId, userId, t, id)));
    const byResource = new Map(grants.map((g) => [`${g.resourceType}\u0000${g.resourceId}`, g]));
    const grantOf = (t: ResourceType, id: string) => byResource.get(`${t}\u0000${id}`);
    const entries: UserEntries = { organization: { [organizationId]: organizationEntry(grantOf('organization', organizationId), nowMs) } };
    const entryFor = (kind: 'folder' | 'document', id: string): Entry => {
      const t = targets.get(`${kind}:${id}`);
      if (!t) {
        missing = true;
        return missingEntry(kind);
      }
      return decideAccess(t, organization, candidates(t, organizationId, grantOf, nowMs));
    };
    if (folderIds.length) entries.folders = Object.fromEntries(folderIds.map((id) => [id, entryFor('folder', id)]));
    if (documentIds.length) entries.documents = Object.fromEntries(documentIds.map((id) => [id, entryFor('document', id)]));
    rows.push([userId, entries]);
  }
  const data: Record<string, UserEntries> = Object.fromEntries(rows);
  if (missing) throw notFound('One or more requested folders or documents do not exist.', data);
  return data;
}
