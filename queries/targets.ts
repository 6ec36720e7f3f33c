/**
 * A resource as permission resolution sees it (semantics §3): its effective access type, its
 * ancestor folders nearest first, and whether it is disabled. Resolution (queries/permissions.ts)
 * builds these from the read models, or takes them from the access index
 * (queries/access-index.ts), which keeps them between requests: a target is shared there, so
 * nothing may change one once made.
 */
import { ORGANIZATION_DEFAULT_ACCESS, type AccessType } from '../commands/folder-tree.js';
import type { FolderDoc } from '../projections/folders.js';
import type { DocumentDoc } from '../projections/documents.js';
import { effectiveDocumentAccess } from './documents.js';

/** A resource as resolution sees it: its effective type, ancestors nearest first, disabled. */
export interface Target {
  kind: 'folder' | 'document';
  id: string;
  accessType: AccessType;
  /** Nearest first. */
  ancestors: readonly string[];
  disabled: boolean;
}

// Rule 3 (effective access type, semantics §3 "Effective access type" 1-3): a document
// uses its own type, else its folder's effective type (folders carry theirs, computed by
// projections/folders.ts from rules 1-2), else the organization default.
export function documentTarget(doc: DocumentDoc, folder: FolderDoc | null, ancestors?: readonly string[]): Target {
  return {
    kind: 'document',
    id: doc.documentId,
    accessType: effectiveDocumentAccess(doc, folder),
    ancestors: ancestors ?? documentAncestors(folder),
    disabled: doc.disabled,
  };
}

/** The ancestors of a document in `folder`, nearest first: the folder, then its own ancestors. */
export const documentAncestors = (folder: FolderDoc | null): string[] => (folder ? [folder.folderId, ...[...folder.ancestors].reverse()] : []);

export function folderTarget(folder: FolderDoc): Target {
  return {
    kind: 'folder',
    id: folder.folderId,
    accessType: folder.effectiveAccessType ?? ORGANIZATION_DEFAULT_ACCESS,
    ancestors: [...folder.ancestors].reverse(),
    disabled: false,
  };
}
