/**
 * Users (spec: users/add, users/delete; companions users/update, users/get), the use cases
 * behind src/http/routes/users.ts. A user's profile is per API key (commands/user.ts);
 * access is a grant at the requested scope in the user's grants stream for the
 * organization (commands/grant.ts). Each user is its own pair of streams, so items run in
 * parallel.
 *
 * The scope of every call is the document when `documentId` is given, else the folder when
 * `folderId` is, else the organization (spec rules 1-3).
 */
import { documentDecider, documentStream } from '../../commands/document.js';
import { getFolder, type Tree } from '../../commands/folder-tree.js';
import { grantsDecider, grantsStream, isLive, resourceKey, type AccessRole, type Resource } from '../../commands/grant.js';
import { groupDecider, groupStream } from '../../commands/group.js';
import { organizationDecider, organizationStream } from '../../commands/organization.js';
import { userDecider, userStream } from '../../commands/user.js';
import { GROUP_MEMBERS, type MemberDoc } from '../../projections/groups.js';
import { requireOrganization } from '../../queries/organizations.js';
import { DEFAULT_PAGE_SIZE } from '../../queries/paging.js';
import { documentUsersPage, usersPage } from '../../queries/users.js';
import { invalidArgument, notFound } from '../shared/errors.js';
import { eachItem, firstById, item, keyed, unique, type Outcome } from './items.js';
import type { TenantContext, TenantReadContext } from './context.js';
import { organizationTree } from './organization-tree.js';
import { openProfiles, preparePersonalKeys, sealedProfile } from './personal.js';

/** Where a users call acts: an organization, and in it a document or a folder. */
interface UserScope {
  organizationId: string;
  documentId?: string | undefined;
  folderId?: string | undefined;
}

/** A user as users/add and update take it. */
interface UserInput {
  userId: string;
  name?: string | undefined;
  email?: string | undefined;
  initial?: string | undefined;
  accessRole?: AccessRole | undefined;
}

/** The scope's resource: the document, else the folder, else the organization (spec rules 1-3). */
function resourceOf(d: UserScope): Resource {
  if (d.documentId !== undefined) return { resourceType: 'document', resourceId: d.documentId };
  if (d.folderId !== undefined) return { resourceType: 'folder', resourceId: d.folderId };
  return { resourceType: 'organization', resourceId: d.organizationId };
}

/** The scope's folder or document must exist (the organization is checked by organizationTree). */
async function requireScope(ctx: TenantContext, d: UserScope) {
  const tree = await organizationTree(ctx.services, ctx.apiKey, d.organizationId);
  if (d.documentId !== undefined) {
    const { state } = await ctx.services.commands.load(documentDecider, documentStream(ctx.apiKey, d.organizationId, d.documentId));
    if (state.status !== 'active' || (state.folderId !== null && !getFolder(tree, state.folderId))) throw notFound('Document does not exist.');
  } else if (d.folderId !== undefined && !getFolder(tree, d.folderId)) throw notFound('Folder does not exist.');
}

async function grantsOf(ctx: TenantContext, organizationId: string, userId: string) {
  return (await ctx.services.commands.load(grantsDecider, grantsStream(ctx.apiKey, organizationId, userId))).state;
}

const userDoesNotExist = { success: false, message: 'User does not exist.' };

/**
 * Spec rule 5: a missing organization is created; `createFolder` creates a missing folder
 * (at the root), `createDocument` a missing document (in `folderId` when given). A folderId
 * that does not exist (and was not created) fails the call, as it does without documentId:
 * createDocument never puts the document elsewhere (at the root).
 */
async function createScope(
  ctx: TenantReadContext,
  scope: UserScope & { createDocument?: boolean | undefined; createFolder?: boolean | undefined },
): Promise<void> {
  const { organizationId } = scope;
  const orgStream = organizationStream(ctx.apiKey, organizationId);
  await ctx.execute(organizationDecider, orgStream, { type: 'CreateOrganization', data: { organizationId, ifMissing: true } });
  let tree: Tree = await organizationTree(ctx.services, ctx.apiKey, organizationId);
  if (scope.folderId !== undefined && !getFolder(tree, scope.folderId) && scope.createFolder) {
    await ctx.execute(organizationDecider, orgStream, {
      type: 'AddFolders',
      data: { organizationId, folders: [{ folderId: scope.folderId }], maxDepth: ctx.services.config.folderMaxDepth },
    });
    tree = await organizationTree(ctx.services, ctx.apiKey, organizationId);
  }
  if (scope.folderId !== undefined && !getFolder(tree, scope.folderId)) throw notFound('Folder does not exist.');
  if (scope.documentId === undefined || !scope.createDocument) return;
  const stream = documentStream(ctx.apiKey, organizationId, scope.documentId);
  const { state } = await ctx.services.commands.load(documentDecider, stream);
  if (state.status === 'active') return;
  await ctx.execute(documentDecider, stream, {
    type: 'AddDocument', data: { organizationId, documentId: scope.documentId, folderId: scope.folderId ?? null },
  });
}

/** users/add: each user's profile saved and a grant on the scope (`accessRole`, default editor). */
export async function addUsers(
  ctx: TenantReadContext,
  input: UserScope & { createOrganization?: boolean | undefined; createDocument?: boolean | undefined; createFolder?: boolean | undefined; users: UserInput[] },
): Promise<Record<string, Outcome>> {
  const { organizationId } = input;
  await createScope(ctx, input);
  await requireScope(ctx, input);
  const resource = resourceOf(input);
  await preparePersonalKeys(ctx, input.users);
  return eachItem(input.users, (u) => u.userId, async (u) => {
    await ctx.execute(userDecider, userStream(ctx.apiKey, u.userId), {
      type: 'SaveUser', data: { userId: u.userId, ...(await sealedProfile(ctx, u.userId, u)) },
    });
    await ctx.execute(grantsDecider, grantsStream(ctx.apiKey, organizationId, u.userId), {
      type: 'Grant',
      data: { organizationId, userId: u.userId, grants: [{ ...resource, accessRole: u.accessRole ?? 'editor' }] },
    });
  }, 'User added.');
}

/** users/update: the profile fields given and, with `accessRole`, the role of the user's grant on the scope. */
export async function updateUsers(ctx: TenantContext, input: UserScope & { users: UserInput[] }): Promise<Record<string, Outcome>> {
  const { organizationId } = input;
  await requireScope(ctx, input);
  const resource = resourceOf(input);
  await preparePersonalKeys(ctx, input.users);
  const results = await Promise.all(firstById(input.users, (u) => u.userId).map(async (u) => {
    const grant = (await grantsOf(ctx, organizationId, u.userId)).grants[resourceKey(resource)];
    if (!grant || !isLive(grant, ctx.now)) return [u.userId, { ...userDoesNotExist, id: u.userId }] as const;
    return [u.userId, await item(
      async () => {
        await ctx.execute(userDecider, userStream(ctx.apiKey, u.userId), {
          type: 'UpdateUser', data: { userId: u.userId, ...(await sealedProfile(ctx, u.userId, u)) },
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
  return keyed(results);
}

/**
 * Takes one user out of the scope: the grant there, or (the organization alone, semantics
 * §5) every grant inside the organization and the user's membership of its groups.
 */
async function removeUser(ctx: TenantReadContext, organizationId: string, resource: Resource, userId: string): Promise<Outcome> {
  const wholeOrganization = resource.resourceType === 'organization';
  const grants = (await grantsOf(ctx, organizationId, userId)).grants;
  // semantics §5: without a scope the user is in the organization while they hold a
  // grant in it or belong to one of its groups; all of that goes.
  const groups = wholeOrganization ? await ctx.services.read.find<MemberDoc>(GROUP_MEMBERS, { apiKey: ctx.apiKey, organizationId, userId }) : [];
  const has = wholeOrganization ? Object.keys(grants).length > 0 || groups.length > 0 : resourceKey(resource) in grants;
  if (!has) return userDoesNotExist;
  return item(
    async () => {
      const stream = grantsStream(ctx.apiKey, organizationId, userId);
      if (!wholeOrganization) {
        await ctx.execute(grantsDecider, stream, { type: 'Revoke', data: { organizationId, userId, resources: [resource] } });
        return;
      }
      await ctx.execute(grantsDecider, stream, { type: 'RevokeAll', data: { organizationId, userId } });
      await Promise.all(groups.map((g) =>
        ctx.execute(groupDecider, groupStream(ctx.apiKey, organizationId, g.groupId), {
          type: 'RemoveMembers', data: { organizationId, groupId: g.groupId, userIds: [userId] },
        }),
      ));
    },
    () => ({ success: true, message: 'User removed.' }),
  );
}

/** users/delete: each user out of the scope; one with nothing to remove fails its item. */
export async function removeUsers(ctx: TenantReadContext, input: UserScope & { userIds: string[] }): Promise<Record<string, Outcome>> {
  await requireScope(ctx, input);
  const resource = resourceOf(input);
  const results = await Promise.all(unique(input.userIds).map(async (userId) =>
    [userId, await removeUser(ctx, input.organizationId, resource, userId)] as const,
  ));
  return keyed(results);
}

/** What users/get takes. */
interface UsersListInput extends UserScope {
  userIds?: string[] | undefined;
  organizationUserGroupIds?: string[] | undefined;
  allDocuments?: boolean | undefined;
  groupByDocumentId?: boolean | undefined;
  pageSize?: number | undefined;
  pageToken?: string | undefined;
}

/**
 * users/get: a page of the users holding a live grant on the scope, or with `allDocuments`
 * the users of every document of the organization.
 */
export async function listUsers(ctx: TenantReadContext, input: UsersListInput) {
  const { read } = ctx.services;
  await requireOrganization(read, ctx.apiKey, input.organizationId);
  const paging = { pageSize: input.pageSize ?? DEFAULT_PAGE_SIZE, pageToken: input.pageToken };
  if (input.allDocuments) {
    // The hosted API: every document's users ("You need not pass documentId"); a scope
    // or a user filter beside it would be silently ignored there, so it is refused here.
    for (const f of ['documentId', 'folderId', 'userIds', 'organizationUserGroupIds'] as const) {
      if (input[f] !== undefined) throw invalidArgument(`data.${f} cannot be combined with data.allDocuments.`);
    }
    const page = await documentUsersPage(read, ctx.apiKey, ctx.now, { organizationId: input.organizationId, groupByDocumentId: input.groupByDocumentId === true, ...paging });
    const rows = Array.isArray(page.rows)
      ? (await openProfiles(ctx, page.rows)).map(givenProfile)
      // fromEntries: a document id such as "__proto__" stays an own key.
      : Object.fromEntries(await Promise.all(Object.entries(page.rows).map(async ([documentId, users]) => [documentId, (await openProfiles(ctx, users)).map(givenProfile)] as const)));
    return { rows, pageToken: page.pageToken };
  }
  await requireScope(ctx, input);
  const page = await usersPage(read, ctx.apiKey, ctx.now, {
    organizationId: input.organizationId,
    ...resourceOf(input),
    userIds: input.userIds,
    groupIds: input.organizationUserGroupIds,
    ...paging,
  });
  return { rows: (await openProfiles(ctx, page.rows)).map(givenProfile), pageToken: page.pageToken };
}

/**
 * A users/get row with only the profile fields someone gave. The read model writes `""` for
 * a field never given (a user known only from a permissions/add grant has no profile at
 * all; users/add may omit `email`), and `""` is neither a name nor an e-mail address: the
 * hosted OpenAPI document's User has `email` in e-mail format. Absent says "unknown".
 */
function givenProfile<R extends { userId: string; name: string; email: string; initial: string }>(row: R) {
  const { userId, name, email, initial, ...rest } = row;
  return {
    userId,
    ...(name !== '' ? { name } : {}),
    ...(email !== '' ? { email } : {}),
    ...(initial !== '' ? { initial } : {}),
    ...rest,
  };
}
