/**
 * Organization user groups (spec: usergroups/add, usergroups/users/delete; companion
 * usergroups/users/add). Membership changes of one group are one command on its stream,
 * with per-user outcomes (commands/outcomes.ts).
 *
 * Top-level messages are the hosted API's, character for character (semantics §0;
 * rest-apis/v2/user-groups/*).
 */
import { z } from 'zod';
import { grantsDecider, isLive, resourceKey } from '../../../commands/grant.js';
import { groupDecider, plan } from '../../../commands/group.js';
import { organizationDecider } from '../../../commands/organization.js';
import { capturing } from '../../../commands/outcomes.js';
import type { Services } from '../../services.js';
import { invalidArgument } from '../../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import type { RequestContext } from '../context.js';
import type { GroupCommand } from '../../../commands/group.js';
import { id, ids, items, text } from '../validation.js';
import { organizationTree } from './documents.js';
import { eachItem, keyed, unique } from './domain.js';
import { grantsStream } from '../../../commands/grant.js';
import { groupStream } from '../../../commands/group.js';
import { organizationStream } from '../../../commands/organization.js';

async function members(ctx: RequestContext, command: GroupCommand, userIds: readonly string[] | null) {
  const run = capturing(groupDecider, plan);
  const r = await ctx.execute(run.decider, groupStream(ctx.apiKey, command.data.organizationId, command.data.groupId), command);
  const outcomes = run.outcomes();
  const groupId = command.data.groupId;
  // deleteAll reports every user it removed.
  const reported = userIds ?? r.events.map((e) => (e.data as { userId: string }).userId);
  return keyed(reported.map((u) => {
    const o = outcomes.get(u) ?? { success: false, message: 'User was not processed.' };
    return [u, { success: o.success, organizationUserGroupId: groupId, message: o.message }];
  }));
}

export function groupRoutes(services: Services): AnyRoute[] {
  const add = defineRoute({
    path: '/v2/organizations/usergroups/add',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id(),
      createOrganization: z.boolean().optional(),
      organizationUserGroups: items(z.object({ groupId: id(), groupName: text(256) })),
    }),
    async handler(data, ctx) {
      const { organizationId } = data;
      if (data.createOrganization) {
        await ctx.execute(organizationDecider, organizationStream(ctx.apiKey, organizationId), {
          type: 'CreateOrganization', data: { organizationId, ifMissing: true }, metadata: { now: ctx.now },
        });
      }
      await organizationTree(services, ctx.apiKey, organizationId);
      const results = await eachItem(data.organizationUserGroups, (g) => g.groupId, (g) =>
        ctx.execute(groupDecider, groupStream(ctx.apiKey, organizationId, g.groupId), {
          type: 'AddGroup', data: { organizationId, groupId: g.groupId, groupName: g.groupName }, metadata: { now: ctx.now },
        }), 'Organization user group added.');
      return { message: 'Organization User Groups added successfully.', data: results };
    },
  });

  const addUsers = defineRoute({
    path: '/v2/organizations/usergroups/users/add',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationId: id(), organizationUserGroupId: id(), userIds: ids() }),
    async handler(data, ctx) {
      const { organizationId } = data;
      await organizationTree(services, ctx.apiKey, organizationId);
      const userIds = unique(data.userIds);
      // semantics §5: only organization members (a live organization grant) can join.
      const orgKey = resourceKey({ resourceType: 'organization', resourceId: organizationId });
      const allowed = await Promise.all(userIds.map(async (u) => {
        const { state } = await services.commands.load(grantsDecider, grantsStream(ctx.apiKey, organizationId, u));
        const g = state.grants[orgKey];
        return g && isLive(g, ctx.now) ? [u] : [];
      }));
      const results = await members(ctx, {
        type: 'AddMembers',
        data: { organizationId, groupId: data.organizationUserGroupId, userIds, members: allowed.flat() },
        metadata: { now: ctx.now },
      }, userIds);
      return { message: 'Added organization users to group successfully.', data: results };
    },
  });

  const removeUsers = defineRoute({
    path: '/v2/organizations/usergroups/users/delete',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationId: id(), organizationUserGroupId: id(), userIds: ids().optional(), deleteAll: z.boolean().optional() }),
    async handler(data, ctx) {
      const { organizationId } = data;
      if (!data.deleteAll && !data.userIds) throw invalidArgument('data.userIds is required unless data.deleteAll is true');
      await organizationTree(services, ctx.apiKey, organizationId);
      const userIds = data.deleteAll ? null : unique(data.userIds!);
      const results = await members(ctx, {
        type: 'RemoveMembers',
        data: { organizationId, groupId: data.organizationUserGroupId, userIds },
        metadata: { now: ctx.now },
      }, userIds);
      return { message: 'Deleted users from group successfully.', data: results };
    },
  });

  return [add, addUsers, removeUsers];
}
