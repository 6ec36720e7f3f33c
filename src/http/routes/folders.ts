/**
 * Folders (spec: folders/add|update|delete, folders/access/update; companion folders/get).
 * Every folders batch is ONE command on the organization's stream (commands/folder-tree.ts):
 * the tree is the consistency boundary, and one command per batch means one append instead
 * of a retry storm of 1000 commands on the same stream.
 *
 * Top-level messages are the hosted API's, character for character (semantics §0;
 * rest-apis/v2/folders/*), including where they differ between two examples of one page.
 */
import { z } from 'zod';
import { organizationDecider, plan, organizationNotFound } from '../../../commands/organization.js';
import { capturing } from '../../../commands/outcomes.js';
import { folderSubtree, foldersPage } from '../../../queries/folders.js';
import { requireOrganization } from '../../../queries/organizations.js';
import { DEFAULT_PAGE_SIZE } from '../../../queries/paging.js';
import type { Services } from '../../services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import type { RequestContext } from '../context.js';
import { id, ids, items, text } from '../validation.js';
import { accessType, keyed, pageSize, pageToken, type Outcome } from './domain.js';
import { organizationStream } from '../../../commands/organization.js';
import type { OrganizationCommand } from '../../../commands/organization.js';

/** Runs one folders batch command and returns its per-item outcomes, keyed by folder id. */
async function batch(ctx: RequestContext, command: OrganizationCommand, folderIds: readonly string[]) {
  const run = capturing(organizationDecider, plan);
  await ctx.execute(run.decider, organizationStream(ctx.apiKey, command.data.organizationId), command);
  const outcomes = run.outcomes();
  return keyed(folderIds.map((f) => [f, outcomes.get(f) ?? ({ success: false, message: 'Folder was not processed.' } as Outcome)]));
}

const parent = () => id().nullable().optional();

export function folderRoutes(services: Services): AnyRoute[] {
  const add = defineRoute({
    path: '/v2/organizations/folders/add',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id(),
      createOrganization: z.boolean().optional(),
      folders: items(z.object({ folderId: id(), folderName: text(1024).optional(), parentFolderId: parent(), accessType: accessType().optional() })),
    }),
    async handler(data, ctx) {
      const results = await batch(ctx, {
        type: 'AddFolders',
        data: {
          organizationId: data.organizationId,
          createOrganization: data.createOrganization,
          folders: data.folders,
          maxDepth: services.config.folderMaxDepth,
        },
        metadata: { now: ctx.now },
      }, data.folders.map((f) => f.folderId));
      return { message: 'Folder created successfully.', data: results };
    },
  });

  const update = defineRoute({
    path: '/v2/organizations/folders/update',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id(),
      folders: items(z.object({ folderId: id(), folderName: text(1024).optional(), parentFolderId: parent() })),
    }),
    async handler(data, ctx) {
      const results = await batch(ctx, {
        type: 'UpdateFolders',
        data: { organizationId: data.organizationId, folders: data.folders, maxDepth: services.config.folderMaxDepth },
        metadata: { now: ctx.now },
      }, data.folders.map((f) => f.folderId));
      return { message: 'Folder Updated successfully.', data: results };
    },
  });

  const access = defineRoute({
    path: '/v2/organizations/folders/access/update',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id(),
      folderIds: ids(),
      accessType: accessType().optional(),
      inheritFromParent: z.boolean().optional(),
    }),
    async handler(data, ctx) {
      const results = await batch(ctx, {
        type: 'SetFolderAccess',
        data: {
          organizationId: data.organizationId,
          folderIds: data.folderIds,
          accessType: data.inheritFromParent ? null : (data.accessType ?? 'public'),
        },
        metadata: { now: ctx.now },
      }, data.folderIds);
      // The hosted page shows one message per example: the inherit example's differs.
      return { message: data.inheritFromParent ? 'Folder access type updated.' : 'Updated access for folders successfully.', data: results };
    },
  });

  const remove = defineRoute({
    path: '/v2/organizations/folders/delete',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationId: id(), folderId: id() }),
    async handler(data, ctx) {
      const { organizationId, folderId } = data;
      const stream = organizationStream(ctx.apiKey, organizationId);
      const { state } = await services.commands.load(organizationDecider, stream);
      if (state.status !== 'active') throw organizationNotFound();
      // One event; the projections hide the subtree at once and queue the per-document
      // deletions for the cascade worker (projections/cascade-work.ts).
      await ctx.execute(organizationDecider, stream, { type: 'DeleteFolder', data: { organizationId, folderId }, metadata: { now: ctx.now } });
      return { message: 'Folder deletion initiated successfully.', data: null };
    },
  });

  const get = defineRoute({
    path: '/v2/organizations/folders/get',
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
    async handler(data, ctx) {
      await requireOrganization(services.read, ctx.apiKey, data.organizationId);
      if (data.folderId !== undefined) {
        const rows = await folderSubtree(services.read, ctx.apiKey, data.organizationId, data.folderId, data.maxDepth ?? 1);
        return { message: 'Folder(s) retrieved successfully.', data: rows };
      }
      const page = await foldersPage(services.read, ctx.apiKey, data.organizationId, data.pageSize ?? DEFAULT_PAGE_SIZE, data.pageToken);
      return { message: 'Folders retrieved successfully.', data: page.rows, pageToken: page.pageToken };
    },
  });

  return [add, update, remove, access, get];
}
