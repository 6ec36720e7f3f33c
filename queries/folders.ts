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
import { invalidArgument, notFound } from '../src/shared/errors.js';
import type { ReadView } from '../src/ports/read-store.js';
import { FOLDERS, folderKey, type FolderDoc } from '../projections/folders.js';
import { decodePageToken, encodePageToken } from './paging.js';

/** The name the hosted API gives the organization root in `parentFolderId` and `ancestors`. */
const ROOT = 'root';

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

const folderRow = (f: FolderDoc): FolderRow => ({
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

/**
 * The most folders one folders/get with `folderId` answers, the folder itself included. The
 * nested answer is the hosted API's and has no paging, so a subtree past it is refused
 * (INVALID_ARGUMENT naming `data.maxDepth`) rather than cut short: a client shown part of a
 * tree cannot tell it from the whole. The flat list (no `folderId`) pages any number.
 */
export const MAX_SUBTREE_FOLDERS = 1000;

/**
 * One row: the folder, with `subFolders` nested `maxDepth` levels down (1: its children
 * only, the hosted default). A folder above that depth carries `subFolders` even when empty
 * (`[]`: it has none); a folder at that depth carries no `subFolders` key (not looked at),
 * as in the hosted examples. Children in creation order.
 *
 * Reads at most MAX_SUBTREE_FOLDERS + 1 folders whatever the tree: each level's lookups ask
 * for no more than the room left. Example: a folder with 5,000 children and `maxDepth: 1`
 * reads 1,001 of them and is refused.
 */
export async function folderSubtree(read: ReadView, apiKey: string, organizationId: string, folderId: string, maxDepth: number): Promise<FolderRow[]> {
  const top = await read.get<FolderDoc>(FOLDERS, folderKey(apiKey, organizationId, folderId));
  if (!top) throw notFound('Folder does not exist.');
  const children = new Map<string, FolderDoc[]>();
  let level = [top];
  let count = 1;
  for (let depth = 1; depth <= maxDepth && level.length > 0; depth++) {
    const next: FolderDoc[] = [];
    for (const f of level) {
      const room = MAX_SUBTREE_FOLDERS - count;
      const found = await read.find<FolderDoc>(FOLDERS, { apiKey, organizationId, parentFolderId: f.folderId }, { sort: 'seq', limit: room + 1 });
      count += found.length;
      if (count > MAX_SUBTREE_FOLDERS) {
        throw invalidArgument(
          `Folder ${JSON.stringify(folderId)} has more than ${MAX_SUBTREE_FOLDERS} folders down to data.maxDepth ${maxDepth} (itself included); ` +
            `folders/get answers at most ${MAX_SUBTREE_FOLDERS} nested. Ask with a smaller data.maxDepth, or without data.folderId for the organization's folders flat, paged with pageSize and pageToken.`,
        );
      }
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
