/**
 * Users (spec: users/add, users/delete; companions users/update, users/get). A user's
 * profile is per API key (commands/user.ts); access is a grant at the requested scope in
 * the user's grants stream for the organization (commands/grant.ts). Each user is its own
 * pair of streams, so items run in parallel.
 */
import { z } from 'zod';
import { documentDecider, documentStream } from '../../../commands/document.js';
import { getFolder } from '../../../commands/folder-tree.js';
import { ACCESS_ROLES, grantsDecider, isLive, resourceKey, grantsStream, type Resource } from '../../../commands/grant.js';
import { groupDecider, groupStream } from '../../../commands/group.js';
import { organizationDecider, organizationStream } from '../../../commands/organization.js';
import { userDecider, userStream } from '../../../commands/user.js';
import { GROUP_MEMBERS, type MemberDoc } from '../../../projections/groups.js';
import { DEFAULT_PAGE_SIZE } from '../../../queries/paging.js';
import { requireOrganization } from '../../../queries/organizations.js';
import { documentUsersPage, usersPage } from '../../../queries/users.js';
import { invalidArgument, notFound } from '../../shared/errors.js';
import type { Services } from '../../composition/services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import type { RequestContext } from '../context.js';
import { email, id, ids, items, text } from '../validation.js';
import { organizationTree } from '../../usecases/organization-tree.js';
import {
  bareOutcome,
  eachItem,
  firstById,
  idOutcome,
  item,
  keyed,
  outcomesById,
  pageAnswer,
  PAGE_SIZE_DOC,
  pageSize,
  pageToken,
  unique,
  userRowSchema,
} from './domain.js';

const role = () => z.enum(ACCESS_ROLES);
const userSchema = z.object({
  userId: id(),
  name: text(256).optional(),
  email: email().optional(),
  initial: text(8).optional(),
  accessRole: role().optional(),
});
const scope = { organizationId: id(), documentId: id().optional(), folderId: id().optional() };

/** The scope's resource: the document, else the folder, else the organization (spec rules 1-3). */
function resourceOf(d: { organizationId: string; documentId?: string; folderId?: string }): Resource {
  if (d.documentId !== undefined) return { resourceType: 'document', resourceId: d.documentId };
  if (d.folderId !== undefined) return { resourceType: 'folder', resourceId: d.folderId };
  return { resourceType: 'organization', resourceId: d.organizationId };
}

/** The scope's folder or document must exist (the organization is checked by organizationTree). */
async function requireScope(ctx: RequestContext, d: { organizationId: string; documentId?: string; folderId?: string }) {
  const tree = await organizationTree(ctx.services, ctx.apiKey, d.organizationId);
  if (d.documentId !== undefined) {
    const { state } = await ctx.services.commands.load(documentDecider, documentStream(ctx.apiKey, d.organizationId, d.documentId));
    if (state.status !== 'active' || (state.folderId !== null && !getFolder(tree, state.folderId))) throw notFound('Document does not exist.');
  } else if (d.folderId !== undefined && !getFolder(tree, d.folderId)) throw notFound('Folder does not exist.');
}

async function grantsOf(ctx: RequestContext, organizationId: string, userId: string) {
  return (await ctx.services.commands.load(grantsDecider, grantsStream(ctx.apiKey, organizationId, userId))).state;
}

const userDoesNotExist = { success: false, message: 'User does not exist.' };

/** allDocuments without groupByDocumentId: one row per (document, user). */
const documentUserRow = userRowSchema.extend({ documentId: z.string().describe('The document the user holds the grant on.') });

/** What `scope` means, for every users route. */
const SCOPE = 'The scope is the document when `documentId` is sent, else the folder when `folderId` is sent, else the organization.';

export function userRoutes(services: Services): AnyRoute[] {
  const add = defineRoute({
    path: '/v2/users/add',
    tag: 'Users',
    doc: {
      summary: 'Add users to an organization, folder or document',
      description: `${SCOPE} Each user's profile (name, email, initial: from the name's first letters when omitted) is saved and the user ` +
        'gets a grant on the scope with `accessRole` (default `editor`); an existing user is updated. A missing organization is created; ' +
        '`createFolder: true` creates a missing folder (at the root), `createDocument: true` a missing document (in `folderId` when sent). ' +
        'A folder or document that does not exist otherwise is NOT_FOUND. Each user is its own item, keyed by userId (each id once).',
      example: {
        organizationId: 'yourOrganizationId',
        documentId: 'yourDocumentId',
        users: [{ userId: 'yourUserId1', name: 'User Name', email: 'user@email.com', accessRole: 'editor' }],
      },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      ...scope,
      createOrganization: z.boolean().optional(),
      createDocument: z.boolean().optional(),
      createFolder: z.boolean().optional(),
      users: items(userSchema),
    }),
    response: outcomesById(idOutcome),
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { organizationId } = data;
      const apiKey = ctx.apiKey;
      // Spec rule 5: a missing organization is created; createFolder / createDocument create those.
      await ctx.execute(organizationDecider, organizationStream(apiKey, organizationId), {
        type: 'CreateOrganization', data: { organizationId, ifMissing: true },
      });
      let tree = await organizationTree(services, apiKey, organizationId);
      if (data.folderId !== undefined && !getFolder(tree, data.folderId) && data.createFolder) {
        await ctx.execute(organizationDecider, organizationStream(apiKey, organizationId), {
          type: 'AddFolders',
          data: { organizationId, folders: [{ folderId: data.folderId }], maxDepth: services.config.folderMaxDepth },
        });
        tree = await organizationTree(services, apiKey, organizationId);
      }
      // A folderId that does not exist (and was not created) fails the call, as it does
      // without documentId: createDocument never puts the document elsewhere (at the root).
      if (data.folderId !== undefined && !getFolder(tree, data.folderId)) throw notFound('Folder does not exist.');
      if (data.documentId !== undefined && data.createDocument) {
        const stream = documentStream(apiKey, organizationId, data.documentId);
        const { state } = await services.commands.load(documentDecider, stream);
        if (state.status !== 'active') {
          const folderId = data.folderId ?? null;
          await ctx.execute(documentDecider, stream, {
            type: 'AddDocument', data: { organizationId, documentId: data.documentId, folderId },
          });
        }
      }
      await requireScope(ctx, data);
      const resource = resourceOf(data);
      const results = await eachItem(data.users, (u) => u.userId, async (u) => {
        await ctx.execute(userDecider, userStream(apiKey, u.userId), {
          type: 'SaveUser', data: { userId: u.userId, name: u.name, email: u.email, initial: u.initial },
        });
        await ctx.execute(grantsDecider, grantsStream(apiKey, organizationId, u.userId), {
          type: 'Grant',
          data: { organizationId, userId: u.userId, grants: [{ ...resource, accessRole: u.accessRole ?? 'editor' }] },
        });
      }, 'User added.');
      // The hosted API's message for users/add and users/update alike.
      return { message: 'User(s) processed successfully.', data: results };
    },
  });

  const update = defineRoute({
    path: '/v2/users/update',
    tag: 'Users',
    doc: {
      summary: 'Update users of an organization, folder or document',
      description: `${SCOPE} Updates each user's profile fields sent and, with \`accessRole\`, the role of their grant on the scope ` +
        '(its expiry kept). A user without a live grant on the scope fails its item ("User does not exist."). Each user is its own item, ' +
        'keyed by userId (each id once). An organization, folder or document that does not exist is NOT_FOUND.',
      example: {
        organizationId: 'yourOrganizationId',
        users: [{ userId: 'yourUserId1', name: 'User Name', email: 'user@email.com', accessRole: 'editor' }],
      },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ ...scope, users: items(userSchema) }),
    response: outcomesById(idOutcome),
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { organizationId } = data;
      await requireScope(ctx, data);
      const resource = resourceOf(data);
      const results = await Promise.all(firstById(data.users, (u) => u.userId).map(async (u) => {
        const grant = (await grantsOf(ctx, organizationId, u.userId)).grants[resourceKey(resource)];
        if (!grant || !isLive(grant, ctx.now)) return [u.userId, { ...userDoesNotExist, id: u.userId }] as const;
        return [u.userId, await item(
          async () => {
            await ctx.execute(userDecider, userStream(ctx.apiKey, u.userId), {
              type: 'UpdateUser', data: { userId: u.userId, name: u.name, email: u.email, initial: u.initial },
            });
            if (u.accessRole !== undefined && u.accessRole !== grant.accessRole) {
              await ctx.execute(grantsDecider, grantsStream(ctx.apiKey, organizationId, u.userId), {
                type: 'Grant',
                data: { organizationId, userId: u.userId, grants: [{ ...resource, accessRole: u.accessRole, expiresAt: grant.expiresAt }] },
              });
            }
          },
          () => ({ success: true, id: u.userId, message: 'User updated.' }),
          { id: u.userId },
        )] as const;
      }));
      return { message: 'User(s) processed successfully.', data: keyed(results) };
    },
  });

  const remove = defineRoute({
    path: '/v2/users/delete',
    tag: 'Users',
    doc: {
      summary: 'Remove users from an organization, folder or document',
      description: `${SCOPE} With a folder or document, the user's grant there goes. With the organization alone, the user leaves it: ` +
        'every grant they hold inside it and their membership of its user groups go. A user with nothing to remove fails its item ' +
        '("User does not exist."). Each user is its own item, keyed by userId (each id once). ' +
        'An organization, folder or document that does not exist is NOT_FOUND.',
      example: { organizationId: 'yourOrganizationId', documentId: 'yourDocumentId', userIds: ['yourUserId1'] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ ...scope, userIds: ids() }),
    response: outcomesById(bareOutcome),
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { organizationId } = data;
      await requireScope(ctx, data);
      const resource = resourceOf(data);
      const wholeOrganization = resource.resourceType === 'organization';
      const results = await Promise.all(unique(data.userIds).map(async (userId) => {
        const grants = (await grantsOf(ctx, organizationId, userId)).grants;
        // semantics §5: without a scope the user is in the organization while they hold a
        // grant in it or belong to one of its groups; all of that goes.
        const groups = wholeOrganization ? await services.read.find<MemberDoc>(GROUP_MEMBERS, { apiKey: ctx.apiKey, organizationId, userId }) : [];
        const has = wholeOrganization ? Object.keys(grants).length > 0 || groups.length > 0 : resourceKey(resource) in grants;
        if (!has) return [userId, userDoesNotExist] as const;
        return [userId, await item(
          async () => {
            const stream = grantsStream(ctx.apiKey, organizationId, userId);
            if (!wholeOrganization) {
              await ctx.execute(grantsDecider, stream, { type: 'Revoke', data: { organizationId, userId, resources: [resource] } });
              return;
            }
            // semantics §5: membership, every grant inside the organization, and its groups.
            await ctx.execute(grantsDecider, stream, { type: 'RevokeAll', data: { organizationId, userId } });
            await Promise.all(groups.map((g) =>
              ctx.execute(groupDecider, groupStream(ctx.apiKey, organizationId, g.groupId), {
                type: 'RemoveMembers', data: { organizationId, groupId: g.groupId, userIds: [userId] },
              }),
            ));
          },
          () => ({ success: true, message: 'User removed.' }),
        )] as const;
      }));
      return { message: 'User(s) deleted successfully.', data: keyed(results) };
    },
  });

  const get = defineRoute({
    path: '/v2/users/get',
    tag: 'Users',
    doc: {
      summary: 'List the users of an organization, folder or document',
      description: `${SCOPE} Rows are the users holding a live grant on the scope itself, in userId order, narrowed to \`userIds\` ` +
        '(at most 30) and/or to members of `organizationUserGroupIds` (at most 30). With `allDocuments: true` (alone: no scope or ' +
        'user filter beside it, INVALID_ARGUMENT otherwise): the users of every document of the organization, one row per ' +
        '(document, user) with its `documentId`, or with `groupByDocumentId: true` an object keyed by documentId whose rows may ' +
        `continue on the next page under the same key. Paged: ${PAGE_SIZE_DOC}; the next token comes as ` +
        '`result.pageToken` and `result.nextPageToken` while more follow. An organization, folder or document that does not exist is NOT_FOUND.',
      example: { organizationId: 'yourOrganizationId', documentId: 'yourDocumentId', userIds: ['yourUserId1', 'yourUserId2'] },
    },
    mutates: false,
    auth: 'apiKey',
    schema: z.object({
      ...scope,
      userIds: ids(30).optional(),
      organizationUserGroupIds: ids(30).optional(),
      allDocuments: z.boolean().optional(),
      groupByDocumentId: z.boolean().optional(),
      pageSize: pageSize(),
      pageToken: pageToken(),
    }),
    response: z.union([
      z.array(documentUserRow),
      z.array(userRowSchema),
      z.record(z.string(), z.array(userRowSchema)).describe('allDocuments with groupByDocumentId: the rows of each document, keyed by documentId.'),
    ]),
    paged: 'both',
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      await requireOrganization(services.read, ctx.apiKey, data.organizationId);
      if (data.allDocuments) {
        // The hosted API: every document's users ("You need not pass documentId"); a scope
        // or a user filter beside it would be silently ignored there, so it is refused here.
        for (const f of ['documentId', 'folderId', 'userIds', 'organizationUserGroupIds'] as const) {
          if (data[f] !== undefined) throw invalidArgument(`data.${f} cannot be combined with data.allDocuments.`);
        }
        const page = await documentUsersPage(services.read, ctx.apiKey, ctx.now, {
          organizationId: data.organizationId,
          groupByDocumentId: data.groupByDocumentId === true,
          pageSize: data.pageSize ?? DEFAULT_PAGE_SIZE,
          pageToken: data.pageToken,
        });
        return pageAnswer('User(s) retrieved successfully.', page);
      }
      await requireScope(ctx, data);
      const page = await usersPage(services.read, ctx.apiKey, ctx.now, {
        organizationId: data.organizationId,
        ...resourceOf(data),
        userIds: data.userIds,
        groupIds: data.organizationUserGroupIds,
        pageSize: data.pageSize ?? DEFAULT_PAGE_SIZE,
        pageToken: data.pageToken,
      });
      return pageAnswer('User(s) retrieved successfully.', page);
    },
  });

  return [add, update, remove, get];
}
