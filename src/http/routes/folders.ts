/**
 * Folders (spec: folders/add|update|delete, folders/access/update; companion folders/get).
 * Every folders batch is ONE command on the organization's stream (commands/folder-tree.ts):
 * the tree is the consistency boundary, and one command per batch means one append instead
 * of a retry storm of 1000 commands on the same stream.
 *
 * Top-level messages are the hosted API's, character for character (semantics §0;
 * rest-apis/v2/folders/*), including where they differ between two examples of one page.
 * What each route does is src/usecases/folders.ts.
 */
import { z } from 'zod';
import { DEFAULT_FOLDER_MAX_DEPTH } from '../../../commands/folder-tree.js';
import { MAX_SUBTREE_FOLDERS } from '../../../queries/folders.js';
import { addFolders, deleteFolder, getFolders, setFolderAccess, updateFolders } from '../../usecases/folders.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id, ids, items, text } from '../validation.js';
import { accessEcho, accessType, bareOutcome, folderRowSchema, idOutcome, outcomesById, PAGE_SIZE_DOC, pageSize, pageToken } from './domain.js';

const parent = () => id().nullable().optional();

const BATCH = 'The batch is decided in order, each item against the tree the previous items left, and appended at once. ' +
  'An item that cannot be applied fails alone; `data` is keyed by folderId, each id once (its first occurrence). ' +
  `A folder that would land deeper than the folder depth limit (${DEFAULT_FOLDER_MAX_DEPTH} levels unless the operator sets FOLDER_MAX_DEPTH) ` +
  'refuses the whole batch with INVALID_ARGUMENT, nothing written. An organization that does not exist is NOT_FOUND.';

const add = defineRoute({
  path: '/v2/organizations/folders/add',
  tag: 'Folders',
  doc: {
    summary: 'Add folders',
    description: `${BATCH} With \`createOrganization: true\` a missing organization is created first. ` +
      'A folder id that exists fails its item ("Folder already exists"), as does an unknown `parentFolderId`. ' +
      '`parentFolderId` absent, null or `"root"`: the folder is at the organization root. Without `accessType` the folder inherits its parent\'s.',
    example: { organizationId: 'yourOrganizationId', folders: [{ folderId: 'folder2025', folderName: 'folder2025', accessType: 'restricted' }] },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.object({
    organizationId: id(),
    createOrganization: z.boolean().optional(),
    folders: items(z.object({ folderId: id(), folderName: text(1024).optional(), parentFolderId: parent(), accessType: accessType().optional() })),
  }),
  response: outcomesById(idOutcome),
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => ({ message: 'Folder created successfully.', data: await addFolders(ctx, data) }),
});

const update = defineRoute({
  path: '/v2/organizations/folders/update',
  tag: 'Folders',
  doc: {
    summary: 'Rename or move folders',
    description: `${BATCH} A new \`parentFolderId\` moves the folder with its whole subtree (null or \`"root"\`: to the organization root), ` +
      'and everything under it takes its new effective access type. A folder that does not exist, an unknown parent, or a move under ' +
      'the folder itself or one of its subfolders (a cycle) fails its item.',
    example: { organizationId: 'yourOrganizationId', folders: [{ folderId: 'yourFolderId', folderName: 'yourFolderName', parentFolderId: 'yourParentFolderId' }] },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.object({
    organizationId: id(),
    folders: items(z.object({ folderId: id(), folderName: text(1024).optional(), parentFolderId: parent() })),
  }),
  response: outcomesById(idOutcome),
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => ({ message: 'Folder Updated successfully.', data: await updateFolders(ctx, data) }),
});

const access = defineRoute({
  path: '/v2/organizations/folders/access/update',
  tag: 'Folders',
  doc: {
    summary: 'Set the access type of folders',
    description: 'Sets `accessType` (default `public`) on each folder, or with `inheritFromParent: true` clears it so the folder ' +
      'inherits its parent\'s (at the root, the organization default). Subfolders and documents without a type of their own follow. ' +
      'A folder that does not exist fails its item ("Folder does not exist."); `data` is keyed by folderId, each id once. ' +
      'An organization that does not exist is NOT_FOUND.',
    example: { organizationId: 'yourOrganizationId', folderIds: ['yourFolderId1', 'yourFolderId2'], accessType: 'organizationPrivate' },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.object({
    organizationId: id(),
    folderIds: ids(),
    accessType: accessType().optional(),
    inheritFromParent: z.boolean().optional(),
  }),
  response: outcomesById(bareOutcome.extend(accessEcho)),
  errors: ['NOT_FOUND'],
  async handler(data, ctx) {
    const results = await setFolderAccess(ctx, data.organizationId, data.folderIds, data.inheritFromParent ? null : (data.accessType ?? 'public'));
    // The hosted page shows one message per example: the inherit example's differs.
    return { message: data.inheritFromParent ? 'Folder access type updated.' : 'Updated access for folders successfully.', data: results };
  },
});

const remove = defineRoute({
  path: '/v2/organizations/folders/delete',
  tag: 'Folders',
  doc: {
    summary: 'Delete a folder with its subfolders and documents',
    description: 'Answers at once ("Folder deletion initiated successfully."): the folder, every subfolder and every document under ' +
      'them disappear from all reads from then on, and their grants go too; the documents\' deletions are appended in the background. ' +
      'A folder that does not exist is NOT_FOUND with `code: "not-found"` ("Folder not found."); so is an organization that does not exist.',
    example: { organizationId: 'org10', folderId: 'folderId2' },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.object({ organizationId: id(), folderId: id() }),
  response: z.null(),
  errors: ['NOT_FOUND'],
  async handler(data, ctx) {
    await deleteFolder(ctx, data.organizationId, data.folderId);
    return { message: 'Folder deletion initiated successfully.', data: null };
  },
});

const get = defineRoute({
  path: '/v2/organizations/folders/get',
  tag: 'Folders',
  doc: {
    summary: 'Get a folder with its subfolders, or list all folders',
    description: 'With `folderId`: one row, that folder, its subfolders nested in `subFolders` down to `maxDepth` levels ' +
      `(default 1: its immediate subfolders); not paged, at most ${MAX_SUBTREE_FOLDERS} folders (the folder included): a larger subtree is INVALID_ARGUMENT naming \`maxDepth\`. ` +
      'Without: every folder of the organization in creation order, flat, ' +
      `paged with ${PAGE_SIZE_DOC} and \`pageToken\` (\`result.pageToken\` while more follow). ` +
      'An organization or folder that does not exist is NOT_FOUND.',
    example: { organizationId: 'yourOrganizationId', folderId: 'yourFolderId', maxDepth: 3 },
  },
  mutates: false,
  auth: 'apiKey',
  schema: z.object({
    organizationId: id(),
    folderId: id().optional(),
    // The hosted default: "If not provided, only immediate subfolders are retrieved."
    maxDepth: z.number().int().min(0).max(1000).optional(),
    pageSize: pageSize(),
    pageToken: pageToken(),
  }),
  response: z.array(folderRowSchema),
  paged: 'pageToken',
  errors: ['NOT_FOUND'],
  async handler(data, ctx) {
    const found = await getFolders(ctx, data);
    if ('subtree' in found) return { message: 'Folder(s) retrieved successfully.', data: found.subtree };
    return { message: 'Folders retrieved successfully.', data: found.page.rows, pageToken: found.page.pageToken };
  },
});

export function folderRoutes(): AnyRoute[] {
  return [add, update, remove, access, get];
}
