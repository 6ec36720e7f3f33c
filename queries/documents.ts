/**
 * Document reads: documents/get pages and the documents' effective access type.
 *
 * A document's effective type is its own, else its folder's effective type, else the
 * organization default (semantics §3 rule 3). A document whose folder no longer exists is
 * gone (its folder was deleted; the deletion cascade may still be appending its
 * DocumentDeleted), so every read here skips it.
 */
import { notFound } from '../src/shared/errors.js';
import type { Filter, ReadView } from '../src/ports/read-store.js';
import { ORGANIZATION_DEFAULT_ACCESS, type AccessType } from '../commands/folder-tree.js';
import { DOCUMENTS, documentKey, type DocumentDoc } from '../projections/documents.js';
import { FOLDERS, folderKey, type FolderDoc } from '../projections/folders.js';
import { decodePageToken, encodePageToken } from './paging.js';

/** semantics §3 rule 3. */
export const effectiveDocumentAccess = (doc: DocumentDoc, folder: FolderDoc | null): AccessType =>
  doc.accessType ?? folder?.effectiveAccessType ?? ORGANIZATION_DEFAULT_ACCESS;

/** The folders of `docs`, by folder id (one getMany). */
async function foldersOf(read: ReadView, apiKey: string, organizationId: string, docs: readonly DocumentDoc[]) {
  const ids = [...new Set(docs.map((d) => d.folderId).filter((f): f is string => f !== null))];
  const folders = await read.getMany<FolderDoc>(FOLDERS, ids.map((f) => folderKey(apiKey, organizationId, f)));
  return new Map(folders.map((f) => [f.folderId, f]));
}

const isLive = (doc: DocumentDoc, folders: Map<string, FolderDoc>) => doc.folderId === null || folders.has(doc.folderId);

/** The live documents among `documentIds`, by id. */
export async function liveDocuments(read: ReadView, apiKey: string, organizationId: string, documentIds: readonly string[]) {
  const docs = await read.getMany<DocumentDoc>(DOCUMENTS, documentIds.map((d) => documentKey(apiKey, organizationId, d)));
  const folders = await foldersOf(read, apiKey, organizationId, docs);
  return { docs: new Map(docs.filter((d) => isLive(d, folders)).map((d) => [d.documentId, d])), folders };
}

export interface DocumentsQuery {
  organizationId: string;
  documentIds?: string[];
  folderId?: string;
  pageSize: number;
  pageToken?: string;
}

const bySeq = (a: DocumentDoc, b: DocumentDoc) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0);

export async function documentsPage(read: ReadView, apiKey: string, q: DocumentsQuery) {
  const { organizationId, folderId, pageSize } = q;
  const query = { apiKey, what: 'documents', organizationId, documentIds: q.documentIds ?? null, folderId: folderId ?? null };
  const after = decodePageToken(q.pageToken, query);
  if (folderId !== undefined && !(await read.get(FOLDERS, folderKey(apiKey, organizationId, folderId)))) {
    throw notFound('Folder does not exist.');
  }
  let docs: DocumentDoc[];
  if (q.documentIds) {
    const keys = [...new Set(q.documentIds)].map((d) => documentKey(apiKey, organizationId, d));
    docs = (await read.getMany<DocumentDoc>(DOCUMENTS, keys))
      .filter((d) => folderId === undefined || d.folderId === folderId)
      .sort(bySeq)
      .filter((d) => !after || d.seq > String(after.value))
      .slice(0, pageSize + 1);
  } else {
    const filter: Filter = folderId === undefined ? { apiKey, organizationId } : { apiKey, organizationId, folderId };
    docs = await read.find<DocumentDoc>(DOCUMENTS, filter, { sort: 'seq', after, limit: pageSize + 1 });
  }
  const page = docs.slice(0, pageSize);
  const folders = await foldersOf(read, apiKey, organizationId, page);
  const rows = page.filter((d) => isLive(d, folders)).map((d) => ({
    id: d.documentId,
    documentName: d.documentName,
    disabled: d.disabled,
    accessType: effectiveDocumentAccess(d, d.folderId === null ? null : folders.get(d.folderId)!),
    ...(d.folderId !== null ? { folderId: d.folderId } : {}),
  }));
  const last = page[page.length - 1];
  const pageToken = docs.length > pageSize && last ? encodePageToken(query, { value: last.seq, id: last._id }) : undefined;
  return { rows, pageToken };
}

