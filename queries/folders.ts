/**
 * Folder reads for folders/get: one folder with its subfolders nested down to `maxDepth`
 * (walked level by level through the parent index), or every folder of the organization in
 * creation order, paged.
 *
 * Rows have the hosted API's shape (semantics §0; rest-apis/v2/folders/get-folders): a
 * folder at the organization root says `parentFolderId: "root"`, and `ancestors` starts with
 * `"root"` (`["root", "folder1"]` for a folder inside folder1). The read model keeps the root
 * implicit (null parent, ancestors without it); only this rendering names it.
 */
import { notFound } from '../src/errors.js';
import type { ReadView } from '../src/ports/read-store.js';
import { FOLDERS, folderKey, type FolderDoc } from '../projections/folders.js';
import { decodePageToken, encodePageToken } from './paging.js';

/** The name the hosted API gives the organization root in `parentFolderId` and `ancestors`. */
export const ROOT = 'root';

export interface FolderRow {
  folderId: string;
  folderName: string;
  organizationId: string;
  parentFolderId: string;
  apiKey: string;
  createdAt: number;
  lastUpdated: number;
  ancestors: string[];
  /** The effective type (inherited when the folder has none of its own). */
  accessType: FolderDoc['effectiveAccessType'];
  inheritAccessFromParent: boolean;
  subFolders?: FolderRow[];
}

export const folderRow = (f: FolderDoc): FolderRow => ({
  folderId: f.folderId,
  folderName: f.folderName,
  organizationId: f.organizationId,
  parentFolderId: f.parentFolderId ?? ROOT,
  apiKey: f.apiKey,
  createdAt: f.createdAt,
  lastUpdated: f.lastUpdated ?? f.createdAt,
  ancestors: [ROOT, ...f.ancestors],
  accessType: f.effectiveAccessType,
  inheritAccessFromParent: f.accessType === null,
});

const bySeq = (a: FolderDoc, b: FolderDoc) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0);

/**
 * One row: the folder, with `subFolders` nested `maxDepth` levels down (1: its children
 * only, the hosted default). A folder above that depth carries `subFolders` even when empty
 * (`[]`: it has none); a folder at that depth carries no `subFolders` key (not looked at),
 * as in the hosted examples. Children in creation order.
 */
export async function folderSubtree(read: ReadView, apiKey: string, organizationId: string, folderId: string, maxDepth: number): Promise<FolderRow[]> {
  const top = await read.get<FolderDoc>(FOLDERS, folderKey(apiKey, organizationId, folderId));
  if (!top) throw notFound('Folder does not exist.');
  const children = new Map<string, FolderDoc[]>();
  let level = [top];
  for (let depth = 1; depth <= maxDepth && level.length > 0; depth++) {
    const next: FolderDoc[] = [];
    for (const f of level) {
      const found = (await read.find<FolderDoc>(FOLDERS, { apiKey, organizationId, parentFolderId: f.folderId })).sort(bySeq);
      children.set(f.folderId, found);
      next.push(...found);
    }
    level = next;
  }
  const render = (f: FolderDoc, depth: number): FolderRow => {
    const row = folderRow(f);
    if (depth < maxDepth) row.subFolders = (children.get(f.folderId) ?? []).map((c) => render(c, depth + 1));
    return row;
  };
  return [render(top, 0)];
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
