/**
 * Folder reads for folders/get: one folder with its subfolders down to `maxDepth` (walked
 * level by level through the parent index), or every folder of the organization in
 * creation order, paged.
 */
import { notFound } from '../src/errors.js';
import type { ReadView } from '../src/ports/read-store.js';
import { FOLDERS, folderKey, type FolderDoc } from '../projections/folders.js';
import { decodePageToken, encodePageToken } from './paging.js';

export const folderRow = (f: FolderDoc) => ({
  folderId: f.folderId,
  folderName: f.folderName,
  parentFolderId: f.parentFolderId,
  ancestors: f.ancestors,
  accessType: f.effectiveAccessType,
  inheritFromParent: f.accessType === null,
});

export async function folderSubtree(read: ReadView, apiKey: string, organizationId: string, folderId: string, maxDepth: number) {
  const top = await read.get<FolderDoc>(FOLDERS, folderKey(apiKey, organizationId, folderId));
  if (!top) throw notFound('Folder does not exist.');
  const out = [top];
  let level = [top];
  for (let depth = 1; depth <= maxDepth && level.length > 0; depth++) {
    const next: FolderDoc[] = [];
    for (const f of level) next.push(...(await read.find<FolderDoc>(FOLDERS, { apiKey, organizationId, parentFolderId: f.folderId })));
    out.push(...next);
    level = next;
  }
  return out.map(folderRow);
}

export async function foldersPage(read: ReadView, apiKey: string, organizationId: string, pageSize: number, pageToken?: string) {
  const query = { apiKey, what: 'folders', organizationId };
  const after = decodePageToken(pageToken, query);
  const docs = await read.find<FolderDoc>(FOLDERS, { apiKey, organizationId }, { sort: 'seq', after, limit: pageSize + 1 });
  const page = docs.slice(0, pageSize);
  const last = page[page.length - 1];
  return {
    rows: page.map(folderRow),
    pageToken: docs.length > pageSize && last ? encodePageToken(query, { value: last.seq, id: last._id }) : undefined,
  };
}
