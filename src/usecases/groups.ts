/**
 * Organization user groups (spec: usergroups/add, usergroups/users/delete; companion
 * usergroups/users/add). Membership changes of one group are one command on its stream,
 * whose plan answers per user.
 */
import { grantsDecider, isLive, resourceKey, grantsStream } from '../../commands/grant.js';
import { groupDecider, MAX_GROUPS_PER_USER, groupStream, type GroupCommand } from '../../commands/group.js';
import { organizationDecider, organizationStream } from '../../commands/organization.js';
import { GROUP_MEMBERS } from '../../projections/groups.js';
import { GROUPS_MAX_PAGE_SIZE, groupsPage } from '../../queries/groups.js';
import { requireOrganization } from '../../queries/organizations.js';
import type { Unstamped } from '../runtime/decider.js';
import type { TenantContext, TenantReadContext } from './context.js';
import { eachItem, keyed, unique } from './items.js';
import { organizationTree } from './organization-tree.js';

/**
 * Runs a membership command; `{ [userId]: { success, organizationUserGroupId, message } }` for
 * `userIds`, or, when null (deleteAll), for every user it removed.
 */
async function members(ctx: TenantContext, command: Unstamped<GroupCommand>, userIds: readonly string[] | null) {
  const { groupId, organizationId } = command.data;
  const r = await ctx.executePlan(groupDecider, groupStream(ctx.apiKey, organizationId, groupId), command);
  const reported = userIds ?? r.events.map((e) => (e.data as { userId: string }).userId);
  return keyed(reported.map((u) => {
    const o = r.outcomes.get(u) ?? { success: false, message: 'User was not processed.' };
    return [u, { success: o.success, organizationUserGroupId: groupId, message: o.message }];
  }));
}

/** Adds groups to an organization (created first with `createOrganization`); each group its own item. */
export async function addGroups(
  ctx: TenantContext,
  input: { organizationId: string; createOrganization?: boolean | undefined; organizationUserGroups: ReadonlyArray<{ groupId: string; groupName?: string | undefined }> },
) {
  const { organizationId } = input;
  if (input.createOrganization) {
    await ctx.execute(organizationDecider, organizationStream(ctx.apiKey, organizationId), {
      type: 'CreateOrganization', data: { organizationId, ifMissing: true },
    });
  }
  await organizationTree(ctx.services, ctx.apiKey, organizationId);
  return eachItem(input.organizationUserGroups, (g) => g.groupId, (g) =>
    ctx.execute(groupDecider, groupStream(ctx.apiKey, organizationId, g.groupId), {
      // Without a name a group is named after its id, as organizations and documents are (the
      // hosted API and its SDKs take `groupName` as optional).
      type: 'AddGroup', data: { organizationId, groupId: g.groupId, groupName: g.groupName ?? g.groupId },
    }), 'Organization user group added.');
}

/**
 * Of `userIds`, those who may join a group of `organizationId` (semantics §5: organization
 * members, a live organization grant), and those of them already in MAX_GROUPS_PER_USER
 * groups (permission resolution looks at that many per user, so joins beyond are refused;
 * counted on the read model, as agent groups per key are).
 */
async function eligibility(ctx: TenantContext, organizationId: string, userIds: readonly string[]) {
  const orgKey = resourceKey({ resourceType: 'organization', resourceId: organizationId });
  const allowed = (await Promise.all(userIds.map(async (u) => {
    const { state } = await ctx.services.commands.load(grantsDecider, grantsStream(ctx.apiKey, organizationId, u));
    const g = state.grants[orgKey];
    return g && isLive(g, ctx.now) ? [u] : [];
  }))).flat();
  const full = (await Promise.all(allowed.map(async (u) =>
    (await ctx.services.read.count(GROUP_MEMBERS, { apiKey: ctx.apiKey, organizationId, userId: u })) >= MAX_GROUPS_PER_USER ? [u] : []))).flat();
  return { members: allowed, atGroupLimit: full };
}

/** Adds organization members to a group (the decider lets a user already in it through). */
export async function addGroupMembers(ctx: TenantContext, organizationId: string, groupId: string, requested: readonly string[]) {
  await organizationTree(ctx.services, ctx.apiKey, organizationId);
  const userIds = unique(requested);
  const { members: allowed, atGroupLimit } = await eligibility(ctx, organizationId, userIds);
  return members(ctx, { type: 'AddMembers', data: { organizationId, groupId, userIds, members: allowed, atGroupLimit } }, userIds);
}

/** Removes users from a group; `null` empties it. */
export async function removeGroupMembers(ctx: TenantContext, organizationId: string, groupId: string, requested: readonly string[] | null) {
  await organizationTree(ctx.services, ctx.apiKey, organizationId);
  const userIds = requested === null ? null : unique(requested);
  return members(ctx, { type: 'RemoveMembers', data: { organizationId, groupId, userIds } }, userIds);
}

/** usergroups/get: a page of the organization's groups with their member counts; an unknown organization is NOT_FOUND. */
export async function listGroups(ctx: TenantReadContext, input: { organizationId: string; pageSize?: number | undefined; pageToken?: string | undefined }) {
  await requireOrganization(ctx.services.read, ctx.apiKey, input.organizationId);
  return groupsPage(ctx.services.read, ctx.apiKey, { organizationId: input.organizationId, pageSize: input.pageSize ?? GROUPS_MAX_PAGE_SIZE, pageToken: input.pageToken });
}
