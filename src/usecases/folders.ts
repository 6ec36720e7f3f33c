/**
 * Folders (spec: folders/add|update|delete, folders/access/update; companion folders/get).
 * Every folders batch is ONE command on the organization's stream (commands/folder-tree.ts):
 * the tree is the consistency boundary, and one command per batch means one append instead
 * of a retry storm of 1000 commands on the same stream. The command plans per-folder
 * outcomes beside its events, and the answer is keyed by folder id.
 */
import { organizationDecider, organizationNotFound, organizationStream, type OrganizationCommand } from '../../commands/organization.js';
import type { AccessType } from '../../commands/folder-tree.js';
import { folderSubtree, foldersPage } from '../../queries/folders.js';
import { requireOrganization } from '../../queries/organizations.js';
import { DEFAULT_PAGE_SIZE } from '../../queries/paging.js';
import type { Unstamped } from '../runtime/decider.js';
import type { TenantContext } from './context.js';
import { keyed, type Outcome } from './items.js';

/** Runs one folders batch command; its per-item outcomes, keyed by folder id (each id once). */
async function batch(ctx: TenantContext, command: Unstamped<OrganizationCommand>, folderIds: readonly string[]) {
  const { outcomes } = await ctx.executePlan(organizationDecider, organizationStream(ctx.apiKey, command.data.organizationId), command);
  return keyed(folderIds.map((f) => [f, outcomes.get(f) ?? ({ success: false, message: 'Folder was not processed.' } as Outcome)]));
}

type AddFolders = Extract<OrganizationCommand, { type: 'AddFolders' }>['data'];
type UpdateFolders = Extract<OrganizationCommand, { type: 'UpdateFolders' }>['data'];

/** Adds folders (creating the organization first with `createOrganization`), deepest allowed as the operator configured. */
export function addFolders(ctx: TenantContext, input: Omit<AddFolders, 'maxDepth'>) {
  const data = { ...input, maxDepth: ctx.services.config.folderMaxDepth };
  return batch(ctx, { type: 'AddFolders', data }, input.folders.map((f) => f.folderId));
}

/** Renames or moves folders (a move takes the whole subtree). */
export function updateFolders(ctx: TenantContext, input: Omit<UpdateFolders, 'maxDepth'>) {
  const data = { ...input, maxDepth: ctx.services.config.folderMaxDepth };
  return batch(ctx, { type: 'UpdateFolders', data }, input.folders.map((f) => f.folderId));
}

/** Sets each folder's access type; `null` clears it so the folder inherits its parent's. */
export function setFolderAccess(ctx: TenantContext, organizationId: string, folderIds: string[], accessType: AccessType | null) {
  return batch(ctx, { type: 'SetFolderAccess', data: { organizationId, folderIds, accessType } }, folderIds);
}

/**
 * Deletes a folder with its subtree: one event; the projections hide the subtree at once and
 * queue the per-document deletions for the cascade worker (projections/cascade-work.ts).
 */
export async function deleteFolder(ctx: TenantContext, organizationId: string, folderId: string) {
  const stream = organizationStream(ctx.apiKey, organizationId);
  const { state } = await ctx.services.commands.load(organizationDecider, stream);
  if (state.status !== 'active') throw organizationNotFound();
  await ctx.execute(organizationDecider, stream, { type: 'DeleteFolder', data: { organizationId, folderId } });
}

/** With `folderId`: that folder with its subfolders down to `maxDepth` (default 1); without: a page of every folder. */
export async function getFolders(
  ctx: TenantContext,
  query: { organizationId: string; folderId?: string | undefined; maxDepth?: number | undefined; pageSize?: number | undefined; pageToken?: string | undefined },
) {
  await requireOrganization(ctx.services.read, ctx.apiKey, query.organizationId);
  if (query.folderId !== undefined) {
    return { subtree: await folderSubtree(ctx.services.read, ctx.apiKey, query.organizationId, query.folderId, query.maxDepth ?? 1) };
  }
  return { page: await foldersPage(ctx.services.read, ctx.apiKey, query.organizationId, query.pageSize ?? DEFAULT_PAGE_SIZE, query.pageToken) };
}
